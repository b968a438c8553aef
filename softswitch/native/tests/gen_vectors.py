"""Test vectors for test_algorithms.c from softswitch/algorithms.py (the reference).

Lines: ``H algo n w1 v1 ... wn vn payload_hex|- expected`` for ss_bits_put + ss_hash, and
``R h base max width expected`` for ss_hash_result.  Run from the repository root."""

import random

from softswitch import algorithms as A

ALGOS = {"crc32": 0, "crc32_custom": 1, "crc16": 2, "crc16_custom": 3, "identity": 5, "csum16": 6,
         "xor16": 7}


def main() -> None:
    rng = random.Random(20240611)
    for _ in range(3000):
        name = rng.choice(list(ALGOS))
        n = rng.randint(0, 12)
        fields = []
        for _ in range(n):
            w = rng.choice([1, 3, 7, 8, 9, 12, 16, 24, 31, 32, 33, 48, 63, 64, rng.randint(1, 64)])
            fields.append((rng.getrandbits(w), w))
        payload = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 70))) if rng.random() < 0.5 else None
        h = A.compute_hash(name, fields, payload or b"")
        ptxt = payload.hex() if payload else "-"
        flat = " ".join(f"{w} {v}" for v, w in fields)
        print(f"H {ALGOS[name]} {n} {flat} {ptxt or '-'} {h}".replace("  ", " "))
    for _ in range(2000):
        h = rng.getrandbits(64)
        base = rng.getrandbits(rng.choice([0, 8, 16, 32, 64]))
        mx = rng.choice([0, 1, 2, 3, 1000, rng.getrandbits(64), rng.getrandbits(16)])
        w = rng.choice([1, 8, 16, 32, 63, 64])
        print(f"R {h} {base} {mx} {w} {A.hash_result(h, base, mx, w)}")


if __name__ == "__main__":
    main()
