/* Sum-tree and min-tree over doubles: the leaves are an item's priority^alpha. Stored as one
 * power-of-two array per tree (node i has children 2i and 2i+1, the root is 1), so an update
 * is O(log n) and a prefix-sum descent finds an item with probability leaf / total. */
#ifndef RS_SUMTREE_H
#define RS_SUMTREE_H

#include <stdint.h>

#include "util.h"

#define RS_NO_LEAF UINT32_MAX

struct rs_sumtree {
    uint32_t n;   /* leaves in use: 0 .. n-1 */
    uint32_t cap; /* power of two >= n */
    double *sum;  /* 2*cap nodes; sum[1] is the total */
    double *min;  /* 2*cap nodes; the smallest positive leaf below (INFINITY: none) */
};

int rs_sumtree_init(struct rs_sumtree *t, uint32_t n); /* 0 ok, -1 out of memory */
void rs_sumtree_free(struct rs_sumtree *t);
/* Set leaf i (< n) to v >= 0 and recompute its ancestors from their children (no drift). */
void rs_sumtree_set(struct rs_sumtree *t, uint32_t i, double v);
double rs_sumtree_get(const struct rs_sumtree *t, uint32_t i);
double rs_sumtree_total(const struct rs_sumtree *t);
double rs_sumtree_min(const struct rs_sumtree *t); /* smallest positive leaf, INFINITY if none */
/* The leaf where the prefix sum passes u (0 <= u < total); never a zero leaf.
 * RS_NO_LEAF when the total is 0. */
uint32_t rs_sumtree_find(const struct rs_sumtree *t, double u);
/* Stratified sampling: one uniform draw in each of `batch` equal parts of the total.
 * Returns 0, or -1 (out untouched) when the total is 0. */
int rs_sumtree_sample(const struct rs_sumtree *t, uint32_t batch, struct rs_rng *rng, uint32_t *out);

#endif
