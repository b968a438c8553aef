/* Small helpers shared by the server modules: a seeded PRNG and a growable byte buffer. */
#ifndef RS_UTIL_H
#define RS_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* xoshiro256** seeded through splitmix64: fast, good enough for sampling, reproducible. */
struct rs_rng {
    uint64_t s[4];
};
void rs_rng_seed(struct rs_rng *r, uint64_t seed);
uint64_t rs_rng_next(struct rs_rng *r);
double rs_rng_uniform(struct rs_rng *r); /* [0, 1) with 53 random bits */

/* Growable buffer; on allocation failure `failed` is set and later writes are no-ops, so
 * callers check once at the end. */
struct rs_buf {
    uint8_t *data;
    size_t len, cap;
    int failed;
};
void rs_buf_init(struct rs_buf *b);
void rs_buf_free(struct rs_buf *b);
uint8_t *rs_buf_grow(struct rs_buf *b, size_t n); /* append n bytes, returns where (NULL on OOM) */
void rs_buf_put(struct rs_buf *b, const void *p, size_t n);
void rs_buf_u8(struct rs_buf *b, uint8_t v);
void rs_buf_u16(struct rs_buf *b, uint16_t v);
void rs_buf_u32(struct rs_buf *b, uint32_t v);
void rs_buf_u64(struct rs_buf *b, uint64_t v);
void rs_buf_f32(struct rs_buf *b, float v);
void rs_buf_printf(struct rs_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

double rs_now(void); /* monotonic seconds */

#endif
