/* test_pipeline.c — the v1model driver with a hand-written program whose packets say what
 * to do (op byte): unicast, multicast, drop, I2E clone, resubmit, assert, table, digest,
 * truncate, recirculate, E2E clone; outputs checked against what softswitch/switch.py does
 * (order, instance_type, egress_rid, preserved field lists, fresh metadata of clones). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ss_runtime.h"

#define CHECK(x)                                                                     \
    do {                                                                             \
        if (!(x)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #x);    \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

/* header h: op(8) a(8) b(16) c(32) o(64) = 16 bytes; meta: fl1 (field list 1), cnt */
typedef struct {
    ss_std_meta sm;
    uint8_t h_valid;
    uint64_t op, a, b, c, o;
    uint64_t fl1, cnt;
} tp_state;

static uint64_t rd(const uint8_t *p, int n) { uint64_t v = 0; for (int i = 0; i < n; i++) v = (v << 8) | p[i]; return v; }
static void wr(uint8_t *p, uint64_t v, int n) { for (int i = n - 1; i >= 0; i--) { p[i] = (uint8_t)v; v >>= 8; } }

static void tp_init(void *s) { memset(s, 0, sizeof(tp_state)); }

static int tp_parser(ss_ctx *c, void *st) {
    tp_state *s = st;
    if (c->len - c->off < 16) { s->sm.parser_error = 1; return 1; }
    const uint8_t *p = c->data + c->off;
    s->op = p[0]; s->a = p[1]; s->b = rd(p + 2, 2); s->c = rd(p + 4, 4); s->o = rd(p + 8, 8);
    s->h_valid = 1;
    c->off += 16;
    return 0;
}

static void tp_ingress(ss_ctx *c, void *st) {
    tp_state *s = st;
    ss_std_meta *sm = &s->sm;
    s->cnt++;
    switch (s->op) {
    case 1: sm->egress_spec = s->b; break;
    case 2: sm->mcast_grp = s->b; break;
    case 3: sm->egress_spec = SS_DROP_PORT; sm->mcast_grp = 0; break;
    case 4: s->fl1 = 0x55; ss_clone(c, 0, (uint32_t)s->b, 1); sm->egress_spec = 1; break;
    case 5:
        s->b = sm->instance_type;
        if (s->fl1 < s->a) { s->fl1++; ss_resubmit(c, 1); }
        sm->egress_spec = 2;
        break;
    case 6: ss_assert_failed(c, "tp.p4:6"); return;
    case 7: {
        uint64_t k = s->c;
        uint32_t action;
        const uint64_t *args;
        ss_table_apply(c, 0, &k, &action, &args);
        if (action == 1) sm->egress_spec = args[0];
        else { sm->egress_spec = SS_DROP_PORT; sm->mcast_grp = 0; }
        break;
    }
    case 8: { uint64_t f[2] = {s->b, s->c}; ss_digest(c, 4, f, 2); sm->egress_spec = 1; break; }
    case 9: ss_truncate(c, (uint32_t)s->a); sm->egress_spec = 1; break;
    case 10: s->b = sm->instance_type; sm->egress_spec = 3; break;
    case 11: case 15: case 16: sm->egress_spec = 1; break;
    case 14: s->fl1 = 0x44; ss_clone(c, 0, (uint32_t)s->b, 1); sm->mcast_grp = 1; break;
    case 17: sm->mcast_grp = s->b; break;
    default: sm->egress_spec = 1;
    }
}

static void tp_egress(ss_ctx *c, void *st) {
    tp_state *s = st;
    ss_std_meta *sm = &s->sm;
    if (s->op == 10) {
        s->c = sm->ingress_port;
        if (s->fl1 < s->a) { s->fl1++; ss_recirculate(c, 1); }
    }
    if ((s->op == 11 || s->op == 15) && sm->instance_type == SS_NORMAL) {
        s->fl1 = 0x77;
        s->c = 0xC10E;
        ss_clone(c, 1, (uint32_t)s->b, 1);
        if (s->op == 15) sm->egress_spec = SS_DROP_PORT;
    }
    if (s->op == 16) ss_clone(c, 1, (uint32_t)s->b, 1);  /* clone of clone of ...: bounded */
    if (s->op == 17 && sm->instance_type == SS_REPLICATION) ss_clone(c, 1, (uint32_t)s->a, 1);
    s->o = (sm->instance_type << 56) | ((sm->egress_rid & 0xFFFF) << 40) | ((s->fl1 & 0xFF) << 32) |
           ((s->cnt & 0xFF) << 24) | (sm->packet_length & 0xFFFFFF);
}

static int tp_deparser(ss_ctx *c, void *st) {
    tp_state *s = st;
    if (!s->h_valid) return 0;
    if (c->out_cap - c->out_len < 16) return -1;
    uint8_t *p = c->out + c->out_len;
    p[0] = (uint8_t)s->op; p[1] = (uint8_t)s->a; wr(p + 2, s->b, 2); wr(p + 4, s->c, 4); wr(p + 8, s->o, 8);
    c->out_len += 16;
    return 0;
}

static void tp_preserve(int32_t fl, const void *from, void *to) {
    if (fl == 1) ((tp_state *)to)->fl1 = ((const tp_state *)from)->fl1;
}

static void tp_copy_headers(const void *from, void *to) {
    const tp_state *f = from;
    tp_state *t = to;
    t->h_valid = f->h_valid; t->op = f->op; t->a = f->a; t->b = f->b; t->c = f->c; t->o = f->o;
}

static const ss_program tp = {
    .abi = SS_ABI_VERSION, .state_size = sizeof(tp_state), .init = tp_init, .parser = tp_parser,
    .ingress = tp_ingress, .egress = tp_egress, .deparser = tp_deparser, .preserve = tp_preserve,
    .n_tables = 1, .copy_headers = tp_copy_headers,
};

/* ------------------------------------------------------------------ helpers */
static struct ss_switch *sw;
static ss_out outs[4096];
static uint8_t obuf[1 << 20];

static int send(uint32_t port, uint8_t op, uint8_t a, uint16_t b, uint32_t c, uint32_t payload) {
    uint8_t f[2048];
    memset(f, 0, sizeof f);
    f[0] = op; f[1] = a; wr(f + 2, b, 2); wr(f + 4, c, 4);
    for (uint32_t i = 0; i < payload; i++) f[16 + i] = (uint8_t)(0xA0 + i);
    return ss_process(sw, port, f, 16 + payload, outs, 4096, obuf, sizeof obuf);
}

typedef struct { uint64_t itype, rid, fl1, cnt, plen, c; } out_info;
static out_info info(int i) {
    const uint8_t *p = obuf + outs[i].offset;
    uint64_t o = rd(p + 8, 8);
    return (out_info){o >> 56, (o >> 40) & 0xFFFF, (o >> 32) & 0xFF, (o >> 24) & 0xFF, o & 0xFFFFFF, rd(p + 4, 4)};
}

int main(void) {
    sw = ss_switch_new(64, 7);
    CHECK(send(1, 1, 0, 2, 0, 0) == SS_EINVAL);  /* no program */
    uint8_t kinds[1] = {SS_MATCH_EXACT};
    uint16_t widths[1] = {32};
    CHECK(ss_define_table(sw, 0, 1, kinds, widths, 16, 0, -1, 1) == 0);
    CHECK(ss_switch_load(sw, &tp) == 0);
    uint32_t gp[3] = {2, 3, 4}, gr[3] = {10, 11, 12}, sp[1] = {9}, sr[1] = {3}, ep[2] = {6, 7}, er[2] = {1, 2};
    CHECK(ss_mc_group_set(sw, 1, gp, gr, 3) == 0);
    CHECK(ss_mc_group_set(sw, 0, gp, gr, 3) == SS_EINVAL);
    CHECK(ss_clone_session_set(sw, 7, sp, sr, 1, 0) == 0);
    CHECK(ss_clone_session_set(sw, 8, ep, er, 2, 0) == 0);
    ss_stats st0, st;

    /* unicast; packet_length; CPU port is an output like any other */
    CHECK(send(1, 1, 0, 5, 0, 4) == 1 && outs[0].port == 5 && outs[0].length == 20);
    out_info o = info(0);
    CHECK(o.itype == 0 && o.rid == 0 && o.cnt == 1 && o.plen == 20);
    CHECK(memcmp(obuf + outs[0].offset + 16, "\xA0\xA1\xA2\xA3", 4) == 0);
    CHECK(send(1, 1, 0, 64, 0, 0) == 1 && outs[0].port == 64);

    /* multicast: replicas in group order, own copies of the state, egress_rid */
    CHECK(send(1, 2, 0, 1, 0, 0) == 3);
    for (int i = 0; i < 3; i++) {
        o = info(i);
        CHECK(outs[i].port == gp[i] && o.itype == SS_REPLICATION && o.rid == gr[i] && o.cnt == 1);
    }
    ss_get_stats(sw, &st0);
    CHECK(send(1, 2, 0, 99, 0, 0) == 0);  /* no such group */
    CHECK(send(1, 3, 0, 0, 0, 0) == 0);   /* dropped */
    ss_get_stats(sw, &st);
    CHECK(st.pipeline_drops == st0.pipeline_drops + 2);
    CHECK(ss_mc_group_delete(sw, 99) == SS_ENOENT);

    /* I2E clone: the clone (re-parsed, fresh metadata + field list) comes first */
    CHECK(send(1, 4, 0, 7, 0, 0) == 2);
    o = info(0);
    CHECK(outs[0].port == 9 && o.itype == SS_I2E_CLONE && o.rid == 3 && o.fl1 == 0x55 && o.cnt == 0);
    o = info(1);
    CHECK(outs[1].port == 1 && o.itype == SS_NORMAL && o.fl1 == 0x55 && o.cnt == 1);
    CHECK(send(1, 4, 0, 99, 0, 0) == 1);  /* no such session: no clone */
    /* I2E clone with multicast */
    CHECK(send(1, 14, 0, 7, 0, 0) == 4);
    CHECK(outs[0].port == 9 && info(0).itype == SS_I2E_CLONE && info(0).fl1 == 0x44);
    CHECK(outs[3].port == 4 && info(3).itype == SS_REPLICATION && info(3).cnt == 1);

    /* resubmit: preserved field list, fresh other metadata; bounded passes */
    CHECK(send(1, 5, 3, 0, 0, 0) == 1);
    o = info(0);
    /* egress of a unicast packet sees the instance_type its ingress ended with (bmv2) */
    CHECK(outs[0].port == 2 && o.itype == SS_RESUBMIT && o.fl1 == 3 && o.cnt == 1);
    CHECK(rd(obuf + outs[0].offset + 2, 2) == SS_RESUBMIT);  /* as ingress saw it */
    CHECK(send(1, 5, 63, 0, 0, 0) == 1);  /* 64 passes: allowed */
    CHECK(send(1, 5, 64, 0, 0, 0) == 0);  /* 65 needed: dropped */

    /* assert */
    ss_get_stats(sw, &st0);
    CHECK(send(1, 6, 0, 0, 0, 0) == 0);
    ss_get_stats(sw, &st);
    CHECK(st.assert_drops == st0.assert_drops + 1);

    /* table */
    uint64_t key = 0x1234, port = 5;
    CHECK(ss_table_add(sw, 0, &key, NULL, 0, 1, &port, 1) == 0);
    CHECK(ss_table_set_default(sw, 0, 2, NULL, 0) == 0);
    CHECK(send(1, 7, 0, 0, 0x1234, 0) == 1 && outs[0].port == 5);
    CHECK(send(1, 7, 0, 0, 0x9999, 0) == 0);

    /* digest */
    uint32_t d, nf;
    uint64_t fields[4];
    CHECK(send(1, 8, 0, 0xBEEF, 0xCAFE, 0) == 1);
    CHECK(ss_digest_poll(sw, &d, fields, 4, &nf, 100) == 1 && d == 4 && nf == 2 && fields[0] == 0xBEEF &&
          fields[1] == 0xCAFE);

    /* truncate */
    CHECK(send(1, 9, 10, 0, 0, 24) == 1 && outs[0].length == 10);
    CHECK(send(1, 9, 0, 0, 0, 24) == 1 && outs[0].length == 40);
    CHECK(send(1, 9, 200, 0, 0, 24) == 1 && outs[0].length == 40);

    /* recirculate: the deparsed packet goes back in, with ingress_port 0 (simple_switch) */
    CHECK(send(1, 10, 2, 0, 0, 3) == 1);
    o = info(0);
    CHECK(outs[0].port == 3 && o.itype == SS_RECIRC && o.fl1 == 2 && o.cnt == 1 && o.c == 0 && o.plen == 19);
    CHECK(rd(obuf + outs[0].offset + 2, 2) == SS_RECIRC);

    /* E2E clone: the original first, then the clones (headers of the original after egress,
     * fresh metadata + field list) */
    CHECK(send(1, 11, 0, 8, 0, 0) == 3);
    CHECK(outs[0].port == 1 && info(0).itype == SS_NORMAL);
    for (int i = 1; i < 3; i++) {
        o = info(i);
        CHECK(outs[i].port == ep[i - 1] && o.itype == SS_E2E_CLONE && o.rid == er[i - 1] && o.fl1 == 0x77 &&
              o.cnt == 0 && o.c == 0xC10E && o.plen == 16);
    }
    CHECK(send(1, 15, 0, 8, 0, 0) == 2 && outs[0].port == 6 && outs[1].port == 7);  /* original dropped */
    /* every egress clones again: bounded by copies, no hang */
    ss_get_stats(sw, &st0);
    CHECK(send(1, 16, 0, 7, 0, 0) == 1 + SS_MAX_E2E_COPIES);
    ss_get_stats(sw, &st);
    CHECK(st.clone_drops == st0.clone_drops + 1);
    /* two copies per clone: still SS_MAX_E2E_COPIES copies, not 2 x SS_MAX_E2E_COPIES events */
    CHECK(send(1, 16, 0, 8, 0, 0) == 1 + SS_MAX_E2E_COPIES);
    /* every replica of a multicast group clones (E2E): all the clones are made, after the
     * replicas (switch.py's egress queue order); more pending clones than the snapshots
     * allocated at load */
    enum { NG = 40 };
    uint32_t bp[NG], br[NG];
    for (uint32_t i = 0; i < NG; i++) bp[i] = 100 + i, br[i] = i;
    CHECK(ss_mc_group_set(sw, 2, bp, br, NG) == 0);
    CHECK(send(1, 17, 7, 2, 0, 0) == 2 * NG);
    for (int i = 0; i < NG; i++) {
        CHECK(outs[i].port == bp[i] && info(i).itype == SS_REPLICATION && info(i).rid == br[i]);
        o = info(NG + i);
        CHECK(outs[NG + i].port == 9 && o.itype == SS_E2E_CLONE && o.rid == 3);
    }
    /* a group larger than the copy limit: the clones past it are dropped and counted */
    enum { NBIG = 1500 };
    static uint32_t gbp[NBIG], gbr[NBIG];
    for (uint32_t i = 0; i < NBIG; i++) gbp[i] = i % 500, gbr[i] = i;
    CHECK(ss_mc_group_set(sw, 3, gbp, gbr, NBIG) == 0);
    ss_get_stats(sw, &st0);
    CHECK(send(1, 17, 7, 3, 0, 0) == NBIG + SS_MAX_E2E_COPIES);
    ss_get_stats(sw, &st);
    CHECK(st.clone_drops == st0.clone_drops + NBIG - SS_MAX_E2E_COPIES);

    /* ss_process_all: no output limit of the caller's (ss_process has room for 4096 here) */
    const ss_out *ao;
    const uint8_t *ab;
    uint8_t big_frame[16 + 1000];
    memset(big_frame, 0x5A, sizeof big_frame);
    big_frame[0] = 17; big_frame[1] = 7; wr(big_frame + 2, 3, 2);
    CHECK(ss_process(sw, 1, big_frame, sizeof big_frame, outs, 4096, obuf, sizeof obuf) == SS_ENOSPC);
    int na = ss_process_all(sw, 1, big_frame, sizeof big_frame, &ao, &ab);
    CHECK(na == NBIG + SS_MAX_E2E_COPIES);
    for (int i = 0; i < na; i++) {
        CHECK(ao[i].length == sizeof big_frame && ao[i].port == (i < NBIG ? gbp[i] : 9u));
        CHECK(ab[ao[i].offset + 16] == 0x5A && ab[ao[i].offset + ao[i].length - 1] == 0x5A);
    }
    CHECK(ss_process_all(sw, 1, NULL, 0, &ao, &ab) == 1 && ao[0].length == 0);  /* empty frame */
    CHECK(ss_process_all(sw, 1, big_frame, 16, NULL, &ab) == SS_EINVAL);
    CHECK(ss_mc_group_delete(sw, 2) == 0 && ss_mc_group_delete(sw, 3) == 0);

    /* parser error: still processed; header invalid so the whole frame is payload */
    ss_get_stats(sw, &st0);
    uint8_t runt[10] = {1, 0, 0, 5};
    CHECK(ss_process(sw, 1, runt, 10, outs, 4, obuf, sizeof obuf) == 1 && outs[0].port == 1 && outs[0].length == 10);
    ss_get_stats(sw, &st);
    CHECK(st.parser_errors == st0.parser_errors + 1);
    CHECK(ss_process(sw, 1, NULL, 0, outs, 4, obuf, sizeof obuf) == 1 && outs[0].length == 0);
    static uint8_t big[SS_MAX_FRAME + 1];
    CHECK(ss_process(sw, 1, big, sizeof big, outs, 4, obuf, sizeof obuf) == SS_EINVAL);

    /* batch */
    uint8_t f1[16] = {1, 0, 0, 5}, f2[16] = {2, 0, 0, 1};
    const uint8_t *frames[2] = {f1, f2};
    uint32_t lens[2] = {16, 16};
    uint64_t n_out = 0;
    CHECK(ss_process_batch(sw, 1, frames, lens, 2, &n_out) == 0 && n_out == 4);

    CHECK(ss_clone_session_delete(sw, 7) == 0 && ss_clone_session_delete(sw, 7) == SS_ENOENT);
    CHECK(ss_mc_group_delete(sw, 1) == 0);
    ss_switch_free(sw);
    printf("pipeline: unicast, multicast, drop, I2E/E2E clones, resubmit, recirculate, truncate, assert, digest, table, parser error ok\n");
    return 0;
}
