/* agg_prog.c — a hand-written ss_program equivalent to bench/p4/agg32.p4 (what the C emitter
 * should produce, roughly): ethernet, then for etherType 0x88b5 a header of a slot and 32
 * bit<32> values, each added into register i at the slot; the sums go back into the packet.
 * AGG_CELLS=1 uses ss_register_cells (direct access), else ss_register_read/write. */
#include <string.h>

#include "ss_runtime.h"

typedef struct {
    ss_std_meta sm;
    uint8_t eth_valid, agg_valid;
    uint64_t dst, src, type;
    uint64_t slot, v[32];
} agg_state;

static inline uint64_t rd(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}
static inline void wr(uint8_t *p, uint64_t v, int n) {
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static void agg_init(void *s) { memset(s, 0, sizeof(agg_state)); }

static int agg_parser(ss_ctx *c, void *st) {
    agg_state *s = st;
    if (c->len - c->off < 14) { s->sm.parser_error = 1; return 1; }
    const uint8_t *p = c->data + c->off;
    s->dst = rd(p, 6);
    s->src = rd(p + 6, 6);
    s->type = rd(p + 12, 2);
    s->eth_valid = 1;
    c->off += 14;
    if (s->type != 0x88b5) return 0;
    if (c->len - c->off < 132) { s->sm.parser_error = 1; return 1; }
    p = c->data + c->off;
    s->slot = rd(p, 4);
    for (int i = 0; i < 32; i++) s->v[i] = rd(p + 4 + 4 * i, 4);
    s->agg_valid = 1;
    c->off += 132;
    return 0;
}

static void agg_ingress(ss_ctx *c, void *st) {
    agg_state *s = st;
    s->sm.egress_spec = 1;
    if (!s->agg_valid) return;
    uint64_t idx = s->slot & 1023;
#if AGG_CELLS
    for (uint32_t i = 0; i < 32; i++) {
        uint64_t size, stride, *cells = ss_register_cells(c, i, &size, &stride);
        if (idx < size) {
            uint64_t t = (cells[idx * stride] + s->v[i]) & 0xFFFFFFFFu;
            cells[idx * stride] = t;
            s->v[i] = t;
        } else {
            s->v[i] = s->v[i];
        }
    }
#else
    for (uint32_t i = 0; i < 32; i++) {
        uint64_t t = (ss_register_read(c, i, idx) + s->v[i]) & 0xFFFFFFFFu;
        ss_register_write(c, i, idx, t);
        s->v[i] = t;
    }
#endif
}

static void agg_nop(ss_ctx *c, void *st) { (void)c; (void)st; }

static int agg_deparser(ss_ctx *c, void *st) {
    agg_state *s = st;
    uint32_t need = (s->eth_valid ? 14u : 0u) + (s->agg_valid ? 132u : 0u);
    if (c->out_cap - c->out_len < need) return -1;
    uint8_t *p = c->out + c->out_len;
    if (s->eth_valid) {
        wr(p, s->dst, 6);
        wr(p + 6, s->src, 6);
        wr(p + 12, s->type, 2);
        p += 14;
    }
    if (s->agg_valid) {
        wr(p, s->slot, 4);
        for (int i = 0; i < 32; i++) wr(p + 4 + 4 * i, s->v[i], 4);
    }
    c->out_len += need;
    return 0;
}

static void agg_preserve(int32_t fl, const void *from, void *to) { (void)fl; (void)from; (void)to; }

static void agg_copy_headers(const void *from, void *to) {
    const agg_state *f = from;
    agg_state *t = to;
    t->eth_valid = f->eth_valid;
    t->agg_valid = f->agg_valid;
    t->dst = f->dst;
    t->src = f->src;
    t->type = f->type;
    t->slot = f->slot;
    memcpy(t->v, f->v, sizeof t->v);
}

static const char *const agg_errors[] = {"NoError", "PacketTooShort"};

const ss_program agg_program = {
    .abi = SS_ABI_VERSION,
    .state_size = sizeof(agg_state),
    .init = agg_init,
    .parser = agg_parser,
    .verify_checksum = agg_nop,
    .ingress = agg_ingress,
    .egress = agg_nop,
    .compute_checksum = agg_nop,
    .deparser = agg_deparser,
    .preserve = agg_preserve,
    .n_registers = 32,
    .n_errors = 2,
    .error_names = agg_errors,
    .copy_headers = agg_copy_headers,
};
