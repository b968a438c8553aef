/* test_tables.c — the match engine (exact / LPM / ternary-range-optional, priorities, ties,
 * defaults, capacity, modify/delete, direct counters and meters), checked against brute-force
 * references on random entries; and the externs and control API (registers, counters,
 * meters, value sets, random, digests, packet-in queue, validation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ss_runtime.h"
#include "ss_internal.h"

#define CHECK(x)                                                                     \
    do {                                                                             \
        if (!(x)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #x);    \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static uint64_t rndw(uint32_t w) { return w >= 64 ? rnd() : rnd() & ((1ull << w) - 1); }
static uint64_t pmask(uint32_t w, uint32_t p) {
    uint64_t full = w >= 64 ? ~0ull : (1ull << w) - 1;
    if (p == 0) return 0;
    return full & ~((w - p >= 64) ? ~0ull : ((1ull << (w - p)) - 1));
}

static ss_ctx ctx(struct ss_switch *sw, uint32_t len) {
    ss_ctx c;
    memset(&c, 0, sizeof c);
    c.sw = sw;
    c.len = len;
    return c;
}

static int apply(struct ss_switch *sw, uint32_t t, const uint64_t *k, uint32_t *a, uint64_t *arg0) {
    ss_ctx c = ctx(sw, 100);
    const uint64_t *args;
    int hit = ss_table_apply(&c, t, k, a, &args);
    *arg0 = args[0];
    return hit;
}

/* ------------------------------------------------------------------ exact */
static void test_exact(void) {
    struct ss_switch *sw = ss_switch_new(64, 1);
    uint8_t kinds[2] = {SS_MATCH_EXACT, SS_MATCH_EXACT};
    uint16_t widths[2] = {48, 16};
    CHECK(ss_define_table(sw, 3, 2, kinds, widths, 4, 1, -1, 1) == 0);
    CHECK(ss_define_table(sw, 3, 2, kinds, widths, 4, 1, -1, 1) == SS_EEXIST);
    uint16_t bad[2] = {0, 65};
    CHECK(ss_define_table(sw, 4, 2, kinds, bad, 4, 0, -1, 1) == SS_EINVAL);
    CHECK(ss_define_table(sw, 5, 2, kinds, widths, 4, 0, 9, 1) == SS_EINVAL);
    uint64_t k[2] = {0x0000AABBCCDDEEFFull, 7}, args[3] = {11, 12, 13}, a0;
    uint32_t a;
    /* no default set: no action (P4-16's implicit NoAction), not action 0 with zero arguments */
    CHECK(apply(sw, 3, k, &a, &a0) == 0 && a == SS_NO_ACTION && a0 == 0);
    CHECK(apply(sw, 6, k, &a, &a0) == 0 && a == SS_NO_ACTION);  /* not a table */
    CHECK(ss_table_set_default(sw, 3, 9, args + 2, 1) == 0);
    CHECK(apply(sw, 3, k, &a, &a0) == 0 && a == 9 && a0 == 13);
    CHECK(ss_table_add(sw, 3, k, NULL, 0, 2, args, 1) == 0);
    CHECK(ss_table_add(sw, 3, k, NULL, 0, 2, args, 1) == SS_EEXIST);
    CHECK(apply(sw, 3, k, &a, &a0) == 1 && a == 2 && a0 == 11);
    uint64_t wide[2] = {1ull << 48, 0};
    CHECK(ss_table_add(sw, 3, wide, NULL, 0, 2, args, 1) == SS_EINVAL);
    CHECK(ss_table_add(sw, 7, k, NULL, 0, 2, args, 1) == SS_ENOENT);
    for (uint64_t i = 0; i < 3; i++) {
        uint64_t kk[2] = {i, i};
        CHECK(ss_table_add(sw, 3, kk, NULL, 0, 1, args + 1, 1) == 0);
    }
    uint64_t kk[2] = {9, 9};
    CHECK(ss_table_add(sw, 3, kk, NULL, 0, 1, args, 1) == SS_ENOSPC);
    CHECK(strstr(ss_last_error(sw), "full") != NULL);
    CHECK(ss_table_modify(sw, 3, k, NULL, 0, 5, args + 1, 2) == 0);
    CHECK(apply(sw, 3, k, &a, &a0) == 1 && a == 5 && a0 == 12);
    uint64_t by = 0, pk = 0;
    CHECK(ss_table_direct_counter(sw, 3, k, NULL, 0, &by, &pk, 0) == 0 && pk == 2 && by == 200);
    by = 5; pk = 6;
    CHECK(ss_table_direct_counter(sw, 3, k, NULL, 0, &by, &pk, 1) == 0);
    by = pk = 0;
    CHECK(ss_table_direct_counter(sw, 3, k, NULL, 0, &by, &pk, 0) == 0 && pk == 6 && by == 5);
    CHECK(ss_table_delete(sw, 3, k, NULL, 0) == 0);
    CHECK(ss_table_delete(sw, 3, k, NULL, 0) == SS_ENOENT);
    CHECK(apply(sw, 3, k, &a, &a0) == 0 && a == 9);
    CHECK(ss_table_add(sw, 3, k, NULL, 0, 2, args, 1) == 0);
    CHECK(ss_table_clear(sw, 3) == 0);
    CHECK(apply(sw, 3, k, &a, &a0) == 0);
    CHECK(ss_table_add(sw, 3, k, NULL, 0, 2, args, 1) == 0);
    /* keyless table */
    CHECK(ss_define_table(sw, 0, 0, NULL, NULL, 1, 0, -1, 1) == 0);
    CHECK(ss_table_set_default(sw, 0, 4, args, 3) == 0);
    CHECK(apply(sw, 0, NULL, &a, &a0) == 0 && a == 4 && a0 == 11);
    /* actions defined: argument counts are checked */
    CHECK(ss_define_action(sw, 2, 1) == 0);
    CHECK(ss_define_action(sw, 2, 2) == SS_EEXIST);
    CHECK(ss_table_modify(sw, 3, k, NULL, 0, 2, args, 2) == SS_EINVAL);
    CHECK(ss_table_modify(sw, 3, k, NULL, 0, 3, args, 1) == SS_ENOENT);
    CHECK(ss_table_modify(sw, 3, k, NULL, 0, 2, args + 2, 1) == 0);
    CHECK(apply(sw, 3, k, &a, &a0) == 1 && a == 2 && a0 == 13);
    ss_switch_free(sw);
}

/* a big exact table with random adds and deletes (hash growth, backward-shift deletion) */
static void test_exact_random(void) {
    struct ss_switch *sw = ss_switch_new(64, 1);
    uint8_t kinds[1] = {SS_MATCH_EXACT};
    uint16_t widths[1] = {20};
    enum { N = 5000 };
    CHECK(ss_define_table(sw, 0, 1, kinds, widths, N, 0, -1, 1) == 0);
    static uint64_t present[1u << 20 >> 6];
    memset(present, 0, sizeof present);
    uint32_t count = 0;
    for (int step = 0; step < 60000; step++) {
        uint64_t k = rndw(20), a0;
        uint32_t a;
        int in = (present[k >> 6] >> (k & 63)) & 1;
        uint64_t arg = k * 3;
        switch (rnd() % 3) {
        case 0:
            if (in) CHECK(ss_table_add(sw, 0, &k, NULL, 0, 1, &arg, 1) == SS_EEXIST);
            else if (count >= N) CHECK(ss_table_add(sw, 0, &k, NULL, 0, 1, &arg, 1) == SS_ENOSPC);
            else { CHECK(ss_table_add(sw, 0, &k, NULL, 0, 1, &arg, 1) == 0); present[k >> 6] |= 1ull << (k & 63); count++; }
            break;
        case 1:
            if (in) { CHECK(ss_table_delete(sw, 0, &k, NULL, 0) == 0); present[k >> 6] &= ~(1ull << (k & 63)); count--; }
            else CHECK(ss_table_delete(sw, 0, &k, NULL, 0) == SS_ENOENT);
            break;
        default:
            CHECK(apply(sw, 0, &k, &a, &a0) == in);
            if (in) CHECK(a == 1 && a0 == k * 3);
        }
    }
    /* every key still finds itself */
    for (uint64_t k = 0; k < (1u << 20); k += 7) {
        uint64_t a0;
        uint32_t a;
        CHECK(apply(sw, 0, &k, &a, &a0) == (int)((present[k >> 6] >> (k & 63)) & 1));
    }
    ss_switch_free(sw);
}

/* ------------------------------------------------------------------ LPM */
typedef struct { uint64_t e, v; uint32_t p; int live; } lpm_ref;

static void test_lpm(void) {
    struct ss_switch *sw = ss_switch_new(64, 1);
    uint8_t kinds[2] = {SS_MATCH_EXACT, SS_MATCH_LPM};
    uint16_t widths[2] = {2, 32};
    enum { N = 600 };
    CHECK(ss_define_table(sw, 1, 2, kinds, widths, N, 0, -1, 1) == 0);
    CHECK(ss_table_set_default(sw, 1, 0, NULL, 0) == 0);
    static lpm_ref ref[N];
    int nref = 0;
    uint64_t bad_v[2] = {0, 0xFFFFFFFF}, bad_m[2] = {0, 8};
    CHECK(ss_table_add(sw, 1, bad_v, bad_m, 0, 1, NULL, 0) == SS_EINVAL);  /* bits beyond the prefix */
    bad_m[1] = 33;
    bad_v[1] = 0;
    CHECK(ss_table_add(sw, 1, bad_v, bad_m, 0, 1, NULL, 0) == SS_EINVAL);
    CHECK(ss_table_add(sw, 1, bad_v, NULL, 0, 1, NULL, 0) == SS_EINVAL);  /* masks required */
    for (int step = 0; step < 20000; step++) {
        uint64_t r = rnd() % 10;
        if (r < 3 && nref < N) {
            uint32_t p = (uint32_t)(rnd() % 33);
            if (rnd() % 3 == 0) p = 8 * (uint32_t)(rnd() % 5);
            uint64_t v[2] = {rndw(2), rndw(32) & pmask(32, p) & 0xFF00FFFFull}, m[2] = {0, p};
            int dup = 0;
            for (int i = 0; i < nref; i++)
                if (ref[i].live && ref[i].e == v[0] && ref[i].v == v[1] && ref[i].p == p) dup = 1;
            uint64_t arg = (uint64_t)nref;
            int rc = ss_table_add(sw, 1, v, m, 0, 7, &arg, 1);
            if (dup) { CHECK(rc == SS_EEXIST); continue; }
            CHECK(rc == 0);
            ref[nref++] = (lpm_ref){v[0], v[1], p, 1};
        } else if (r < 4 && nref) {
            int i = (int)(rnd() % (uint64_t)nref);
            uint64_t v[2] = {ref[i].e, ref[i].v}, m[2] = {0, ref[i].p};
            int live = 0;  /* a dead record's key may live again in a later one */
            for (int j = 0; j < nref; j++)
                if (ref[j].live && ref[j].e == v[0] && ref[j].v == v[1] && ref[j].p == m[1]) live = 1, i = j;
            CHECK(ss_table_delete(sw, 1, v, m, 0) == (live ? 0 : SS_ENOENT));
            ref[i].live = 0;
        } else {
            uint64_t k[2] = {rndw(2), rndw(32) & 0xFF00FFFFull}, a0;
            if (nref && rnd() % 2) k[1] = ref[rnd() % (uint64_t)nref].v | (rndw(32) & 0xFF);
            int best = -1;
            for (int i = 0; i < nref; i++)
                if (ref[i].live && ref[i].e == k[0] && (k[1] & pmask(32, ref[i].p)) == ref[i].v &&
                    (best < 0 || ref[i].p > ref[best].p))
                    best = i;
            uint32_t a;
            int hit = apply(sw, 1, k, &a, &a0);
            CHECK(hit == (best >= 0));
            if (hit) CHECK(a == 7 && a0 == (uint64_t)best);
        }
    }
    ss_switch_free(sw);
}

/* ------------------------------------------------------------------ ternary / range / optional */
typedef struct { uint64_t v[3], m[3]; int32_t prio; uint64_t seq; int live; } scan_ref;

static int matches(const scan_ref *e, const uint64_t *k) {
    if ((k[0] & e->m[0]) != e->v[0]) return 0;
    if (k[1] < e->v[1] || k[1] > e->m[1]) return 0;
    if ((k[2] & e->m[2]) != e->v[2]) return 0;
    return 1;
}

static void test_scan(int lpw) {
    struct ss_switch *sw = ss_switch_new(64, 1);
    uint8_t kinds[3] = {SS_MATCH_TERNARY, SS_MATCH_RANGE, SS_MATCH_OPTIONAL};
    uint16_t widths[3] = {8, 8, 4};
    enum { N = 300 };
    CHECK(ss_define_table(sw, 2, 3, kinds, widths, N, 0, -1, lpw) == 0);
    static scan_ref ref[N];
    int nref = 0;
    uint64_t seq = 0;
    uint64_t v0[3] = {1, 1, 1}, m0[3] = {1, 1, 15};
    CHECK(ss_table_add(sw, 2, v0, m0, 0, 1, NULL, 0) == SS_EINVAL);  /* priority needed */
    m0[2] = 3;
    CHECK(ss_table_add(sw, 2, v0, m0, 5, 1, NULL, 0) == SS_EINVAL);  /* optional: exact or wildcard */
    m0[2] = 15; m0[0] = 0;
    CHECK(ss_table_add(sw, 2, v0, m0, 5, 1, NULL, 0) == SS_EINVAL);  /* value outside mask */
    m0[0] = 1; v0[1] = 5; m0[1] = 4;
    CHECK(ss_table_add(sw, 2, v0, m0, 5, 1, NULL, 0) == SS_EINVAL);  /* low > high */
    for (int step = 0; step < 20000; step++) {
        uint64_t r = rnd() % 10;
        if (r < 3 && nref < N) {
            scan_ref e;
            memset(&e, 0, sizeof e);
            e.m[0] = rndw(8) & rndw(8);
            e.v[0] = rndw(8) & e.m[0];
            uint64_t lo = rndw(8), hi = rndw(8);
            if (lo > hi) { uint64_t t = lo; lo = hi; hi = t; }
            e.v[1] = lo; e.m[1] = hi;
            e.m[2] = rnd() % 2 ? 15 : 0;
            e.v[2] = rndw(4) & e.m[2];
            e.prio = (int32_t)(1 + rnd() % 5);  /* many ties */
            int dup = 0;
            for (int i = 0; i < nref; i++)
                if (ref[i].live && !memcmp(ref[i].v, e.v, sizeof e.v) && !memcmp(ref[i].m, e.m, sizeof e.m) &&
                    ref[i].prio == e.prio)
                    dup = 1;
            uint64_t arg = (uint64_t)nref;
            int rc = ss_table_add(sw, 2, e.v, e.m, e.prio, 3, &arg, 1);
            if (dup) { CHECK(rc == SS_EEXIST); continue; }
            CHECK(rc == 0);
            e.seq = seq++;
            e.live = 1;
            ref[nref++] = e;
        } else if (r < 4 && nref) {
            int i = (int)(rnd() % (uint64_t)nref), live = 0;
            for (int j = 0; j < nref; j++)
                if (ref[j].live && !memcmp(ref[j].v, ref[i].v, sizeof ref[i].v) &&
                    !memcmp(ref[j].m, ref[i].m, sizeof ref[i].m) && ref[j].prio == ref[i].prio)
                    live = 1, i = j;
            CHECK(ss_table_delete(sw, 2, ref[i].v, ref[i].m, ref[i].prio) == (live ? 0 : SS_ENOENT));
            ref[i].live = 0;
        } else {
            uint64_t k[3] = {rndw(8), rndw(8), rndw(4)}, a0;
            int best = -1;
            for (int i = 0; i < nref; i++) {
                if (!ref[i].live || !matches(&ref[i], k)) continue;
                if (best < 0) { best = i; continue; }
                int64_t ri = lpw ? ref[i].prio : -ref[i].prio, rb = lpw ? ref[best].prio : -ref[best].prio;
                if (ri > rb || (ri == rb && ref[i].seq < ref[best].seq)) best = i;
            }
            uint32_t a;
            int hit = apply(sw, 2, k, &a, &a0);
            CHECK(hit == (best >= 0));
            if (hit) CHECK(a == 3 && a0 == (uint64_t)best);
        }
    }
    ss_switch_free(sw);
}

/* two lpm fields: scan mode, ranked by total prefix length */
static void test_two_lpm(void) {
    struct ss_switch *sw = ss_switch_new(64, 1);
    uint8_t kinds[2] = {SS_MATCH_LPM, SS_MATCH_LPM};
    uint16_t widths[2] = {8, 8};
    CHECK(ss_define_table(sw, 0, 2, kinds, widths, 10, 0, -1, 1) == 0);
    uint64_t v1[2] = {0x80, 0}, m1[2] = {1, 0}, v2[2] = {0, 0x80}, m2[2] = {0, 2}, a1 = 1, a2 = 2, a0;
    CHECK(ss_table_add(sw, 0, v1, m1, 0, 1, &a1, 1) == 0);
    CHECK(ss_table_add(sw, 0, v2, m2, 0, 1, &a2, 1) == 0);
    uint64_t k[2] = {0x80, 0x80};
    uint32_t a;
    CHECK(apply(sw, 0, k, &a, &a0) == 1 && a0 == 2);
    ss_switch_free(sw);
}

/* ------------------------------------------------------------------ direct meters */
static void test_direct_meter(void) {
    struct ss_switch *sw = ss_switch_new(64, 1);
    uint8_t kinds[1] = {SS_MATCH_EXACT};
    uint16_t widths[1] = {8};
    CHECK(ss_define_direct_meter(sw, 2, 0) == 0);
    CHECK(ss_define_direct_meter(sw, 8, 0) == SS_EINVAL);
    CHECK(ss_define_table(sw, 0, 1, kinds, widths, 10, 0, 2, 1) == 0);
    uint64_t k = 5, k2 = 6, by, pk;
    CHECK(ss_table_add(sw, 0, &k, NULL, 0, 1, NULL, 0) == 0);
    CHECK(ss_table_add(sw, 0, &k2, NULL, 0, 1, NULL, 0) == 0);
    CHECK(ss_table_direct_counter(sw, 0, &k, NULL, 0, &by, &pk, 0) == SS_ENOENT);
    CHECK(ss_table_direct_meter_config(sw, 0, &k, NULL, 0, 2, 1, 1, 2) == SS_EINVAL);
    CHECK(ss_table_direct_meter_config(sw, 0, &k, NULL, 0, 1, 1, 2, 2) == 0);
    ss_ctx c = ctx(sw, 100);
    uint32_t a;
    const uint64_t *args;
    uint32_t colours[3];
    for (int i = 0; i < 3; i++) {
        CHECK(ss_table_apply(&c, 0, &k, &a, &args) == 1);
        colours[i] = c.last_meter_color[2];
    }
    CHECK(colours[0] == 0 && colours[1] == 1 && colours[2] == 2);
    CHECK(ss_table_apply(&c, 0, &k2, &a, &args) == 1 && c.last_meter_color[2] == 0);  /* unconfigured */
    ss_switch_free(sw);
}

/* ------------------------------------------------------------------ externs */
static void test_externs(void) {
    struct ss_switch *sw = ss_switch_new(64, 42);
    ss_ctx c = ctx(sw, 77);
    CHECK(ss_define_register(sw, 0, 12, 4) == 0);
    CHECK(ss_define_register(sw, 1, 65, 4) == SS_EINVAL);
    ss_register_write(&c, 0, 1, 0xFFFFF);
    CHECK(ss_register_read(&c, 0, 1) == 0xFFF);
    ss_register_write(&c, 0, 4, 1);  /* out of range: ignored */
    CHECK(ss_register_read(&c, 0, 4) == 0 && ss_register_read(&c, 9, 0) == 0);
    uint64_t v, size, stride;
    CHECK(ss_register_set(sw, 0, 2, 0x1000) == SS_EINVAL);
    CHECK(ss_register_set(sw, 0, 2, 0xABC) == 0 && ss_register_get(sw, 0, 2, &v) == 0 && v == 0xABC);
    CHECK(ss_register_cells(&c, 0, &size, &stride)[2] == 0xABC && size == 4 && stride == 1);
    CHECK(ss_register_reset(sw, 0) == 0 && ss_register_get(sw, 0, 2, &v) == 0 && v == 0);

    /* a bank: three registers of 5 cells stored row by row, each still its own register */
    const uint32_t bank_w[3] = {8, 64, 3};
    const uint32_t bad_w[2] = {8, 65};
    CHECK(ss_define_register_bank(sw, 10, 2, bad_w, 5) == SS_EINVAL);
    CHECK(ss_define_register_bank(sw, 10, 0, bank_w, 5) == SS_EINVAL);
    CHECK(ss_define_register_bank(sw, 0, 3, bank_w, 5) == SS_EEXIST);  /* register 0 exists */
    CHECK(ss_define_register_bank(sw, 10, 3, bank_w, 5) == 0);
    CHECK(ss_define_register_bank(sw, 12, 1, bank_w, 5) == SS_EEXIST);
    for (uint64_t i = 0; i < 5; i++)
        for (uint32_t k = 0; k < 3; k++) ss_register_write(&c, 10 + k, i, 0x100 * (k + 1) + i);
    ss_register_write(&c, 11, 5, 7);  /* out of range: ignored, the next row untouched */
    CHECK(ss_register_read(&c, 10, 4) == 0x04 && ss_register_read(&c, 11, 4) == 0x204
          && ss_register_read(&c, 12, 4) == 0x4 && ss_register_read(&c, 11, 5) == 0);
    uint64_t *col = ss_register_cells(&c, 11, &size, &stride);
    CHECK(size == 5 && stride == 3 && col[3 * stride] == 0x203);
    CHECK(ss_register_set(sw, 12, 1, 8) == SS_EINVAL && ss_register_set(sw, 12, 1, 6) == 0);
    CHECK(ss_register_reset(sw, 11) == 0 && ss_register_read(&c, 11, 3) == 0
          && ss_register_read(&c, 10, 3) == 0x03 && ss_register_read(&c, 12, 1) == 6);

    CHECK(ss_define_counter(sw, 1, 3, 1, 1) == 0);
    ss_counter_count(&c, 1, 2);
    ss_counter_count(&c, 1, 2);
    ss_counter_count(&c, 1, 3);
    ss_counter_count(&c, 0, 0);
    uint64_t by, pk;
    CHECK(ss_counter_get(sw, 1, 2, &by, &pk) == 0 && by == 154 && pk == 2);
    CHECK(ss_counter_get(sw, 1, 3, &by, &pk) == SS_EINVAL);
    CHECK(ss_counter_set(sw, 1, 2, 1, 2) == 0 && ss_counter_get(sw, 1, 2, &by, &pk) == 0 && by == 1 && pk == 2);

    CHECK(ss_define_meter(sw, 0, 2, 1) == 0);
    CHECK(ss_meter_execute(&c, 0, 0) == 0);  /* unconfigured: green */
    CHECK(ss_meter_config(sw, 0, 0, 100, 100, 200, 160) == 0);
    CHECK(ss_meter_execute(&c, 0, 0) == 0);  /* 77 bytes: both buckets */
    CHECK(ss_meter_execute(&c, 0, 0) == 1);  /* committed bucket 23 < 77 */
    CHECK(ss_meter_execute(&c, 0, 0) == 2);  /* peak bucket 6 < 77 */
    CHECK(ss_meter_config(sw, 0, 2, 1, 1, 1, 1) == SS_EINVAL);

    CHECK(ss_define_value_set(sw, 0, 2, 2) == 0);
    uint64_t k[2] = {0x12, 0x34}, vv[2] = {0x10, 0x34}, mm[2] = {0xF0, 0xFF};
    CHECK(ss_value_set_match(&c, 0, k) == 0);
    CHECK(ss_value_set_add(sw, 0, vv, mm) == 0);
    CHECK(ss_value_set_match(&c, 0, k) == 1);
    CHECK(ss_value_set_match(&c, 5, k) == 0);
    CHECK(ss_value_set_add(sw, 0, vv, mm) == 0 && ss_value_set_add(sw, 0, vv, mm) == SS_ENOSPC);
    CHECK(ss_value_set_clear(sw, 0) == 0 && ss_value_set_match(&c, 0, k) == 0);
    /* replace: values stored masked (0x1F under 0xF0 is 0x10), all members at once */
    uint64_t rv[4] = {0x1F, 0x34, 0x99, 0x00}, rm[4] = {0xF0, 0xFF, 0xFF, 0x00};
    CHECK(ss_value_set_replace(sw, 0, 2, rv, rm) == 0 && ss_value_set_match(&c, 0, k) == 1);
    uint64_t k2[2] = {0x99, 0x77}, k3[2] = {0x98, 0x77};
    CHECK(ss_value_set_match(&c, 0, k2) == 1 && ss_value_set_match(&c, 0, k3) == 0);
    CHECK(ss_value_set_replace(sw, 0, 3, rv, rm) == SS_ENOSPC);  /* size 2: nothing changed */
    CHECK(ss_value_set_match(&c, 0, k2) == 1);
    CHECK(ss_value_set_replace(sw, 0, 1, rv + 2, rm + 2) == 0);
    CHECK(ss_value_set_match(&c, 0, k) == 0 && ss_value_set_match(&c, 0, k2) == 1);
    CHECK(ss_value_set_replace(sw, 0, 0, NULL, NULL) == 0 && ss_value_set_match(&c, 0, k2) == 0);
    CHECK(ss_value_set_replace(sw, 0, 1, NULL, NULL) == SS_EINVAL);
    CHECK(ss_value_set_replace(sw, 7, 0, NULL, NULL) == SS_ENOENT);
    uint64_t av[2] = {0x3F, 0x34};  /* add masks too */
    CHECK(ss_value_set_add(sw, 0, av, mm) == 0 && ss_value_set_match(&c, 0, (uint64_t[]){0x33, 0x34}) == 1);
    CHECK(ss_value_set_clear(sw, 0) == 0);

    uint64_t hist[5] = {0};
    for (int i = 0; i < 50000; i++) {
        uint64_t r = ss_random(&c, 10, 14);
        CHECK(r >= 10 && r <= 14);
        hist[r - 10]++;
    }
    for (int i = 0; i < 5; i++) CHECK(hist[i] > 9000 && hist[i] < 11000);
    CHECK(ss_random(&c, 7, 7) == 7 && ss_random(&c, 9, 3) == 9);
    (void)ss_random(&c, 0, ~0ull);

    /* digests */
    uint32_t d, nf;
    uint64_t f[4] = {1, 2, 3, 4}, got[4];
    ss_stats qst;
    CHECK(ss_digest_poll(sw, &d, got, 4, &nf, 0) == 0);
    ss_digest(&c, 3, f, 3);
    CHECK(ss_digest_poll(sw, &d, got, 4, &nf, 10) == 1 && d == 3 && nf == 3 && got[2] == 3);
    /* a digest with no fields is delivered as one, not taken for a timeout */
    ss_digest(&c, 5, NULL, 0);
    CHECK(ss_digest_poll(sw, &d, got, 4, &nf, 0) == 1 && d == 5 && nf == 0);
    /* too little room: that digest is dropped and counted, the queue goes on */
    ss_digest(&c, 3, f, 3);
    ss_digest(&c, 6, f, 1);
    CHECK(ss_digest_poll(sw, &d, got, 2, &nf, 0) == SS_ENOSPC);
    CHECK(ss_digest_poll(sw, &d, got, 2, &nf, 0) == 1 && d == 6 && nf == 1 && got[0] == 1);
    CHECK(ss_get_stats(sw, &qst) == 0 && qst.digest_dropped == 1);
    CHECK(ss_digest_poll(sw, &d, got, 4, &nf, 5) == 0);
    CHECK(ss_digest_poll(sw, &d, NULL, 0, NULL, 0) == SS_EINVAL);

    /* packet-in queue: bounded, drops when full, never blocks */
    uint8_t frame[1500], buf[1500];
    for (int i = 0; i < 1500; i++) frame[i] = (uint8_t)i;
    CHECK(ss_packet_in_poll(sw, buf, sizeof buf, 0) == 0);
    int pushed = 0;
    for (int i = 0; i < 4000; i++) ss__packet_in_push(sw, frame, 1500), pushed++;
    int got_n = 0, rc;
    CHECK(ss_packet_in_poll(sw, buf, 100, 0) == SS_ENOSPC);
    while ((rc = ss_packet_in_poll(sw, buf, sizeof buf, 0)) > 0) {
        CHECK(rc == 1500 && memcmp(buf, frame, 1500) == 0);
        got_n++;
    }
    CHECK(got_n > 2000 && got_n < pushed);  /* 4 MiB ring */
    CHECK(ss_get_stats(sw, &qst) == 0 && qst.pktin_dropped == (uint64_t)(pushed - got_n));
    /* a frame too big for the poll's room is dropped (counted above), not left at the head */
    ss__packet_in_push(sw, frame, 1500);
    ss__packet_in_push(sw, frame, 60);
    CHECK(ss_packet_in_poll(sw, buf, 100, 0) == SS_ENOSPC);
    CHECK(ss_packet_in_poll(sw, buf, 100, 0) == 60 && memcmp(buf, frame, 60) == 0);
    CHECK(ss_get_stats(sw, &qst) == 0 && qst.pktin_dropped == (uint64_t)(pushed - got_n) + 1);
    ss__packet_in_push(sw, frame, 60);
    CHECK(ss_packet_in_poll(sw, buf, sizeof buf, -1) == 60);
    ss_switch_free(sw);
}

/* ------------------------------------------------------------------ a range over two limbs */
/* A 128-bit range key as RANGE + RANGE_NEXT (most significant limb first), next to an exact key:
 * low and high compare as 128-bit numbers, so a low bound whose low limb exceeds the high bound's
 * is a valid range when its high limb is smaller. */
static void test_wide_range(void) {
    struct ss_switch *sw = ss_switch_new(64, 1);
    uint8_t kinds[3] = {SS_MATCH_EXACT, SS_MATCH_RANGE, SS_MATCH_RANGE_NEXT};
    uint16_t widths[3] = {8, 64, 64};
    uint8_t bad[2] = {SS_MATCH_RANGE_NEXT, SS_MATCH_RANGE};
    CHECK(ss_define_table(sw, 1, 2, bad, widths + 1, 4, 0, -1, 1) == SS_EINVAL);  /* continues nothing */
    uint8_t bad2[2] = {SS_MATCH_EXACT, SS_MATCH_RANGE_NEXT};
    CHECK(ss_define_table(sw, 1, 2, bad2, widths, 4, 0, -1, 1) == SS_EINVAL);
    CHECK(ss_define_table(sw, 1, 3, kinds, widths, 8, 0, -1, 1) == 0);
    uint64_t args[1] = {7};
    /* [1:5 .. 2:3] (high limb : low limb), priority 2 */
    uint64_t v[3] = {9, 1, 5}, m[3] = {0xff, 2, 3};
    CHECK(ss_table_add(sw, 1, v, m, 2, 1, args, 1) == 0);
    CHECK(ss_table_add(sw, 1, v, m, 2, 1, args, 1) == SS_EEXIST);
    uint64_t rv[3] = {9, 2, 3}, rm[3] = {0xff, 1, 5};
    CHECK(ss_table_add(sw, 1, rv, rm, 3, 2, args, 1) == SS_EINVAL);  /* 2:3 > 1:5: low > high */
    /* everything, priority 1 (loses to the first where both match) */
    uint64_t wv[3] = {9, 0, 0}, wm[3] = {0xff, ~0ull, ~0ull};
    CHECK(ss_table_add(sw, 1, wv, wm, 1, 3, args, 1) == 0);
    uint32_t a = 0;
    uint64_t a0 = 0;
    static const struct { uint64_t hi, lo; uint32_t action; } probe[] = {
        {1, 4, 3}, {1, 5, 1}, {1, ~0ull, 1}, {2, 0, 1}, {2, 3, 1}, {2, 4, 3}, {0, 9, 3}, {3, 0, 3},
    };
    for (unsigned i = 0; i < sizeof probe / sizeof probe[0]; i++) {
        uint64_t k[3] = {9, probe[i].hi, probe[i].lo};
        CHECK(apply(sw, 1, k, &a, &a0) == 1 && a == probe[i].action);
    }
    uint64_t k[3] = {8, 1, 5};  /* the exact key differs */
    CHECK(apply(sw, 1, k, &a, &a0) == 0);
    CHECK(ss_table_delete(sw, 1, v, m, 2) == 0);
    uint64_t k2[3] = {9, 1, 5};
    CHECK(apply(sw, 1, k2, &a, &a0) == 1 && a == 3);
    ss_switch_free(sw);
}

/* ------------------------------------------------------------------ an lpm key over two limbs */
/* A 128-bit lpm key as LPM + LPM_NEXT after an exact key: prefixes around the limb boundary,
 * random lookups against a longest-prefix reference. */
static void test_wide_lpm(void) {
    struct ss_switch *sw = ss_switch_new(64, 1);
    uint8_t kinds[3] = {SS_MATCH_EXACT, SS_MATCH_LPM, SS_MATCH_LPM_NEXT};
    uint16_t widths[3] = {8, 64, 64};
    uint8_t bad[2] = {SS_MATCH_EXACT, SS_MATCH_LPM_NEXT};
    CHECK(ss_define_table(sw, 1, 2, bad, widths, 4, 0, -1, 1) == SS_EINVAL);  /* continues nothing */
    enum { N = 64 };
    CHECK(ss_define_table(sw, 1, 3, kinds, widths, N, 0, -1, 1) == 0);
    uint64_t args[1] = {0};
    uint64_t v[3] = {9, 1, 1}, m[3] = {0xff, 32, 1};
    CHECK(ss_table_add(sw, 1, v, m, 0, 1, args, 1) == SS_EINVAL);  /* a prefix after a partial one */
    static struct { uint64_t hi, lo; uint32_t p; } ref[N];
    static const uint32_t plens[] = {0, 1, 32, 63, 64, 65, 96, 127, 128};
    int n = 0;
    for (int i = 0; i < N; i++) {
        uint32_t p = i < 9 ? plens[i] : (uint32_t)(rnd() % 129);
        uint64_t hi = rnd() & pmask(64, p < 64 ? p : 64), lo = rnd() & pmask(64, p > 64 ? p - 64 : 0);
        if (i >= 9 && i % 3 == 0 && n) {  /* nested under an existing entry */
            hi = ref[i % n].hi & pmask(64, p < 64 ? p : 64);
            lo = ref[i % n].lo & pmask(64, p > 64 ? p - 64 : 0);
        }
        uint64_t kv[3] = {9, hi, lo}, km[3] = {0xff, p < 64 ? p : 64, p > 64 ? p - 64 : 0};
        args[0] = (uint64_t)n;
        int rc = ss_table_add(sw, 1, kv, km, 0, 1, args, 1);
        if (rc == SS_EEXIST) continue;
        CHECK(rc == 0);
        ref[n].hi = hi; ref[n].lo = lo; ref[n].p = p;
        n++;
    }
    for (int round = 0; round < 4000; round++) {
        const int base = (int)(rnd() % (uint64_t)n);
        uint64_t hi = ref[base].hi, lo = ref[base].lo;
        uint32_t flip = (uint32_t)(rnd() % 140);  /* sometimes beyond the key: no flip */
        if (flip < 64) hi ^= 1ull << (63 - flip);
        else if (flip < 128) lo ^= 1ull << (127 - flip);
        if (round % 7 == 0) { hi = rnd(); lo = rnd(); }
        int best = -1;
        for (int i = 0; i < n; i++) {
            uint32_t p = ref[i].p;
            if ((hi & pmask(64, p < 64 ? p : 64)) == ref[i].hi && (lo & pmask(64, p > 64 ? p - 64 : 0)) == ref[i].lo &&
                (best < 0 || p > ref[best].p))
                best = i;
        }
        uint64_t k[3] = {9, hi, lo};
        uint32_t a = 0;
        uint64_t a0 = 0;
        int hit = apply(sw, 1, k, &a, &a0);
        CHECK(hit == (best >= 0));
        if (best >= 0) CHECK(a0 == (uint64_t)best);
    }
    ss_switch_free(sw);
}

int main(void) {
    test_exact();
    test_exact_random();
    test_lpm();
    test_scan(1);
    test_scan(0);
    test_two_lpm();
    test_direct_meter();
    test_externs();
    test_wide_range();
    test_wide_lpm();
    printf("tables: exact, lpm, ternary/range/optional (both priority orders), range and lpm over two limbs, direct counters and meters, externs, queues ok\n");
    return 0;
}
