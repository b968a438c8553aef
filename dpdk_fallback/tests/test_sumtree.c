/* Unit tests of the sum-tree/min-tree and the table ring. Exit status 0 only if all pass. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sumtree.h"
#include "table.h"
#include "util.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

static int close_to(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(1.0, fabs(b)); }

/* Sampled frequencies follow the leaves (chi-square, fixed seed); zero leaves never come up. */
static void test_frequencies(void)
{
    const double pr[] = {1, 2, 3, 4, 0, 5, 6, 10, 0, 0.5};
    const uint32_t n = sizeof pr / sizeof pr[0];
    struct rs_sumtree t;
    CHECK(rs_sumtree_init(&t, n) == 0, "init");
    double total = 0;
    for (uint32_t i = 0; i < n; i++) {
        rs_sumtree_set(&t, i, pr[i]);
        total += pr[i];
    }
    CHECK(close_to(rs_sumtree_total(&t), total), "total %g want %g", rs_sumtree_total(&t), total);
    struct rs_rng rng;
    rs_rng_seed(&rng, 12345);
    enum { BATCH = 32, ROUNDS = 5000 };
    uint32_t idx[BATCH];
    uint64_t counts[16] = {0};
    for (int r = 0; r < ROUNDS; r++) {
        CHECK(rs_sumtree_sample(&t, BATCH, &rng, idx) == 0, "sample");
        for (int j = 0; j < BATCH; j++) {
            CHECK(idx[j] < n, "index %u out of range", idx[j]);
            if (idx[j] < n)
                counts[idx[j]]++;
        }
    }
    double draws = (double)BATCH * ROUNDS, chi2 = 0;
    int dof = -1;
    for (uint32_t i = 0; i < n; i++) {
        if (pr[i] == 0) {
            CHECK(counts[i] == 0, "zero-priority leaf %u drawn %llu times", i,
                  (unsigned long long)counts[i]);
            continue;
        }
        double expect = draws * pr[i] / total;
        chi2 += (counts[i] - expect) * (counts[i] - expect) / expect;
        dof++;
    }
    /* 7 degrees of freedom: P(chi2 > 29.9) < 1e-4. Stratification makes it smaller still. */
    CHECK(chi2 < 29.9, "chi-square %g over %d dof", chi2, dof);
    rs_sumtree_free(&t);
}

/* With equal leaves and batch == n, stratification hits every leaf exactly once. */
static void test_stratified(void)
{
    struct rs_sumtree t;
    rs_sumtree_init(&t, 16);
    for (uint32_t i = 0; i < 16; i++)
        rs_sumtree_set(&t, i, 2.5);
    struct rs_rng rng;
    rs_rng_seed(&rng, 7);
    uint32_t idx[16];
    for (int r = 0; r < 100; r++) {
        int seen[16] = {0};
        rs_sumtree_sample(&t, 16, &rng, idx);
        for (int j = 0; j < 16; j++)
            seen[idx[j]]++;
        for (int j = 0; j < 16; j++)
            CHECK(seen[j] == 1, "round %d: leaf %d drawn %d times", r, j, seen[j]);
    }
    rs_sumtree_free(&t);
}

/* Prefix descent edges: u = 0 with a zero first leaf, u just below the total, empty tree. */
static void test_find_edges(void)
{
    struct rs_sumtree t;
    rs_sumtree_init(&t, 5); /* not a power of two: leaves 5..7 stay zero */
    CHECK(rs_sumtree_find(&t, 0) == RS_NO_LEAF, "empty tree has no leaf");
    struct rs_rng rng;
    rs_rng_seed(&rng, 1);
    uint32_t one;
    CHECK(rs_sumtree_sample(&t, 1, &rng, &one) == -1, "sampling an empty tree fails");
    rs_sumtree_set(&t, 1, 0.1);
    rs_sumtree_set(&t, 3, 0.2);
    CHECK(rs_sumtree_find(&t, 0) == 1, "u=0 lands on the first positive leaf, got %u",
          rs_sumtree_find(&t, 0));
    double total = rs_sumtree_total(&t);
    CHECK(rs_sumtree_find(&t, nextafter(total, 0)) == 3, "u just below total lands on leaf 3");
    CHECK(rs_sumtree_find(&t, total * 2) == 3, "u past the total still lands on a positive leaf");
    CHECK(rs_sumtree_find(&t, 0.1) == 3, "u equal to a prefix goes right");
    rs_sumtree_free(&t);
}

/* Repeated sets of one leaf: the last wins, and sums/mins match a brute-force recount. */
static void test_updates(void)
{
    enum { N = 37 };
    struct rs_sumtree t;
    rs_sumtree_init(&t, N);
    double leaf[N] = {0};
    rs_sumtree_set(&t, 3, 5.0);
    rs_sumtree_set(&t, 3, 1.0);
    rs_sumtree_set(&t, 3, 2.0);
    leaf[3] = 2.0;
    CHECK(rs_sumtree_get(&t, 3) == 2.0 && rs_sumtree_total(&t) == 2.0, "last set wins");
    struct rs_rng rng;
    rs_rng_seed(&rng, 99);
    for (int k = 0; k < 5000; k++) {
        uint32_t i = (uint32_t)(rs_rng_next(&rng) % N);
        double v = rs_rng_uniform(&rng) < 0.2 ? 0.0 : rs_rng_uniform(&rng) * 100;
        rs_sumtree_set(&t, i, v);
        leaf[i] = v;
        if (k % 97 == 0) {
            double sum = 0, mn = INFINITY;
            for (int j = 0; j < N; j++) {
                sum += leaf[j];
                if (leaf[j] > 0)
                    mn = fmin(mn, leaf[j]);
            }
            CHECK(close_to(rs_sumtree_total(&t), sum), "total %g want %g", rs_sumtree_total(&t), sum);
            CHECK(rs_sumtree_min(&t) == mn, "min %g want %g", rs_sumtree_min(&t), mn);
        }
    }
    rs_sumtree_set(&t, 1000, 1.0); /* out of range: ignored */
    rs_sumtree_free(&t);
}

/* The min-tree skips zero leaves, so PER weights (leaf/min)^-beta stay <= 1. */
static void test_min_weights(void)
{
    struct rs_sumtree t;
    rs_sumtree_init(&t, 4);
    CHECK(isinf(rs_sumtree_min(&t)), "empty min is infinity");
    rs_sumtree_set(&t, 0, 4.0);
    rs_sumtree_set(&t, 1, 0.0);
    rs_sumtree_set(&t, 2, 1.0);
    rs_sumtree_set(&t, 3, 2.0);
    CHECK(rs_sumtree_min(&t) == 1.0, "min %g", rs_sumtree_min(&t));
    double beta = 0.4, mn = rs_sumtree_min(&t);
    for (uint32_t i = 0; i < 4; i++) {
        double v = rs_sumtree_get(&t, i);
        if (v > 0) {
            double w = pow(v / mn, -beta);
            CHECK(w <= 1.0 && w > 0, "weight %g", w);
        }
    }
    CHECK(close_to(pow(4.0 / mn, -beta), pow(0.5, 0.8)), "weight of the largest leaf");
    rs_sumtree_set(&t, 2, 0.0);
    CHECK(rs_sumtree_min(&t) == 2.0, "min moves on when the smallest leaf is zeroed");
    rs_sumtree_free(&t);
}

static struct rs_item *item(uint32_t v)
{
    struct rs_item *it = malloc(sizeof *it + 4);
    it->len = 4;
    memcpy(it->data, &v, 4);
    return it;
}

/* FIFO eviction at capacity; keys never reused; alpha applied; zero priority never sampled. */
static void test_table_fifo(void)
{
    struct rs_table t;
    CHECK(rs_table_init(&t, "t", 4, 0.5, RS_MODE_HOST) == 0, "init");
    for (uint32_t k = 0; k < 6; k++)
        CHECK(rs_table_insert(&t, item(k), (float)(k + 1) * (k + 1)) == k, "key %u", k);
    CHECK(rs_table_size(&t) == 4, "size %llu", (unsigned long long)rs_table_size(&t));
    CHECK(t.evictions == 2 && t.inserts == 6, "evictions %llu inserts %llu",
          (unsigned long long)t.evictions, (unsigned long long)t.inserts);
    CHECK(!rs_table_has_key(&t, 0) && !rs_table_has_key(&t, 1), "oldest keys evicted");
    CHECK(rs_table_has_key(&t, 2) && rs_table_has_key(&t, 5) && !rs_table_has_key(&t, 6), "live keys");
    CHECK(rs_table_slot(&t, 5) == 1 && rs_table_slot_key(&t, 1) == 5 && rs_table_slot_key(&t, 2) == 2,
          "slot/key mapping");
    uint32_t v;
    memcpy(&v, t.slots[1]->data, 4);
    CHECK(v == 5, "slot 1 holds the item of key 5, got %u", v);
    /* alpha 0.5: leaves are k+1 for keys 2..5 -> 3+4+5+6 */
    CHECK(close_to(rs_sumtree_total(&t.tree), 18.0), "total %g", rs_sumtree_total(&t.tree));
    rs_table_set_priority(&t, rs_table_slot(&t, 3), 0.0f);
    CHECK(close_to(rs_sumtree_total(&t.tree), 14.0), "zeroed key 3");
    t.alpha = 0.0;
    rs_table_rebuild(&t);
    CHECK(close_to(rs_sumtree_total(&t.tree), 3.0), "alpha 0: positive leaves are 1, zero stays 0");
    rs_table_free(&t);
}

int main(void)
{
    test_frequencies();
    test_stratified();
    test_find_edges();
    test_updates();
    test_min_weights();
    test_table_fifo();
    if (failures) {
        fprintf(stderr, "test_sumtree: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_sumtree: all passed\n");
    return 0;
}
