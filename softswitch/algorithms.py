"""Hash and checksum algorithms of v1model, bit-exact with bmv2's simple_switch.

What bmv2 does, read from behavioral-model src/bm_sim/calculations.cpp (BufBuilder / Deparse and
the registered hash functors) and p4c's bmv2 backend (ExternConverter::convertHashAlgorithm):

* Input bytes (``pack_fields``): the fields of the data list are written one after the other,
  most significant bit first, each taking exactly its bit width, starting at bit 0 of byte 0;
  the buffer is then as many bytes as needed and the unused low bits of the LAST byte are zero.
  Padding is therefore at the END, not the front. Fields of an invalid header are skipped
  altogether by bmv2 (the caller must leave them out). ``*_with_payload`` appends the unparsed
  payload after that, starting on the next byte boundary.
* crc16: CRC-16/ARC (poly 0x8005, init 0, reflected in and out, xorout 0): "123456789" -> 0xBB3D.
* crc32: the usual CRC-32 (zlib / Ethernet): "123456789" -> 0xCBF43926.
* crc16_custom / crc32_custom: a configurable CRC whose defaults equal crc16 / crc32 above; the
  control plane may change polynomial, init, final xor and the two reflect flags at run time.
* csum16: the Internet checksum (RFC 1071): ones' complement of the ones' complement sum of the
  big-endian 16-bit words, an odd last byte padded with a zero byte after it.
* xor16: XOR of the big-endian 16-bit words, an odd last byte padded with a zero byte after it.
* identity: the first min(8, len) bytes read as a big-endian integer.
* random: p4c emits the name "random", but bmv2 registers no hash of that name, so simple_switch
  refuses to load such a program. Here it gives a uniformly random 64-bit value per call (the
  enum's plain meaning); ``BMV2_REJECTS`` lists it so the loader can reject it for strict
  bmv2 behaviour.
* v1model hash(): result = base + (H mod max) if max >= 1, else base; then truncated to the
  width of the result field (bmv2 computes in 64 bits and assigns to the destination).
"""

from __future__ import annotations

import random as _random
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "BMV2_REJECTS",
    "HASH_ALGORITHMS",
    "CrcConfig",
    "CustomCrc",
    "checksum16",
    "compute_hash",
    "crc16",
    "crc16_custom",
    "crc32",
    "crc32_custom",
    "csum16",
    "hash_result",
    "identity",
    "pack_fields",
    "random_hash",
    "random_in_range",
    "verify_checksum16",
    "xor16",
]

_M64 = (1 << 64) - 1


def pack_fields(values: Iterable[tuple[int, int]]) -> bytes:
    """Concatenate (value, bitwidth) pairs MSB-first, zero-padding the last byte at its low end.

    Values are taken modulo 2**bitwidth, so negative int<W> values pack as two's complement.
    """
    acc = 0
    nbits = 0
    for value, width in values:
        if width < 0:
            raise ValueError(f"negative bit width {width}")
        acc = (acc << width) | (value & ((1 << width) - 1))
        nbits += width
    pad = -nbits % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big")


def _reflect(value: int, width: int) -> int:
    return int(format(value, f"0{width}b")[::-1], 2) if width else 0


@dataclass(frozen=True)
class CrcConfig:
    """Parameters of a CRC as bmv2's crc*_custom takes them (set_crc16_parameters / set_crc32_parameters)."""

    width: int
    polynomial: int
    initial_remainder: int
    final_xor_value: int
    data_reflected: bool
    remainder_reflected: bool


CRC16_DEFAULT = CrcConfig(16, 0x8005, 0x0000, 0x0000, True, True)
CRC32_DEFAULT = CrcConfig(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)


class CustomCrc:
    """A table-driven CRC following bmv2's crc_custom step for step, for any of its configurations."""

    def __init__(self, config: CrcConfig):
        self.configure(config)

    def configure(self, config: CrcConfig) -> None:
        w = config.width
        if w < 8 or w % 8:
            raise ValueError(f"CRC width must be a multiple of 8, got {w}")
        mask = (1 << w) - 1
        top = 1 << (w - 1)
        self.config = config
        self._mask = mask
        # Both flags set (the defaults) is the common case: run the equivalent LSB-first algorithm
        # with the reflected polynomial, which needs no per-byte reflection.
        self._lsb_first = config.data_reflected and config.remainder_reflected
        table = []
        if self._lsb_first:
            rpoly = _reflect(config.polynomial & mask, w)
            for d in range(256):
                r = d
                for _ in range(8):
                    r = (r >> 1) ^ rpoly if r & 1 else r >> 1
                table.append(r)
            self._init = _reflect(config.initial_remainder & mask, w)
        else:
            for d in range(256):
                r = d << (w - 8)
                for _ in range(8):
                    r = ((r << 1) ^ config.polynomial) & mask if r & top else (r << 1) & mask
                table.append(r)
            self._init = config.initial_remainder & mask
        self._table = tuple(table)
        self._rbyte = tuple(_reflect(b, 8) for b in range(256))

    def __call__(self, data: bytes) -> int:
        t = self._table
        c = self.config
        r = self._init
        if self._lsb_first:
            for b in data:
                r = t[(r ^ b) & 0xFF] ^ (r >> 8)
            return r ^ (c.final_xor_value & self._mask)
        shift = c.width - 8
        mask = self._mask
        rb = self._rbyte if c.data_reflected else None
        for b in data:
            if rb is not None:
                b = rb[b]
            r = t[(b ^ (r >> shift)) & 0xFF] ^ ((r << 8) & mask)
        if c.remainder_reflected:
            r = _reflect(r, c.width)
        return r ^ (c.final_xor_value & mask)


_crc16_fixed = CustomCrc(CRC16_DEFAULT)
# The run-time configurable ones; the switch may call .configure() on them (bmv2 keeps one per
# calculation; a switch that needs that can build its own CustomCrc per calculation).
crc16_custom_default = CustomCrc(CRC16_DEFAULT)
crc32_custom_default = CustomCrc(CRC32_DEFAULT)


def crc16(data: bytes) -> int:
    """bmv2 "crc16": CRC-16/ARC."""
    return _crc16_fixed(data)


def crc32(data: bytes) -> int:
    """bmv2 "crc32": standard CRC-32; zlib's is bit-exact with it and much faster."""
    return zlib.crc32(data) & 0xFFFFFFFF


def crc16_custom(data: bytes, config: CrcConfig | None = None) -> int:
    """bmv2 "crc16_custom"; with no config, the module's configurable instance (default = crc16)."""
    return (CustomCrc(config) if config is not None else crc16_custom_default)(data)


def crc32_custom(data: bytes, config: CrcConfig | None = None) -> int:
    """bmv2 "crc32_custom"; with no config, the module's configurable instance (default = crc32)."""
    if config is None:
        if crc32_custom_default.config == CRC32_DEFAULT:
            return crc32(data)
        return crc32_custom_default(data)
    return CustomCrc(config)(data)


def _words16(data: bytes) -> list[int]:
    if len(data) % 2:
        data = data + b"\x00"
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]


def csum16(data: bytes) -> int:
    """bmv2 "csum16" (and "cksum16"): the Internet checksum of data."""
    # Sum of the big-endian words = 256 * (sum of even bytes) + (sum of odd bytes); an odd last
    # byte lands among the even bytes, i.e. as the high byte of a zero-padded word. Both sums run
    # in C, which matters per packet.
    s = (sum(data[0::2]) << 8) + sum(data[1::2])
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def xor16(data: bytes) -> int:
    """bmv2 "xor16": XOR of the big-endian 16-bit words."""
    r = 0
    for w in _words16(data):
        r ^= w
    return r


def identity(data: bytes) -> int:
    """bmv2 "identity": the first (up to) 8 bytes as a big-endian integer."""
    return int.from_bytes(data[:8], "big")


_rng = _random.Random()


def random_hash(data: bytes) -> int:
    """HashAlgorithm.random: a fresh uniformly random 64-bit value, independent of data."""
    return _rng.getrandbits(64)


def random_in_range(lo: int, hi: int) -> int:
    """v1model random(result, lo, hi): uniform in [lo, hi]; lo > hi is unspecified, here lo."""
    return lo if hi <= lo else _rng.randint(lo, hi)


HASH_ALGORITHMS: dict[str, Callable[[bytes], int]] = {
    "crc32": crc32,
    "crc32_custom": crc32_custom,
    "crc16": crc16,
    "crc16_custom": crc16_custom,
    "random": random_hash,
    "identity": identity,
    "csum16": csum16,
    "xor16": xor16,
}

# Names p4c accepts for v1model that bmv2's simple_switch refuses when loading the program.
BMV2_REJECTS = frozenset({"random"})


def compute_hash(algorithm: str, fields: Sequence[tuple[int, int]], payload: bytes = b"") -> int:
    """Hash of the (value, bitwidth) fields (then payload, if any) with a HashAlgorithm member's name."""
    try:
        fn = HASH_ALGORITHMS[algorithm]
    except KeyError:
        known = ", ".join(HASH_ALGORITHMS)
        raise ValueError(f"unknown hash algorithm {algorithm!r}; known: {known}") from None
    return fn(pack_fields(fields) + payload)


def hash_result(h: int, base: int, max_: int, out_width: int | None = None) -> int:
    """v1model hash() output: base + (h mod max) when max >= 1, base when max == 0.

    bmv2 computes in 64 bits and stores into the result field, so the value is cut to
    out_width bits when given.
    """
    v = (base + (h % max_)) & _M64 if max_ > 0 else base & _M64
    return v & ((1 << out_width) - 1) if out_width is not None else v


def checksum16(fields: Sequence[tuple[int, int]], payload: bytes = b"") -> int:
    """update_checksum / verify_checksum with HashAlgorithm.csum16 over (value, bitwidth) fields."""
    return csum16(pack_fields(fields) + payload)


def verify_checksum16(fields: Sequence[tuple[int, int]], expected: int, payload: bytes = b"") -> bool:
    """True when the checksum field holds the csum16 of the fields (as bmv2's verify compares them)."""
    return checksum16(fields, payload) == expected & 0xFFFF


_M64 = (1 << 64) - 1


class Xoshiro256:
    """The v1model `random` extern's generator on both backends: xoshiro256** seeded through
    splitmix64, as the native runtime (softswitch/native/src) draws it, so that the same seed
    gives the same draws on the Python and the C backend."""

    def __init__(self, seed: int | None = None) -> None:
        if seed is None:
            import random as _random

            seed = _random.SystemRandom().getrandbits(63)
        x = seed & _M64
        self.s = []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & _M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
            self.s.append(z ^ (z >> 31))

    def next64(self) -> int:
        s = self.s
        r = ((s[1] * 5) & _M64)
        result = ((((r << 7) | (r >> 57)) & _M64) * 9) & _M64
        t = (s[1] << 17) & _M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = ((s[3] << 45) | (s[3] >> 19)) & _M64
        return result

    def randint(self, lo: int, hi: int) -> int:
        """Uniform in [lo, hi] (lo when lo >= hi), rejecting the low tail as the C runtime does.
        A span of 2^64 or more draws k 64-bit words per try, the first the most significant, k the
        span's 64-bit words (the C back end's ss_wN_random does the same for bit<W> > 64)."""
        if lo >= hi:
            return lo
        span = hi - lo
        if span == _M64:  # lo is 0 unless the bounds are wider than 64 bits
            return lo + self.next64()
        rng = span + 1
        k = max(1, (span.bit_length() + 63) // 64)
        threshold = ((1 << (64 * k)) - rng) % rng
        while True:
            r = 0
            for _ in range(k):
                r = (r << 64) | self.next64()
            if r >= threshold:
                return lo + r % rng
