#include "sumtree.h"

#include <math.h>
#include <stdlib.h>

int rs_sumtree_init(struct rs_sumtree *t, uint32_t n)
{
    uint32_t cap = 1;
    while (cap < n)
        cap <<= 1;
    t->n = n;
    t->cap = cap;
    t->sum = calloc(2 * (size_t)cap, sizeof(double));
    t->min = malloc(2 * (size_t)cap * sizeof(double));
    if (!t->sum || !t->min) {
        rs_sumtree_free(t);
        return -1;
    }
    for (size_t i = 0; i < 2 * (size_t)cap; i++)
        t->min[i] = INFINITY;
    return 0;
}

void rs_sumtree_free(struct rs_sumtree *t)
{
    free(t->sum);
    free(t->min);
    t->sum = t->min = NULL;
    t->n = t->cap = 0;
}

void rs_sumtree_set(struct rs_sumtree *t, uint32_t i, double v)
{
    if (i >= t->n)
        return;
    size_t k = (size_t)t->cap + i;
    t->sum[k] = v;
    t->min[k] = v > 0 ? v : INFINITY;
    for (k >>= 1; k >= 1; k >>= 1) {
        t->sum[k] = t->sum[2 * k] + t->sum[2 * k + 1];
        t->min[k] = fmin(t->min[2 * k], t->min[2 * k + 1]);
    }
}

double rs_sumtree_get(const struct rs_sumtree *t, uint32_t i)
{
    return i < t->n ? t->sum[(size_t)t->cap + i] : 0.0;
}

double rs_sumtree_total(const struct rs_sumtree *t) { return t->cap ? t->sum[1] : 0.0; }

double rs_sumtree_min(const struct rs_sumtree *t) { return t->cap ? t->min[1] : INFINITY; }

uint32_t rs_sumtree_find(const struct rs_sumtree *t, double u)
{
    if (!(rs_sumtree_total(t) > 0))
        return RS_NO_LEAF;
    size_t k = 1;
    while (k < t->cap) {
        double l = t->sum[2 * k], r = t->sum[2 * k + 1];
        /* Rounding can leave u past a subtree's sum: steer away from zero subtrees so a
         * zero-priority leaf is never returned. */
        if (u < l || !(r > 0)) {
            k = 2 * k;
        } else {
            u -= l;
            k = 2 * k + 1;
        }
    }
    return (uint32_t)(k - t->cap);
}

int rs_sumtree_sample(const struct rs_sumtree *t, uint32_t batch, struct rs_rng *rng, uint32_t *out)
{
    double total = rs_sumtree_total(t);
    if (!(total > 0) || batch == 0)
        return -1;
    double seg = total / batch;
    for (uint32_t j = 0; j < batch; j++) {
        double u = ((double)j + rs_rng_uniform(rng)) * seg;
        if (u >= total)
            u = nextafter(total, 0.0);
        out[j] = rs_sumtree_find(t, u);
    }
    return 0;
}
