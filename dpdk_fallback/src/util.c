#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void rs_rng_seed(struct rs_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rs_rng_next(struct rs_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rs_rng_uniform(struct rs_rng *r) { return (double)(rs_rng_next(r) >> 11) * 0x1.0p-53; }

void rs_buf_init(struct rs_buf *b) { memset(b, 0, sizeof *b); }

void rs_buf_free(struct rs_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

uint8_t *rs_buf_grow(struct rs_buf *b, size_t n)
{
    if (b->failed)
        return NULL;
    if (n > SIZE_MAX / 2 - b->len) {
        b->failed = 1;
        return NULL;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = realloc(b->data, cap);
        if (!p) {
            b->failed = 1;
            return NULL;
        }
        b->data = p;
        b->cap = cap;
    }
    uint8_t *at = b->data + b->len;
    b->len += n;
    return at;
}

void rs_buf_put(struct rs_buf *b, const void *p, size_t n)
{
    uint8_t *at = rs_buf_grow(b, n);
    if (at && n)
        memcpy(at, p, n);
}

void rs_buf_u8(struct rs_buf *b, uint8_t v) { rs_buf_put(b, &v, 1); }
void rs_buf_u16(struct rs_buf *b, uint16_t v)
{
    uint8_t *at = rs_buf_grow(b, 2);
    if (at)
        rp_put16(at, v);
}
void rs_buf_u32(struct rs_buf *b, uint32_t v)
{
    uint8_t *at = rs_buf_grow(b, 4);
    if (at)
        rp_put32(at, v);
}
void rs_buf_u64(struct rs_buf *b, uint64_t v)
{
    uint8_t *at = rs_buf_grow(b, 8);
    if (at)
        rp_put64(at, v);
}
void rs_buf_f32(struct rs_buf *b, float v)
{
    uint8_t *at = rs_buf_grow(b, 4);
    if (at)
        rp_putf32(at, v);
}

void rs_buf_printf(struct rs_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    uint8_t *at = rs_buf_grow(b, (size_t)n + 1);
    if (!at)
        return;
    va_start(ap, fmt);
    vsnprintf((char *)at, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len--; /* drop the NUL */
}

double rs_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
