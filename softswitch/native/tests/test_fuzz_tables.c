/* test_fuzz_tables.c — a bounded random differential test of the match engine at the edges:
 * key widths 1..64 (64 included: masks and prefixes of 1 << 64), LPM prefix lengths 0 and the
 * full width, ranges up to 2^64-1, wildcards, all match kinds mixed, both priority orders; random
 * add / modify / delete / clear with valid and invalid arguments, checked after every step
 * against a brute-force model (softswitch/tables.py rules: exact and LPM identity, longest
 * prefix, then priority, total prefix length, insertion order).  Under ASan+UBSan by `make test`.
 * Usage: test_fuzz_tables [iterations] [seed] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ss_runtime.h"
#include "ss_internal.h"

#define CHECK(x, ...)                                                                    \
    do {                                                                                 \
        if (!(x)) {                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #x);        \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static uint64_t rs;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static uint64_t full(uint32_t w) { return w >= 64 ? ~0ull : (1ull << w) - 1; }
static uint64_t pmask(uint32_t w, uint32_t p) { return p == 0 ? 0 : full(w) & ~(full(w - p)); }
static uint64_t edge(uint32_t w) {  /* values biased to the edges of w bits */
    switch (rnd() % 6) {
    case 0: return 0;
    case 1: return full(w);
    case 2: return full(w) >> 1;
    case 3: return 1;
    default: return rnd() & full(w);
    }
}

#define MAXK 3
#define MAXE 12
typedef struct {
    int used;
    uint64_t v[MAXK], m[MAXK];  /* as given to ss_table_add */
    int32_t prio;
    uint32_t action;
    uint64_t arg;
    uint64_t seq;
} ment;

static uint32_t nk, size;
static uint8_t kinds[MAXK];
static uint16_t widths[MAXK];
static int lpw, needs_prio, scan;
static ment ents[MAXE];
static uint64_t seq;

static int matches(const ment *e, const uint64_t *k) {
    for (uint32_t i = 0; i < nk; i++) {
        uint32_t w = widths[i];
        switch (kinds[i]) {
        case SS_MATCH_EXACT: if (k[i] != e->v[i]) return 0; break;
        case SS_MATCH_LPM: if ((k[i] & pmask(w, (uint32_t)e->m[i])) != e->v[i]) return 0; break;
        case SS_MATCH_TERNARY:
        case SS_MATCH_OPTIONAL: if ((k[i] & e->m[i]) != e->v[i]) return 0; break;
        case SS_MATCH_RANGE: if (k[i] < e->v[i] || k[i] > e->m[i]) return 0; break;
        }
    }
    return 1;
}

static uint32_t plen(const ment *e) {
    uint32_t p = 0;
    for (uint32_t i = 0; i < nk; i++)
        if (kinds[i] == SS_MATCH_LPM) p += (uint32_t)e->m[i];
    return p;
}

static const ment *best(const uint64_t *k) {
    const ment *b = NULL;
    for (int j = 0; j < MAXE; j++) {
        const ment *e = &ents[j];
        if (!e->used || !matches(e, k)) continue;
        if (!b) { b = e; continue; }
        int64_t re = needs_prio ? (lpw ? e->prio : -(int64_t)e->prio) : 0;
        int64_t rb = needs_prio ? (lpw ? b->prio : -(int64_t)b->prio) : 0;
        if (re != rb) { if (re > rb) b = e; continue; }
        if (plen(e) != plen(b)) { if (plen(e) > plen(b)) b = e; continue; }
        if (e->seq < b->seq) b = e;
    }
    return b;
}

static int same_id(const ment *a, const ment *b) {
    for (uint32_t i = 0; i < nk; i++) {
        if (a->v[i] != b->v[i]) return 0;
        if (kinds[i] != SS_MATCH_EXACT && a->m[i] != b->m[i]) return 0;
    }
    return !needs_prio || a->prio == b->prio;
}

/* a random entry, valid (when valid) by the rules of ss_table_add */
static void rand_entry(ment *e, int valid) {
    for (uint32_t i = 0; i < nk; i++) {
        uint32_t w = widths[i];
        uint64_t v = edge(w), m = 0;
        switch (kinds[i]) {
        case SS_MATCH_EXACT: break;
        case SS_MATCH_LPM: {
            uint32_t p = (uint32_t)(rnd() % 3 == 0 ? (rnd() & 1 ? 0 : w) : rnd() % (w + 1));
            m = p;
            v &= pmask(w, p);
            break;
        }
        case SS_MATCH_TERNARY: m = edge(w); v &= m; break;
        case SS_MATCH_OPTIONAL: m = rnd() & 1 ? full(w) : 0; v &= m; break;
        case SS_MATCH_RANGE: {
            uint64_t a = edge(w), b = edge(w);
            v = a < b ? a : b;
            m = a < b ? b : a;
            break;
        }
        }
        e->v[i] = v;
        e->m[i] = m;
    }
    e->prio = needs_prio ? (int32_t)(1 + rnd() % 4) : 0;
    if (rnd() % 16 == 0) e->prio = (int32_t)(rnd() & 1 ? 0x7fffffff : 1);
    if (!valid) {  /* break one thing */
        uint32_t i = (uint32_t)(rnd() % nk);
        uint32_t w = widths[i];
        switch (rnd() % 3) {
        case 0: if (w < 64) e->v[i] |= 1ull << (w + rnd() % (64 - w)); break;
        case 1:
            if (kinds[i] == SS_MATCH_LPM) e->m[i] = w + 1 + rnd() % 100;
            else if (kinds[i] == SS_MATCH_RANGE && e->v[i] != e->m[i]) { uint64_t t = e->v[i]; e->v[i] = e->m[i]; e->m[i] = t; }
            else if (w < 64 && kinds[i] != SS_MATCH_EXACT) e->m[i] |= 1ull << w;
            break;
        default: if (needs_prio) e->prio = -(int32_t)(rnd() % 3); break;
        }
    }
}

static void one_round(uint32_t iters) {
    struct ss_switch *sw = ss_switch_new(64, rnd());
    static const uint16_t wpick[] = {1, 2, 7, 8, 9, 31, 32, 33, 48, 63, 64, 64, 64};
    nk = 1 + (uint32_t)(rnd() % MAXK);
    int n_lpm = 0;
    needs_prio = 0;
    for (uint32_t i = 0; i < nk; i++) {
        kinds[i] = (uint8_t)(rnd() % 5);
        widths[i] = wpick[rnd() % (sizeof wpick / sizeof wpick[0])];
        if (kinds[i] == SS_MATCH_LPM) n_lpm++;
        else if (kinds[i] != SS_MATCH_EXACT) needs_prio = 1;
    }
    scan = needs_prio || n_lpm > 1;
    lpw = (int)(rnd() & 1);
    size = 1 + (uint32_t)(rnd() % MAXE);
    CHECK(ss_define_table(sw, 0, nk, kinds, widths, size, 0, -1, lpw) == SS_OK, "%s", ss_last_error(sw));
    CHECK(ss_define_action(sw, 0, 0) == SS_OK, "%s", ss_last_error(sw));
    CHECK(ss_define_action(sw, 1, 1) == SS_OK, "%s", ss_last_error(sw));
    CHECK(ss_define_action(sw, 2, 20) == SS_OK, "%s", ss_last_error(sw));
    uint64_t dflt = rnd();
    CHECK(ss_table_set_default(sw, 0, 1, &dflt, 1) == SS_OK, "%s", ss_last_error(sw));
    memset(ents, 0, sizeof ents);
    uint32_t count = 0;
    for (uint32_t it = 0; it < iters; it++) {
        int op = (int)(rnd() % 10);
        ment e;
        memset(&e, 0, sizeof e);
        int valid = rnd() % 8 != 0;
        if (op < 5 || count == 0) {  /* add */
            rand_entry(&e, valid);
            e.arg = rnd();
            int dup = -1, freei = -1;
            for (int j = 0; j < MAXE; j++) {
                if (ents[j].used && same_id(&ents[j], &e)) dup = j;
                if (!ents[j].used && freei < 0) freei = j;
            }
            int rc = ss_table_add(sw, 0, e.v, e.m, e.prio, 1, &e.arg, 1);
            if (!valid) {
                CHECK(rc == SS_EINVAL || rc == SS_EEXIST || rc == SS_ENOSPC || rc == SS_OK, "rc %d", rc);
                if (rc == SS_OK) {  /* the breakage happened to be harmless (e.g. prio on exact) */
                    CHECK(dup < 0 && count < size, "accepted a duplicate / overflow");
                    e.used = 1; e.seq = seq++; e.action = 1; ents[freei] = e; count++;
                } else {
                    CHECK(ss_last_error(sw)[0] != 0, "no message");
                }
            } else if (dup >= 0) {
                CHECK(rc == SS_EEXIST, "duplicate: rc %d (%s)", rc, ss_last_error(sw));
            } else if (count >= size) {
                CHECK(rc == SS_ENOSPC, "full: rc %d", rc);
            } else {
                CHECK(rc == SS_OK, "add: rc %d (%s)", rc, ss_last_error(sw));
                e.used = 1; e.seq = seq++; e.action = 1; ents[freei] = e; count++;
            }
        } else if (op < 7) {  /* modify or delete an existing entry (or a missing one) */
            int j = (int)(rnd() % MAXE);
            if (ents[j].used && rnd() % 4) {
                if (op == 5) {  /* action 2 takes 20 arguments: the entry's storage grows */
                    uint64_t a[20];
                    for (int q = 0; q < 20; q++) a[q] = rnd();
                    uint32_t act = (uint32_t)(rnd() % 3), na = act == 2 ? 20 : act;
                    CHECK(ss_table_modify(sw, 0, ents[j].v, ents[j].m, ents[j].prio, act, a, na) == SS_OK,
                          "modify: %s", ss_last_error(sw));
                    ents[j].action = act;
                    ents[j].arg = act ? a[0] : 0;
                } else {
                    CHECK(ss_table_delete(sw, 0, ents[j].v, ents[j].m, ents[j].prio) == SS_OK, "delete: %s",
                          ss_last_error(sw));
                    ents[j].used = 0;
                    count--;
                }
            } else {
                rand_entry(&e, valid);
                int dup = 0;
                for (int q = 0; q < MAXE; q++) dup |= ents[q].used && same_id(&ents[q], &e);
                if (!dup) {
                    int rc = op == 5 ? ss_table_modify(sw, 0, e.v, e.m, e.prio, 1, &e.arg, 1)
                                     : ss_table_delete(sw, 0, e.v, e.m, e.prio);
                    CHECK(rc == SS_ENOENT || (!valid && rc == SS_EINVAL), "missing entry: rc %d", rc);
                }
            }
        } else if (op == 7 && rnd() % 8 == 0) {
            CHECK(ss_table_clear(sw, 0) == SS_OK, "clear");
            memset(ents, 0, sizeof ents);
            count = 0;
        } else {  /* wrong calls: they fail cleanly */
            uint64_t v[MAXK] = {0}, m[MAXK] = {0}, a[2] = {1, 2};
            CHECK(ss_table_add(sw, 1 + (uint32_t)(rnd() % 5000000), v, m, 1, 1, a, 1) == SS_ENOENT, "bad table");
            CHECK(ss_table_add(sw, 0, v, m, 1, 1, a, 2) < 0, "wrong n_args");
            CHECK(ss_table_add(sw, 0, v, m, 1, 7 + (uint32_t)rnd() % 100000, a, 1) < 0, "bad action");
            CHECK(ss_table_add(sw, 0, v, m, 1, 1, NULL, 1) == SS_EINVAL, "NULL args");
            CHECK(ss_table_add(sw, 0, NULL, m, 1, 1, a, 1) == SS_EINVAL, "NULL values");
            CHECK(ss_table_set_default(sw, 0, 1, a, 0xFFFFFFFFu) == SS_EINVAL, "huge n_args");
        }
        /* lookups: keys near the entries and at the edges */
        for (int q = 0; q < 8; q++) {
            uint64_t k[MAXK];
            const ment *src = &ents[rnd() % MAXE];
            for (uint32_t i = 0; i < nk; i++) {
                uint32_t w = widths[i];
                uint64_t x = edge(w);
                if (src->used && rnd() % 3) {
                    x = src->v[i];
                    if (kinds[i] == SS_MATCH_RANGE) x = rnd() & 1 ? src->v[i] : src->m[i];
                    if (kinds[i] != SS_MATCH_EXACT && kinds[i] != SS_MATCH_RANGE) x |= rnd() & full(w) & ~(kinds[i] == SS_MATCH_LPM ? pmask(w, (uint32_t)src->m[i]) : src->m[i]);
                }
                k[i] = x;
            }
            ss_ctx c;
            memset(&c, 0, sizeof c);
            c.sw = sw;
            uint32_t act;
            const uint64_t *args;
            int hit = ss_table_apply(&c, 0, k, &act, &args);
            const ment *b = best(k);
            CHECK(hit == (b != NULL), "hit %d, model %d (round of %u keys)", hit, b != NULL, nk);
            if (b) {
                CHECK(act == b->action && (act == 0 || args[0] == b->arg), "entry: action %u arg %llu, model %u %llu",
                      act, (unsigned long long)args[0], b->action, (unsigned long long)b->arg);
            } else {
                CHECK(act == 1 && args[0] == dflt, "default");
            }
        }
    }
    ss_switch_free(sw);
}

int main(int argc, char **argv) {
    uint32_t rounds = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 400;
    rs = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x9E3779B97F4A7C15ull;
    if (!rs) rs = 1;
    for (uint32_t r = 0; r < rounds; r++) one_round(300);
    printf("fuzz_tables: %u rounds of 300 random control calls and 2400 lookups agree with the model\n", rounds);
    return 0;
}
