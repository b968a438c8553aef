/* bench_tables.c — ss_table_apply lookups per second: exact (2 keys, 10k entries), LPM
 * (10k IPv4 prefixes of 8..32 bits) and ternary (100 entries, scanned). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ss_runtime.h"

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (double)t.tv_sec + (double)t.tv_nsec * 1e-9; }

static void run(struct ss_switch *sw, uint32_t table, uint32_t n_keys, const uint64_t *keys, uint32_t nk, const char *what) {
    ss_ctx c;
    memset(&c, 0, sizeof c);
    c.sw = sw;
    c.len = 100;
    uint64_t hits = 0, n = 0;
    double t0 = now();
    for (int rep = 0; rep < 50; rep++)
        for (uint32_t i = 0; i < nk; i++, n++) {
            uint32_t a;
            const uint64_t *args;
            hits += (uint64_t)ss_table_apply(&c, table, keys + (size_t)i * n_keys, &a, &args);
        }
    double dt = now() - t0;
    printf("tables: %-40s %.1f M lookups/s (hit rate %.2f)\n", what, (double)n / dt / 1e6, (double)hits / (double)n);
}

int main(void) {
    struct ss_switch *sw = ss_switch_new(64, 1);
    enum { NE = 10000, NK = 100000 };
    uint8_t ek[2] = {SS_MATCH_EXACT, SS_MATCH_EXACT}, lk[1] = {SS_MATCH_LPM}, tk[2] = {SS_MATCH_TERNARY, SS_MATCH_EXACT};
    uint16_t ew[2] = {48, 12}, lw[1] = {32}, tw[2] = {32, 16};
    ss_define_table(sw, 0, 2, ek, ew, NE, 1, -1, 1);
    ss_define_table(sw, 1, 1, lk, lw, NE, 1, -1, 1);
    ss_define_table(sw, 2, 2, tk, tw, NE, 1, -1, 1);
    static uint64_t ekeys[NK * 2], lkeys[NK], tkeys[NK * 2];
    uint64_t arg = 1;
    for (uint32_t i = 0; i < NE; i++) {
        uint64_t v[2] = {rnd() & 0xFFFFFFFFFFFFull, rnd() & 0xFFF};
        ss_table_add(sw, 0, v, NULL, 0, 1, &arg, 1);
        ekeys[2 * (i % NK)] = v[0];
        ekeys[2 * (i % NK) + 1] = v[1];
        uint32_t p = 8 + (uint32_t)(rnd() % 25);
        uint64_t pv = rnd() & 0xFFFFFFFFull & ~((1ull << (32 - p)) - 1), pm = p;
        ss_table_add(sw, 1, &pv, &pm, 0, 1, &arg, 1);
        lkeys[i] = pv | (rnd() & ((1ull << (32 - p)) - 1));
    }
    for (uint32_t i = NE; i < NK; i++) {
        ekeys[2 * i] = (i % 2) ? ekeys[2 * (i % NE)] : rnd() & 0xFFFFFFFFFFFFull;
        ekeys[2 * i + 1] = ekeys[2 * (i % NE) + 1];
        lkeys[i] = rnd() & 0xFFFFFFFFull;
    }
    for (uint32_t i = 0; i < 100; i++) {
        uint64_t v[2] = {(rnd() & 0xFFFF0000ull), i}, m[2] = {0xFFFF0000ull, 0};
        ss_table_add(sw, 2, v, m, (int32_t)(1 + i), 1, &arg, 1);
    }
    for (uint32_t i = 0; i < NK; i++) { tkeys[2 * i] = rnd() & 0xFFFFFFFFull; tkeys[2 * i + 1] = rnd() % 200; }
    run(sw, 0, 2, ekeys, NK, "exact, 2 keys, 10k entries");
    run(sw, 1, 1, lkeys, NK, "lpm /8../32, 10k prefixes");
    run(sw, 2, 2, tkeys, NK, "ternary+exact, 100 entries (scan)");
    ss_switch_free(sw);
    return 0;
}
