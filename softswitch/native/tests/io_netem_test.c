/* io_netem_test.c — unit tests of netem.c with a test clock (no network, no threads).
 * Build: see io_run.sh (ASan + UBSan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netem.h"

static int fails;
#define CHECK(c, ...)                                                   \
    do {                                                                \
        if (!(c)) {                                                     \
            fails++;                                                    \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c); \
            fprintf(stderr, __VA_ARGS__);                               \
            fputc('\n', stderr);                                        \
        }                                                               \
    } while (0)

#define MS 1000000ull
static uint8_t frame[2000];

static void t_loss(void)
{
    ss_nm_params p = {.loss = (uint32_t)(0.2 * 4294967296.0)};
    ss_netem *a = ss_nm_new(&p, 42, 1), *b = ss_nm_new(&p, 42, 1), *c = ss_nm_new(&p, 42, 2);
    int same = 1, diff = 0, lost = 0;
    for (int i = 0; i < 100000; i++) {
        int ra = ss_nm_submit(a, 0, frame, 60), rb = ss_nm_submit(b, 0, frame, 60);
        int rc = ss_nm_submit(c, 0, frame, 60);
        CHECK(ra == SS_NM_PASS || ra == SS_NM_LOST, "loss only never queues (%d)", ra);
        same &= ra == rb;
        diff += ra != rc;
        lost += ra == SS_NM_LOST;
    }
    CHECK(same, "same seed and stream: same losses");
    CHECK(diff > 1000, "another stream loses other frames (%d differ)", diff);
    CHECK(lost > 19000 && lost < 21000, "loss 0.2 of 100000: %d", lost);
    uint64_t l, q, pass;
    ss_nm_counts(a, &l, &q, &pass);
    CHECK(l == (uint64_t)lost && q == 0 && pass == 100000u - (uint64_t)lost, "counts %lu %lu %lu",
          (unsigned long)l, (unsigned long)q, (unsigned long)pass);
    CHECK(!ss_nm_schedules(a), "loss only: no timer");
    ss_nm_free(a);
    ss_nm_free(b);
    ss_nm_free(c);
}

static void t_rate(void)
{
    /* 1250-byte frames at 10 Mbit/s: 1 ms each, back to back */
    ss_nm_params p = {.rate_bps = 10000000, .limit = 5000, .backlog_ns = 2000 * MS};
    ss_netem *d = ss_nm_new(&p, 1, 0);
    uint64_t t0 = 1000 * MS;
    for (int i = 0; i < 1000; i++) {
        frame[0] = (uint8_t)i;
        CHECK(ss_nm_submit(d, t0, frame, 1250) == SS_NM_QUEUED, "frame %d queued", i);
    }
    CHECK(ss_nm_next_due(d) == t0 + MS, "first due after 1 ms: %lu", (unsigned long)(ss_nm_next_due(d) - t0));
    CHECK(ss_nm_pop_due(d, t0 + MS - 1) == NULL, "nothing before 1 ms");
    int n = 0;
    ss_nm_frame *f;
    while ((f = ss_nm_pop_due(d, t0 + 500 * MS))) {
        CHECK(f->len == 1250 && f->data[0] == (uint8_t)n, "frame %d in order", n);
        free(f);
        n++;
    }
    CHECK(n == 500, "500 serialised in 500 ms: %d", n);
    /* a frame submitted later waits behind the queue */
    CHECK(ss_nm_submit(d, t0 + 500 * MS, frame, 1250) == SS_NM_QUEUED, "late frame queued");
    while ((f = ss_nm_pop_due(d, t0 + 1000 * MS))) {
        free(f);
        n++;
    }
    CHECK(n == 1000, "1000 in 1 s: %d", n);
    CHECK(ss_nm_next_due(d) == t0 + 1001 * MS, "late frame behind the others");
    ss_nm_free(d);  /* frees the queued frame */
}

static void t_backlog_limit(void)
{
    ss_nm_params p = {.rate_bps = 10000000, .limit = 1000, .backlog_ns = 100 * MS};
    ss_netem *d = ss_nm_new(&p, 1, 0);
    int q = 0, drop = 0;
    for (int i = 0; i < 300; i++) {
        int r = ss_nm_submit(d, 0, frame, 1250);
        q += r == SS_NM_QUEUED;
        drop += r == SS_NM_QDROP;
    }
    CHECK(q == 101 && drop == 199, "backlog 100 ms at 1 ms a frame: %d queued %d dropped", q, drop);
    ss_nm_free(d);
    ss_nm_params p2 = {.delay_ns = 1000 * MS, .limit = 10};
    d = ss_nm_new(&p2, 1, 0);
    q = drop = 0;
    for (int i = 0; i < 25; i++) {
        int r = ss_nm_submit(d, 0, frame, 100);
        q += r == SS_NM_QUEUED;
        drop += r == SS_NM_QDROP;
    }
    CHECK(q == 10 && drop == 15, "limit 10: %d queued %d dropped", q, drop);
    uint64_t l, qd;
    ss_nm_counts(d, &l, &qd, NULL);
    CHECK(qd == 15 && ss_nm_queued(d) == 10, "qdrop count");
    ss_nm_free(d);
    ss_nm_params p3 = {.delay_ns = MS};  /* limit 0: the default */
    d = ss_nm_new(&p3, 1, 0);
    for (int i = 0; i < 1100; i++)
        ss_nm_submit(d, 0, frame, 10);
    CHECK(ss_nm_queued(d) == SS_NM_DEFAULT_LIMIT, "default limit: %u", ss_nm_queued(d));
    ss_nm_free(d);
}

static void t_delay_jitter(void)
{
    ss_nm_params p = {.delay_ns = 10 * MS, .jitter_ns = 5 * MS, .limit = 100000};
    ss_netem *d = ss_nm_new(&p, 9, 0);
    uint64_t prev = 0, lo = UINT64_MAX, hi = 0;
    int clamped = 0;
    for (uint64_t i = 0; i < 10000; i++) {
        uint64_t now = 100 * MS + i * 2 * MS;  /* one frame per 2 ms */
        ss_nm_submit(d, now, frame, 64);
    }
    ss_nm_frame *f;
    int n = 0;
    uint64_t now = 100 * MS;
    while ((f = ss_nm_pop_due(d, UINT64_MAX - 1))) {
        uint64_t sub = now + (uint64_t)n * 2 * MS;
        CHECK(f->due >= prev, "order kept");
        CHECK(f->due >= sub + 5 * MS, "not earlier than delay - jitter");
        if (f->due > sub + 15 * MS)
            clamped++;  /* only when held behind an earlier frame */
        uint64_t lat = f->due - sub;
        lo = lat < lo ? lat : lo;
        hi = lat > hi ? lat : hi;
        prev = f->due;
        free(f);
        n++;
    }
    CHECK(n == 10000, "all frames out: %d", n);
    CHECK(clamped == 0, "%d later than delay + jitter (order kept can only hold a frame until the previous, which is <= +jitter)", clamped);
    CHECK(lo < 7 * MS && hi > 14 * MS, "jitter spread %lu..%lu us", (unsigned long)(lo / 1000), (unsigned long)(hi / 1000));
    ss_nm_free(d);
    /* delay 0 with jitter only: never before now, never negative */
    ss_nm_params p2 = {.jitter_ns = 5 * MS};
    d = ss_nm_new(&p2, 3, 0);
    for (int i = 0; i < 100; i++)
        CHECK(ss_nm_submit(d, 1000, frame, 64) == SS_NM_QUEUED, "queued");
    CHECK(ss_nm_next_due(d) <= 5 * MS + 1000, "due in range");
    ss_nm_free(d);
}

static void t_transparent(void)
{
    ss_nm_params z = {0};
    CHECK(ss_nm_params_transparent(&z), "zero is transparent");
    ss_nm_params l = {.limit = 5, .backlog_ns = 9};
    CHECK(ss_nm_params_transparent(&l), "limit/backlog alone impair nothing");
    ss_nm_params r = {.rate_bps = 1};
    CHECK(!ss_nm_params_transparent(&r), "rate impairs");
    /* slowest rate, largest frame: no overflow */
    ss_netem *d = ss_nm_new(&r, 0, 0);
    CHECK(ss_nm_submit(d, 0, frame, 0) == SS_NM_QUEUED, "empty frame ok");
    ss_nm_free(d);
    r.backlog_ns = UINT64_MAX;
    d = ss_nm_new(&r, 0, 0);
    static uint8_t big[69631];
    CHECK(ss_nm_submit(d, 0, big, sizeof big) == SS_NM_QUEUED, "big frame");
    CHECK(ss_nm_next_due(d) == 69631ull * 8 * 1000000000ull, "1 bit/s");
    ss_nm_free(d);
    ss_nm_params j = {.delay_ns = UINT64_MAX, .jitter_ns = UINT64_MAX};
    d = ss_nm_new(&j, 0, 0);
    CHECK(ss_nm_submit(d, UINT64_MAX / 4, frame, 1) == SS_NM_QUEUED, "huge delay, no UB");
    ss_nm_free(d);
}

int main(void)
{
    t_loss();
    t_rate();
    t_backlog_limit();
    t_delay_jitter();
    t_transparent();
    if (fails) {
        fprintf(stderr, "io_netem_test: %d failures\n", fails);
        return 1;
    }
    printf("io_netem_test: ok\n");
    return 0;
}
