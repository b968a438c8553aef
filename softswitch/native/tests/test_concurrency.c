/* test_concurrency.c — a data-path thread runs ss_process_batch while the main thread adds and
 * deletes table entries, reads and writes registers, changes multicast groups and polls the
 * packet-in queue; every call takes the switch lock, so sanitizers see no race.  Built with
 * ThreadSanitizer by `make tsan`, with ASan+UBSan by `make test`. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ss_runtime.h"
#include "ss_internal.h"

#define CHECK(x)                                                                     \
    do {                                                                             \
        if (!(x)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #x);    \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

typedef struct { ss_std_meta sm; uint64_t k; } cs_state;
static void cs_init(void *s) { memset(s, 0, sizeof(cs_state)); }
static int cs_parser(ss_ctx *c, void *st) {
    cs_state *s = st;
    if (c->len >= 1) s->k = c->data[0];
    return 0;
}
static void cs_ingress(ss_ctx *c, void *st) {
    cs_state *s = st;
    uint32_t a;
    const uint64_t *args;
    ss_register_write(c, 0, s->k, ss_register_read(c, 0, s->k) + 1);
    if (ss_table_apply(c, 0, &s->k, &a, &args)) s->sm.egress_spec = args[0];
    else s->sm.mcast_grp = 1;
}
static void cs_nop(ss_ctx *c, void *st) { (void)c; (void)st; }
static int cs_deparser(ss_ctx *c, void *st) { (void)c; (void)st; return 0; }
static const ss_program cs = {.abi = SS_ABI_VERSION, .state_size = sizeof(cs_state), .init = cs_init,
                              .parser = cs_parser, .ingress = cs_ingress, .egress = cs_nop,
                              .deparser = cs_deparser, .n_tables = 1, .n_registers = 1};

static struct ss_switch *sw;
static atomic_int stop;

static void *datapath(void *arg) {
    (void)arg;
    uint8_t frames[256][1];
    const uint8_t *ptrs[256];
    uint32_t lens[256];
    for (int i = 0; i < 256; i++) { frames[i][0] = (uint8_t)i; ptrs[i] = frames[i]; lens[i] = 1; }
    uint64_t total = 0;
    while (!atomic_load(&stop)) {
        uint64_t n;
        CHECK(ss_process_batch(sw, 1, ptrs, lens, 256, &n) == 0);
        total += n;
    }
    return (void *)(uintptr_t)total;
}

/* Error messages are per thread: two threads whose calls fail with different messages each
 * read their own (one message per switch was a data race and mixed them up). */
static void *err_worker(void *arg) {
    uint32_t reg = (uint32_t)(uintptr_t)arg;
    char want[64];
    snprintf(want, sizeof want, "register %u is not defined", reg);
    for (int i = 0; i < 20000; i++) {
        uint64_t v;
        CHECK(ss_register_get(sw, reg, 0, &v) == SS_ENOENT);
        CHECK(strcmp(ss_last_error(sw), want) == 0);
    }
    return NULL;
}

static void test_errors_per_thread(void) {
    pthread_t a, b;
    CHECK(pthread_create(&a, NULL, err_worker, (void *)(uintptr_t)1000) == 0);
    CHECK(pthread_create(&b, NULL, err_worker, (void *)(uintptr_t)2000) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
}

/* ss_switch_free while polls block with no timeout: they return SS_EIO, nothing is used after
 * free, nothing hangs (alarm) */
static void *blocked_poll(void *arg) {
    struct ss_switch *s = arg;
    uint8_t b[64];
    return (void *)(intptr_t)ss_packet_in_poll(s, b, sizeof b, -1);
}
static void *blocked_digest(void *arg) {
    struct ss_switch *s = arg;
    uint32_t d, nf;
    uint64_t f[4];
    return (void *)(intptr_t)ss_digest_poll(s, &d, f, 4, &nf, 60000);
}
static void test_free_while_polls_block(void) {
    alarm(20);
    struct ss_switch *s = ss_switch_new(64, 1);
    pthread_t a, b, c;
    CHECK(pthread_create(&a, NULL, blocked_poll, s) == 0);
    CHECK(pthread_create(&b, NULL, blocked_poll, s) == 0);
    CHECK(pthread_create(&c, NULL, blocked_digest, s) == 0);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    ss_switch_free(s);
    void *ra, *rb, *rc;
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    pthread_join(c, &rc);
    CHECK((intptr_t)ra == SS_EIO && (intptr_t)rb == SS_EIO && (intptr_t)rc == SS_EIO);
    alarm(0);
}

int main(void) {
    sw = ss_switch_new(64, 3);
    uint8_t kinds[1] = {SS_MATCH_EXACT};
    uint16_t widths[1] = {8};
    CHECK(ss_define_table(sw, 0, 1, kinds, widths, 256, 1, -1, 1) == 0);
    CHECK(ss_define_register(sw, 0, 32, 256) == 0);
    CHECK(ss_switch_load(sw, &cs) == 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, datapath, NULL) == 0);
    uint32_t ports[2] = {1, 2}, rids[2] = {0, 1};
    for (int i = 0; i < 20000; i++) {
        uint64_t k = (uint64_t)(i % 256), port = 64, v;
        if ((i / 256) % 2 == 0) CHECK(ss_table_add(sw, 0, &k, NULL, 0, 1, &port, 1) == 0);
        else CHECK(ss_table_delete(sw, 0, &k, NULL, 0) == 0);
        CHECK(ss_register_get(sw, 0, k, &v) == 0);
        if (i % 100 == 0) {
            CHECK(ss_mc_group_set(sw, 1, ports, rids, 1 + (uint32_t)(i % 2)) == 0);
            CHECK(ss_register_reset(sw, 0) == 0);
        }
        ss__packet_in_push(sw, (const uint8_t *)"x", 1);
        uint8_t b[16];
        CHECK(ss_packet_in_poll(sw, b, sizeof b, 0) >= 0);
    }
    atomic_store(&stop, 1);
    void *ret;
    pthread_join(th, &ret);
    test_errors_per_thread();
    test_free_while_polls_block();
    ss_stats st;
    CHECK(ss_get_stats(sw, &st) == 0 && st.packets > 0);
    printf("concurrency: %llu packets while 20000 control rounds ran, outputs %llu\n",
           (unsigned long long)st.packets, (unsigned long long)(uintptr_t)ret);
    ss_switch_free(sw);
    return 0;
}
