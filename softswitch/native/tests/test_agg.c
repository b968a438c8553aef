/* test_agg.c — the agg32-like program through ss_process (correctness: register sums and
 * outputs) and ss_process_batch (throughput, packets/s on one core). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ss_runtime.h"

extern const ss_program agg_program;

#define CHECK(x)                                                                     \
    do {                                                                             \
        if (!(x)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #x);    \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static uint32_t get32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static uint32_t make_frame(uint8_t *f, uint32_t slot, uint32_t base) {
    memset(f, 0, 14);
    f[0] = 0x02; f[5] = 0x01; f[6] = 0x02; f[11] = 0x02;
    f[12] = 0x88; f[13] = 0xb5;
    put32(f + 14, slot);
    for (uint32_t i = 0; i < 32; i++) put32(f + 18 + 4 * i, base + i);
    memset(f + 146, 0xAB, 18);  /* payload */
    return 164;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    uint64_t n_bench = argc > 1 ? strtoull(argv[1], NULL, 10) : 0;
    struct ss_switch *sw = ss_switch_new(64, 1);
    CHECK(sw);
    CHECK(ss_switch_load(sw, &agg_program) == SS_ENOENT);  /* registers not defined yet */
    /* one bank of 32, as the compiler lays agg32's registers out (the generated agg32 that
     * tests/test_c_backend.py runs here is refused otherwise; the hand-written one takes both) */
    uint32_t widths[32];
    for (uint32_t i = 0; i < 32; i++) widths[i] = 32;
    CHECK(ss_define_register_bank(sw, 0, 32, widths, 1024) == 0);
    CHECK(ss_define_register(sw, 0, 32, 1024) == SS_EEXIST);
    CHECK(ss_switch_load(sw, &agg_program) == 0);

    /* correctness: three packets into slot 5, one into slot 1029 (= 5 & 1023) */
    uint8_t f[256], buf[4096];
    ss_out outs[4];
    uint32_t len = make_frame(f, 5, 0xFFFFFFF0u);
    int n = ss_process(sw, 3, f, len, outs, 4, buf, sizeof buf);
    CHECK(n == 1 && outs[0].port == 1 && outs[0].length == len);
    CHECK(memcmp(buf, f, len) == 0);  /* first packet: sums = its own values */
    len = make_frame(f, 1029, 0x20);
    n = ss_process(sw, 3, f, len, outs, 4, buf, sizeof buf);
    CHECK(n == 1 && outs[0].length == len);
    for (uint32_t i = 0; i < 32; i++) CHECK(get32(buf + 18 + 4 * i) == ((0xFFFFFFF0u + i + 0x20 + i) & 0xFFFFFFFFu));
    CHECK(memcmp(buf + 146, f + 146, 18) == 0);
    uint64_t v;
    CHECK(ss_register_get(sw, 7, 5, &v) == 0 && v == ((0xFFFFFFF0u + 7 + 0x20 + 7) & 0xFFFFFFFFu));
    CHECK(ss_register_get(sw, 7, 1024, &v) == SS_EINVAL);
    CHECK(ss_register_get(sw, 32, 0, &v) == SS_ENOENT);
    CHECK(strstr(ss_last_error(sw), "register 32") != NULL);
    /* a non-agg frame: forwarded unchanged; a runt: parser error, still forwarded */
    uint8_t g[60] = {0};
    g[12] = 0x08;
    n = ss_process(sw, 2, g, sizeof g, outs, 4, buf, sizeof buf);
    CHECK(n == 1 && outs[0].length == 60 && memcmp(buf, g, 60) == 0);
    n = ss_process(sw, 2, g, 10, outs, 4, buf, sizeof buf);
    CHECK(n == 1 && outs[0].length == 10);
    ss_stats st;
    CHECK(ss_get_stats(sw, &st) == 0 && st.packets == 4 && st.outputs == 4 && st.parser_errors == 1);
    /* output space too small */
    n = ss_process(sw, 2, g, 60, outs, 0, buf, sizeof buf);
    CHECK(n == SS_ENOSPC);
    printf("agg: correctness ok\n");

    if (n_bench) {
        enum { NF = 1024 };
        static uint8_t frames[NF][164];
        const uint8_t *ptrs[NF];
        uint32_t lens[NF];
        for (uint32_t i = 0; i < NF; i++) {
            lens[i] = make_frame(frames[i], i * 7, i);
            ptrs[i] = frames[i];
        }
        uint64_t out = 0, total = 0;
        ss_process_batch(sw, 1, ptrs, lens, NF, &out);  /* warm up */
        double t0 = now();
        while (total < n_bench) {
            uint64_t o = 0;
            CHECK(ss_process_batch(sw, 1, ptrs, lens, NF, &o) == 0);
            CHECK(o == NF);
            total += NF;
        }
        double dt = now() - t0;
        printf("agg: %llu packets in %.3f s = %.0f packets/s (ss_process_batch, batches of %d)\n",
               (unsigned long long)total, dt, (double)total / dt, NF);
        /* one packet per call through ss_process (lock per packet, outputs copied) */
        t0 = now();
        uint64_t m = n_bench / 4;
        for (uint64_t i = 0; i < m; i++) {
            n = ss_process(sw, 1, ptrs[i % NF], lens[i % NF], outs, 4, buf, sizeof buf);
            CHECK(n == 1);
        }
        dt = now() - t0;
        printf("agg: %llu packets in %.3f s = %.0f packets/s (ss_process, one at a time)\n",
               (unsigned long long)m, dt, (double)m / dt);
    }
    ss_switch_free(sw);
    return 0;
}
