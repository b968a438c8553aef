"""v1model hash/checksum algorithms, checked against published vectors and naive re-implementations."""

from __future__ import annotations

import random

import pytest

from softswitch.algorithms import (
    BMV2_REJECTS,
    CRC16_DEFAULT,
    CRC32_DEFAULT,
    CrcConfig,
    CustomCrc,
    checksum16,
    compute_hash,
    crc16,
    crc16_custom,
    crc32,
    crc32_custom,
    csum16,
    hash_result,
    identity,
    pack_fields,
    random_in_range,
    verify_checksum16,
    xor16,
)

CHECK = b"123456789"


def naive_bmv2_crc(cfg: CrcConfig, data: bytes) -> int:
    """bmv2's crc_custom done bit by bit: MSB-first register, optional reflection of bytes and result."""
    w = cfg.width
    mask = (1 << w) - 1
    r = cfg.initial_remainder
    for b in data:
        if cfg.data_reflected:
            b = int(f"{b:08b}"[::-1], 2)
        r ^= b << (w - 8)
        for _ in range(8):
            r = ((r << 1) ^ cfg.polynomial) & mask if r >> (w - 1) & 1 else (r << 1) & mask
    if cfg.remainder_reflected:
        r = int(f"{r:0{w}b}"[::-1], 2)
    return r ^ cfg.final_xor_value


def naive_rfc1071(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = 0
    for i in range(0, len(data), 2):
        s += (data[i] << 8) | data[i + 1]
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def test_crc_check_values():
    assert crc32(CHECK) == 0xCBF43926  # CRC-32 (zlib / Ethernet)
    assert crc16(CHECK) == 0xBB3D  # CRC-16/ARC, the variant bmv2 calls crc16
    assert crc16_custom(CHECK) == 0xBB3D  # bmv2's crc16_custom defaults equal crc16
    assert crc32_custom(CHECK) == 0xCBF43926  # and crc32_custom's equal crc32


@pytest.mark.parametrize(
    "cfg, check",
    [
        (CrcConfig(16, 0x1021, 0xFFFF, 0x0000, False, False), 0x29B1),  # CRC-16/CCITT-FALSE
        (CrcConfig(16, 0x1021, 0x0000, 0x0000, True, True), 0x2189),  # CRC-16/KERMIT
        (CrcConfig(16, 0x8005, 0x0000, 0x0000, False, False), 0xFEE8),  # CRC-16/BUYPASS
        (CrcConfig(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, False, False), 0xFC891918),  # CRC-32/BZIP2
        (CrcConfig(32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, True, True), 0xE3069283),  # CRC-32C
        (CrcConfig(8, 0x07, 0x00, 0x00, False, False), 0xF4),  # CRC-8 (bmv2's crc8_custom default)
    ],
)
def test_custom_crc_catalogue(cfg, check):
    assert CustomCrc(cfg)(CHECK) == check
    assert naive_bmv2_crc(cfg, CHECK) == check


@pytest.mark.parametrize("data_ref, rem_ref", [(True, False), (False, True), (True, True), (False, False)])
def test_custom_crc_matches_bmv2_steps_for_every_reflection_mix(data_ref, rem_ref):
    rng = random.Random(7)
    for cfg in (CrcConfig(16, 0x3D65, 0x1234, 0xFFFF, data_ref, rem_ref),
                CrcConfig(32, 0x814141AB, 0xDEADBEEF, 0x0F0F0F0F, data_ref, rem_ref)):
        crc = CustomCrc(cfg)
        for n in (0, 1, 5, 13, 64):
            data = bytes(rng.randrange(256) for _ in range(n))
            assert crc(data) == naive_bmv2_crc(cfg, data), (cfg, data.hex())


def test_crc_custom_explicit_config_and_defaults():
    assert crc16_custom(CHECK, CRC16_DEFAULT) == 0xBB3D
    assert crc32_custom(CHECK, CRC32_DEFAULT) == 0xCBF43926
    kermit = CrcConfig(16, 0x1021, 0, 0, True, True)
    assert crc16_custom(CHECK, kermit) == 0x2189


def test_pack_fields_is_msb_first_with_padding_at_the_end():
    assert pack_fields([(1, 1)]) == b"\x80"
    assert pack_fields([(0b101, 3), (0xF, 4)]) == bytes([0b10111110])
    assert pack_fields([(0xABC, 12)]) == b"\xab\xc0"
    assert pack_fields([(0x1, 4), (0x23, 8), (0x4, 4)]) == b"\x12\x34"
    assert pack_fields([(0x0800, 16), (0x1FF, 9)]) == b"\x08\x00\xff\x80"
    assert pack_fields([]) == b""
    # Values are cut to their width; negative int<W> values pack as two's complement.
    assert pack_fields([(0x1FF, 8), (-1, 4), (0, 4)]) == b"\xff\xf0"


def test_csum16_and_ipv4_header_checksum():
    # A real IPv4 header (20 bytes) whose checksum field holds 0xB861.
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert csum16(hdr) == 0xB861
    fields = [
        (4, 4), (5, 4), (0, 8), (0x0073, 16), (0, 16), (0b010, 3), (0, 13), (0x40, 8), (0x11, 8),
        (0xC0A80001, 32), (0xC0A800C7, 32),
    ]
    # update_checksum(hdr.ipv4.isValid(), {all fields but hdrChecksum}, hdr.ipv4.hdrChecksum, csum16)
    assert checksum16(fields) == 0xB861
    assert compute_hash("csum16", fields) == 0xB861
    assert verify_checksum16(fields, 0xB861)
    assert not verify_checksum16(fields, 0xB862)


def test_csum16_edge_cases_match_rfc1071():
    assert csum16(b"") == 0xFFFF
    assert csum16(b"\x01") == 0xFEFF  # odd byte is the high byte of a zero-padded word
    assert csum16(b"\xff\xff") == 0x0000
    rng = random.Random(1)
    for n in list(range(0, 40)) + [1500]:
        data = bytes(rng.randrange(256) for _ in range(n))
        assert csum16(data) == naive_rfc1071(data)


def test_checksum_with_payload_starts_on_a_byte_boundary():
    fields = [(0xABC, 12)]  # packs as ab c0
    assert checksum16(fields, payload=b"\x12\x34") == naive_rfc1071(b"\xab\xc0\x12\x34")


def test_xor16():
    assert xor16(b"\x12\x34\x56\x78") == 0x1234 ^ 0x5678
    assert xor16(b"\x12\x34\x56") == 0x1234 ^ 0x5600
    assert xor16(b"") == 0


def test_identity_takes_at_most_eight_bytes():
    assert identity(b"\x01\x02\x03") == 0x010203
    assert identity(bytes(range(1, 11))) == 0x0102030405060708
    assert compute_hash("identity", [(0xA, 4), (0xB, 4)]) == 0xAB


def test_compute_hash_five_tuple_uses_packed_bytes():
    fields = [(0x0A000001, 32), (0x0A000002, 32), (6, 8), (1234, 16), (80, 16)]
    data = bytes.fromhex("0a0000010a00000206") + (1234).to_bytes(2, "big") + (80).to_bytes(2, "big")
    assert compute_hash("crc32", fields) == crc32(data)
    assert compute_hash("crc16", fields) == crc16(data)
    assert compute_hash("crc16_custom", fields) == crc16(data)
    assert compute_hash("crc32_custom", fields) == crc32(data)
    assert compute_hash("xor16", fields) == xor16(data)


def test_hash_result_rule():
    assert hash_result(17, base=10, max_=5) == 12
    assert hash_result(17, base=10, max_=0) == 10  # max == 0 gives base
    assert hash_result(0xFFFF, base=0, max_=1 << 32) == 0xFFFF
    assert hash_result(0x1234, base=0xFF, max_=0x10000, out_width=8) == (0xFF + 0x1234) & 0xFF


def test_random_algorithm_and_range():
    assert "random" in BMV2_REJECTS
    values = {compute_hash("random", [(1, 8)]) for _ in range(20)}
    assert len(values) > 1 and all(0 <= v < 1 << 64 for v in values)
    draws = {random_in_range(3, 5) for _ in range(200)}
    assert draws == {3, 4, 5}
    assert random_in_range(7, 7) == 7


def test_unknown_algorithm():
    with pytest.raises(ValueError, match="unknown hash algorithm 'md5'"):
        compute_hash("md5", [(1, 8)])
