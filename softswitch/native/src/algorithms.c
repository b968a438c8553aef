/* algorithms.c — hash and checksum algorithms of v1model, bit-exact with
 * softswitch/algorithms.py (bmv2's): crc32, crc16 (CRC-16/ARC), their _custom forms with
 * bmv2's default parameters (equal to crc32/crc16), identity, csum16, xor16, random.
 * Input = the bit string (MSB first, the last byte's unused low bits zero), then the payload
 * starting on the next byte boundary. */
#include <stdatomic.h>
#include <string.h>

#include "ss_core.h"

static uint32_t crc32_tab[256];
static uint16_t crc16_tab[256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void make_tables(void) {
    for (uint32_t d = 0; d < 256; d++) {
        uint32_t r = d;
        uint32_t q = d;
        for (int i = 0; i < 8; i++) {
            r = (r & 1u) ? (r >> 1) ^ 0xEDB88320u : r >> 1;
            q = (q & 1u) ? (q >> 1) ^ 0xA001u : q >> 1;
        }
        crc32_tab[d] = r;
        crc16_tab[d] = (uint16_t)q;
    }
}

/* the input as two pieces: a (bits, last byte masked) then b (payload) */
typedef struct {
    const uint8_t *a;
    uint32_t alen;
    uint8_t alast;           /* the masked last byte of a (used instead of a[alen-1]) */
    const uint8_t *b;
    uint32_t blen;
} pieces;

static inline uint8_t piece_byte_a(const pieces *p, uint32_t i) {
    return i + 1 == p->alen ? p->alast : p->a[i];
}

static uint32_t crc32_run(uint32_t r, const uint8_t *d, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) r = crc32_tab[(r ^ d[i]) & 0xFFu] ^ (r >> 8);
    return r;
}

static uint16_t crc16_run(uint16_t r, const uint8_t *d, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        r = (uint16_t)(crc16_tab[(r ^ d[i]) & 0xFFu] ^ (uint16_t)(r >> 8));
    return r;
}

uint64_t ss_hash(uint32_t algo, const uint8_t *bits, uint32_t nbits, const uint8_t *payload,
                 uint32_t payload_len) {
    pthread_once(&tab_once, make_tables);
    pieces p;
    p.a = bits;
    p.alen = bits ? (nbits + 7u) / 8u : 0;
    p.alast = 0;
    if (p.alen) {
        uint32_t rem = nbits & 7u;
        p.alast = rem ? (uint8_t)(bits[p.alen - 1] & (uint8_t)(0xFFu << (8u - rem))) : bits[p.alen - 1];
    }
    p.b = payload;
    p.blen = payload ? payload_len : 0;

    switch (algo) {
    case SS_ALGO_CRC32:
    case SS_ALGO_CRC32_CUSTOM: {
        uint32_t r = 0xFFFFFFFFu;
        if (p.alen) {
            r = crc32_run(r, p.a, p.alen - 1);
            r = crc32_run(r, &p.alast, 1);
        }
        r = crc32_run(r, p.b, p.blen);
        return (uint64_t)(r ^ 0xFFFFFFFFu);
    }
    case SS_ALGO_CRC16:
    case SS_ALGO_CRC16_CUSTOM: {
        uint16_t r = 0;
        if (p.alen) {
            r = crc16_run(r, p.a, p.alen - 1);
            r = crc16_run(r, &p.alast, 1);
        }
        r = crc16_run(r, p.b, p.blen);
        return r;
    }
    case SS_ALGO_IDENTITY: {
        uint64_t v = 0;
        uint32_t k = 0;
        for (uint32_t i = 0; i < p.alen && k < 8; i++, k++) v = (v << 8) | piece_byte_a(&p, i);
        for (uint32_t i = 0; i < p.blen && k < 8; i++, k++) v = (v << 8) | p.b[i];
        return v;
    }
    case SS_ALGO_CSUM16:
    case SS_ALGO_XOR16: {
        /* big-endian 16-bit words over the concatenation; odd total length padded with 0 */
        uint64_t hi = 0, lo = 0;   /* sums of even-position and odd-position bytes */
        uint32_t xh = 0, xl = 0;   /* xors of the same */
        uint32_t pos = 0;
        for (uint32_t i = 0; i < p.alen; i++, pos++) {
            uint8_t byte = piece_byte_a(&p, i);
            if (pos & 1u) { lo += byte; xl ^= byte; } else { hi += byte; xh ^= byte; }
        }
        for (uint32_t i = 0; i < p.blen; i++, pos++) {
            uint8_t byte = p.b[i];
            if (pos & 1u) { lo += byte; xl ^= byte; } else { hi += byte; xh ^= byte; }
        }
        if (algo == SS_ALGO_XOR16) return (uint64_t)((xh << 8) | xl);
        uint64_t s = (hi << 8) + lo;
        while (s >> 16) s = (s & 0xFFFFu) + (s >> 16);
        return (~s) & 0xFFFFu;
    }
    case SS_ALGO_RANDOM: {
        static _Atomic uint64_t ctr = 0x2545F4914F6CDD1Dull;
        uint64_t z = atomic_fetch_add(&ctr, 0x9E3779B97F4A7C15ull) + 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    default:
        return 0;
    }
}

uint64_t ss_hash_result(uint64_t h, uint64_t base, uint64_t max, uint32_t width) {
    uint64_t v = max > 0 ? base + h % max : base;  /* unsigned: wraps mod 2^64 as bmv2 */
    if (width >= 64) return v;
    return width == 0 ? 0 : v & ((1ull << width) - 1ull);
}

void ss_bits_put(ss_bits *b, uint64_t v, uint32_t width) {
    const uint32_t capbits = 8u * (uint32_t)sizeof b->buf;
    if (width > 64 || b->nbits > capbits || width > capbits - b->nbits) {
        /* does not fit: the string saturates (the C emitter bounds its inputs) */
        b->nbits = capbits;
        return;
    }
    while (width > 0) {
        uint32_t pos = b->nbits & 7u, byte = b->nbits >> 3;
        uint32_t space = 8u - pos;
        uint32_t take = width < space ? width : space;
        uint32_t chunk = (uint32_t)((v >> (width - take)) & ((1u << take) - 1u));
        uint8_t bitsv = (uint8_t)(chunk << (space - take));
        if (pos == 0) b->buf[byte] = bitsv; else b->buf[byte] |= bitsv;
        b->nbits += take;
        width -= take;
    }
}
