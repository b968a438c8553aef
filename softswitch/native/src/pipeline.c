/* pipeline.c — the v1model driver (softswitch/switch.py process_packet): parser ->
 * verify_checksum -> ingress -> I2E clone / resubmit / multicast | drop | unicast -> egress ->
 * E2E clone / drop -> compute_checksum -> deparser -> payload -> truncate -> recirculate | port.
 *
 * Memory: buffers allocated at load (ss_switch_load): the ingress state, one egress working
 * state, one saved state and frame buffer per resubmit/recirculate pass, one output buffer, and
 * two rings that start small and grow when a packet needs more (kept for later packets): the
 * egress work queue and the E2E clone snapshots.  Egress work runs in FIFO order, as
 * switch.py's egress queue (the replicas of a multicast group, then the E2E clones they made),
 * so a group of n replicas that each clone holds n snapshots at once; SS_MAX_E2E_COPIES bounds
 * both rings.  Replicas get their own copy of the state (memcpy of state_size) when they run;
 * the last multicast replica and a unicast packet run in the ingress state itself. */
#include <stdlib.h>
#include <string.h>

#include "ss_core.h"

static inline ss_std_meta *SM(void *state) { return (ss_std_meta *)state; }

static inline void pass_init(ss_pass *p, struct ss_switch *sw, const uint8_t *data, uint32_t len,
                             uint32_t off) {
    memset(p, 0, sizeof *p);
    p->c.sw = sw;
    p->c.registers = sw->registers;
    p->c.data = data;
    p->c.len = len;
    p->c.off = off;
    p->c.payload_off = off;
    p->c.resubmit_fl = SS_NONE;
    p->c.recirculate_fl = SS_NONE;
    p->c.clone_fl = SS_NONE;
}

/* parser for one pass into `state` (switch.py _parse); returns 0 or the parser's error */
static int parse_into(struct ss_switch *sw, ss_pass *p, void *state, const uint8_t *data, uint32_t len,
                      uint32_t port, uint32_t itype, int32_t fl, const void *fl_src) {
    const ss_program *P = sw->prog;
    P->init(state);
    ss_std_meta *sm = SM(state);
    sm->ingress_port = port;
    sm->instance_type = itype;
    sm->packet_length = len;
    if (fl >= 0 && fl_src && P->preserve) P->preserve(fl, fl_src, state);
    pass_init(p, sw, data, len, 0);
    int err = P->parser(&p->c, state);
    if (p->c.off > len) p->c.off = len;
    p->c.payload_off = p->c.off;
    return err;
}

/* room for one more egress work item: doubles the ring (its order kept) when full.  Callers
 * re-read &sw->eq[...] after anything that may push (egress_step does). */
static int eq_reserve(struct ss_switch *sw) {
    if (sw->eq_n < sw->eq_cap) return 0;
    uint32_t cap = sw->eq_cap, ncap = cap ? 2 * cap : SS_EQ_CAP;
    ss_egress_item *n = malloc((size_t)ncap * sizeof *n);
    if (!n) return -1;
    for (uint32_t i = 0; i < sw->eq_n; i++) n[i] = sw->eq[(sw->eq_head + i) % cap];
    free(sw->eq);
    sw->eq = n;
    sw->eq_cap = ncap;
    sw->eq_head = 0;
    return 0;
}

static int push_egress(struct ss_switch *sw, const ss_egress_item *it) {
    if (eq_reserve(sw)) {
        sw->stats.pipeline_drops++;  /* out of memory */
        return -1;
    }
    sw->eq[(sw->eq_head + sw->eq_n) % sw->eq_cap] = *it;
    sw->eq_n++;
    return 0;
}

/* a free E2E snapshot slot (the ring doubles when all are in use; the slots themselves never
 * move, items point at them); NULL when out of memory */
static void *snap_take(struct ss_switch *sw) {
    if (sw->snap_used == sw->snap_cap) {
        uint32_t cap = sw->snap_cap, ncap = cap ? 2 * cap : SS_E2E_SLOTS;
        void **n = malloc((size_t)ncap * sizeof *n);
        if (!n) return NULL;
        uint32_t i = 0;
        for (; i < cap; i++) n[i] = sw->snaps[(sw->snap_head + i) % cap];
        for (; i < ncap; i++) {
            if (!(n[i] = aligned_alloc(64, sw->slot_size))) {
                while (i-- > cap) free(n[i]);
                free(n);
                return NULL;
            }
        }
        free(sw->snaps);
        sw->snaps = n;
        sw->snap_cap = ncap;
        sw->snap_head = 0;
    }
    void *slot = sw->snaps[(sw->snap_head + sw->snap_used) % sw->snap_cap];
    sw->snap_used++;
    return slot;
}

/* queue a resubmitted/recirculated packet: frame copied, state saved for preserve */
static void push_ingress(struct ss_switch *sw, uint32_t *n_items, const uint8_t *data, uint32_t len,
                         uint32_t port, uint32_t itype, int32_t fl, const void *state) {
    if (*n_items >= SS_MAX_PASSES || len > SS_MAX_FRAME) {
        sw->stats.pipeline_drops++;  /* switch.py: dropped after MAX_LOOPS passes */
        return;
    }
    ss_ingress_item *it = &sw->items[*n_items];
    memcpy(it->buf, data, len);
    memcpy(it->state, state, sw->prog->state_size);
    it->data = it->buf;
    it->len = len;
    it->port = port;
    it->itype = itype;
    it->fl = fl;
    (*n_items)++;
}

static const ss_replicas *session(struct ss_switch *sw, uint32_t id) {
    return (sw->sessions && id < SS_MAX_GROUP) ? sw->sessions[id] : NULL;
}

typedef struct run {
    ss_emit_fn emit;
    void *arg;
    int outputs;
    uint32_t n_items;
} run;

static void run_egress(struct ss_switch *sw, run *r, void *state, uint32_t port, uint32_t rid,
                       uint32_t itype, const uint8_t *data, uint32_t len, uint32_t payload_off,
                       uint32_t truncate, uint32_t cut) {
    const ss_program *P = sw->prog;
    ss_std_meta *sm = SM(state);
    sm->egress_port = port;
    sm->egress_rid = rid;
    sm->instance_type = itype;
    sm->egress_spec = port;
    ss_pass p;
    pass_init(&p, sw, data, len, payload_off);
    p.c.truncate_len = truncate;
    P->egress(&p.c, state);
    if (p.asserted) {
        sw->stats.assert_drops++;
        return;
    }
    if (p.c.clone_fl != SS_NONE && p.c.clone_e2e) {
        const ss_replicas *s = session(sw, p.c.clone_session);
        if (s && s->n) {
            void *snap = NULL;
            /* the limit counts copies (s->n <= 2^20, e2e_copies <= SS_MAX_E2E_COPIES: no overflow) */
            if (sw->e2e_copies + s->n <= SS_MAX_E2E_COPIES && !eq_reserve(sw) && (snap = snap_take(sw))) {
                sw->e2e_copies += s->n;
                memcpy(snap, state, P->state_size);
                ss_egress_item it = {.kind = SS_EQ_E2E, .data = data, .len = len, .payload_off = payload_off,
                                     .n = s->n, .ports = s->ports, .rids = s->rids, .src = snap,
                                     .fl = p.c.clone_fl, .truncate = p.c.truncate_len,
                                     .cut = s->packet_length_bytes};
                push_egress(sw, &it);  /* room reserved above */
            } else {
                sw->stats.clone_drops++;
            }
        }
    }
    if (sm->egress_spec == SS_DROP_PORT) {
        sw->stats.pipeline_drops++;
        return;
    }
    if (P->compute_checksum) {
        p.c.exited = 0;
        P->compute_checksum(&p.c, state);
    }
    uint8_t *out = sw->outbuf;
    uint32_t cap = SS_OUT_HEADROOM;  /* the payload (<= SS_MAX_FRAME) fits after it */
    p.c.exited = 0;
    p.c.out = out;
    p.c.out_len = 0;
    p.c.out_cap = cap;
    if (P->deparser(&p.c, state) < 0 || p.c.out_len > cap) {
        sw->stats.too_long++;
        return;
    }
    uint32_t plen = len - payload_off;  /* payload_off <= len (parse_into) */
    memcpy(out + p.c.out_len, data + payload_off, plen);
    uint32_t total = p.c.out_len + plen;
    if (p.c.truncate_len && total > p.c.truncate_len) total = p.c.truncate_len;
    if (cut && total > cut) total = cut;  /* a clone of a session with packet_length_bytes */
    if (total > SS_MAX_FRAME) {
        sw->stats.too_long++;
        return;
    }
    if (p.c.recirculate_fl != SS_NONE) {
        /* ingress_port 0, as simple_switch: it sets the port only for packets it receives */
        push_ingress(sw, &r->n_items, out, total, 0, SS_RECIRC, p.c.recirculate_fl, state);
        return;
    }
    sw->stats.outputs++;
    r->outputs++;
    r->emit(r->arg, port, out, total);
}

/* run the next replica of the egress queue's head item */
static void egress_step(struct ss_switch *sw, run *r) {
    const ss_program *P = sw->prog;
    ss_egress_item *it = &sw->eq[sw->eq_head];
    uint32_t idx = it->next++;
    int last = it->next >= it->n;
    switch (it->kind) {
    case SS_EQ_UNICAST:
        /* bmv2 leaves instance_type as ingress ends with it (recirculated: 4, resubmitted: 6) */
        run_egress(sw, r, it->src, it->port, 0, SM(it->src)->instance_type, it->data, it->len,
                   it->payload_off, it->truncate, 0);
        break;
    case SS_EQ_MCAST: {
        void *st = it->src;
        if (!last) {
            memcpy(sw->st_eg, it->src, P->state_size);
            st = sw->st_eg;
        }
        run_egress(sw, r, st, it->ports[idx], it->rids[idx], SS_REPLICATION, it->data, it->len,
                   it->payload_off, it->truncate, 0);
        break;
    }
    case SS_EQ_I2E: {
        ss_pass p;
        parse_into(sw, &p, sw->st_eg, it->data, it->len, it->port, SS_I2E_CLONE, it->fl, it->src);
        if (p.asserted) {
            sw->stats.assert_drops++;
            break;
        }
        run_egress(sw, r, sw->st_eg, it->ports[idx], it->rids[idx], SS_I2E_CLONE, it->data, it->len,
                   p.c.payload_off, 0, it->cut);
        break;
    }
    case SS_EQ_E2E: {
        void *st = sw->st_eg;
        const ss_std_meta *ssm = SM(it->src);
        if (P->copy_headers) {
            P->init(st);
            SM(st)->ingress_port = ssm->ingress_port;
            SM(st)->packet_length = ssm->packet_length;
            if (P->preserve) P->preserve(it->fl, it->src, st);
            P->copy_headers(it->src, st);
        } else {
            memcpy(st, it->src, P->state_size);
        }
        run_egress(sw, r, st, it->ports[idx], it->rids[idx], SS_E2E_CLONE, it->data, it->len,
                   it->payload_off, it->truncate, it->cut);
        break;
    }
    }
    /* run_egress may have appended items (the ring does not move the head) */
    it = &sw->eq[sw->eq_head];
    if (it->next >= it->n) {
        if (it->kind == SS_EQ_E2E) {  /* snapshots are released in FIFO order, as taken */
            sw->snap_head = (sw->snap_head + 1) % sw->snap_cap;
            sw->snap_used--;
        }
        sw->eq_head = (sw->eq_head + 1) % sw->eq_cap;
        sw->eq_n--;
    }
}

static void run_ingress(struct ss_switch *sw, run *r, uint32_t k) {
    const ss_program *P = sw->prog;
    ss_ingress_item *in = &sw->items[k];
    void *S = sw->st_in;
    ss_pass p;
    sw->stats.passes++;
    if (parse_into(sw, &p, S, in->data, in->len, in->port, in->itype, in->fl, in->state))
        sw->stats.parser_errors++;
    if (P->verify_checksum && !p.asserted) {
        p.c.exited = 0;
        P->verify_checksum(&p.c, S);
    }
    if (!p.asserted) {
        p.c.exited = 0;
        P->ingress(&p.c, S);
    }
    if (p.asserted) {
        sw->stats.assert_drops++;
        return;
    }
    ss_std_meta *sm = SM(S);
    sw->eq_head = sw->eq_n = 0;
    sw->snap_head = sw->snap_used = 0;
    if (p.c.clone_fl != SS_NONE && !p.c.clone_e2e) {
        const ss_replicas *s = session(sw, p.c.clone_session);
        if (s && s->n) {
            ss_egress_item it = {.kind = SS_EQ_I2E, .data = in->data, .len = in->len, .port = in->port,
                                 .n = s->n, .ports = s->ports, .rids = s->rids, .src = S,
                                 .fl = p.c.clone_fl, .cut = s->packet_length_bytes};
            push_egress(sw, &it);
        }
    }
    if (p.c.resubmit_fl != SS_NONE) {
        push_ingress(sw, &r->n_items, in->data, in->len, 0, SS_RESUBMIT, p.c.resubmit_fl, S);  /* port 0 */
    } else if (sm->mcast_grp) {
        const ss_replicas *g = (sw->groups && sm->mcast_grp < SS_MAX_GROUP) ? sw->groups[sm->mcast_grp] : NULL;
        if (g && g->n) {
            ss_egress_item it = {.kind = SS_EQ_MCAST, .data = in->data, .len = in->len,
                                 .payload_off = p.c.payload_off, .n = g->n, .ports = g->ports,
                                 .rids = g->rids, .src = S, .truncate = p.c.truncate_len};
            push_egress(sw, &it);
        } else {
            sw->stats.pipeline_drops++;
        }
    } else if (sm->egress_spec != SS_DROP_PORT) {
        ss_egress_item it = {.kind = SS_EQ_UNICAST, .data = in->data, .len = in->len,
                             .payload_off = p.c.payload_off, .port = (uint32_t)sm->egress_spec, .n = 1,
                             .src = S, .truncate = p.c.truncate_len};
        push_egress(sw, &it);
    } else {
        sw->stats.pipeline_drops++;
    }
    while (sw->eq_n) egress_step(sw, r);
}

int ss__run_pipeline(struct ss_switch *sw, uint32_t ingress_port, const uint8_t *data, uint32_t len,
                     ss_emit_fn emit, void *arg) {
    if (!sw->prog) return ss__error(sw, SS_EINVAL, "no program loaded");
    if ((!data && len) || len > SS_MAX_FRAME) {
        sw->stats.too_long += len > SS_MAX_FRAME;
        return ss__error(sw, SS_EINVAL, "frame of %u bytes refused", len);
    }
    static const uint8_t empty[1];
    sw->stats.packets++;
    ss_ingress_item *first = &sw->items[0];
    first->data = data ? data : empty;
    first->len = len;
    first->port = ingress_port;
    first->itype = SS_NORMAL;
    first->fl = SS_NONE;
    run r = {.emit = emit, .arg = arg, .outputs = 0, .n_items = 1};
    sw->e2e_copies = 0;
    for (uint32_t k = 0; k < r.n_items; k++) run_ingress(sw, &r, k);
    return r.outputs;
}

/* ------------------------------------------------------------------ in-process API */
typedef struct collect {
    ss_out *outs;
    uint32_t max_outs, n;
    uint8_t *buf;
    uint32_t cap, used;
    int overflow;
} collect;

static void collect_emit(void *arg, uint32_t port, const uint8_t *frame, uint32_t len) {
    collect *c = arg;
    if (c->n >= c->max_outs || len > c->cap - c->used) {
        c->overflow = 1;
        return;
    }
    if (len) memcpy(c->buf + c->used, frame, len);  /* buf may be NULL when buf_cap is 0 */
    c->outs[c->n].port = port;
    c->outs[c->n].offset = c->used;
    c->outs[c->n].length = len;
    c->n++;
    c->used += len;
}

int ss_process(struct ss_switch *sw, uint32_t ingress_port, const uint8_t *data, uint32_t len,
               ss_out *outs, uint32_t max_outs, uint8_t *buf, uint32_t buf_cap) {
    if (!sw) return SS_EINVAL;
    if ((max_outs && !outs) || (buf_cap && !buf)) return ss__error(sw, SS_EINVAL, "no output space");
    collect c = {.outs = outs, .max_outs = max_outs, .buf = buf, .cap = buf_cap};
    ss__lock(sw);
    int rc = ss__run_pipeline(sw, ingress_port, data, len, collect_emit, &c);
    if (rc >= 0 && c.overflow)
        rc = ss__error(sw, SS_ENOSPC, "outputs did not fit (room for %u outputs, %u bytes)", max_outs, buf_cap);
    else if (rc >= 0)
        rc = (int)c.n;
    ss__unlock(sw);
    return rc;
}

/* ss_process_all: append to the switch's own output arrays, growing them (doubling) */
static void owned_emit(void *arg, uint32_t port, const uint8_t *frame, uint32_t len) {
    struct ss_switch *sw = arg;
    if (sw->pout_n == sw->pout_cap) {
        uint32_t ncap = sw->pout_cap ? 2 * sw->pout_cap : 64;
        ss_out *n = ncap > sw->pout_cap ? realloc(sw->pout, (size_t)ncap * sizeof *n) : NULL;
        if (!n) {
            sw->stats.output_drops++;
            return;
        }
        sw->pout = n;
        sw->pout_cap = ncap;
    }
    if (sw->pbuf_used > UINT32_MAX - (size_t)len) {  /* ss_out offsets are uint32_t */
        sw->stats.output_drops++;
        return;
    }
    if (len > sw->pbuf_cap - sw->pbuf_used) {
        size_t need = sw->pbuf_used + len, ncap = sw->pbuf_cap ? sw->pbuf_cap : 65536;
        while (ncap < need) ncap *= 2;
        uint8_t *n = realloc(sw->pbuf, ncap);
        if (!n) {
            sw->stats.output_drops++;
            return;
        }
        sw->pbuf = n;
        sw->pbuf_cap = ncap;
    }
    if (len) memcpy(sw->pbuf + sw->pbuf_used, frame, len);  /* pbuf may still be NULL */
    ss_out *o = &sw->pout[sw->pout_n++];
    o->port = port;
    o->offset = (uint32_t)sw->pbuf_used;
    o->length = len;
    sw->pbuf_used += len;
}

int ss_process_all(struct ss_switch *sw, uint32_t ingress_port, const uint8_t *data, uint32_t len,
                   const ss_out **outs, const uint8_t **buf) {
    if (!sw) return SS_EINVAL;
    if (!outs || !buf) return ss__error(sw, SS_EINVAL, "no output pointers");
    ss__lock(sw);
    sw->pout_n = 0;
    sw->pbuf_used = 0;
    int rc = ss__run_pipeline(sw, ingress_port, data, len, owned_emit, sw);
    if (rc >= 0) rc = (int)sw->pout_n;
    *outs = sw->pout;
    *buf = sw->pbuf;
    ss__unlock(sw);
    return rc;
}

static void count_emit(void *arg, uint32_t port, const uint8_t *frame, uint32_t len) {
    (void)port;
    (void)frame;
    (void)len;
    (*(uint64_t *)arg)++;
}

int ss_process_batch(struct ss_switch *sw, uint32_t ingress_port, const uint8_t *const *frames,
                     const uint32_t *lens, uint32_t n, uint64_t *n_out) {
    if (!sw) return SS_EINVAL;
    if (n && (!frames || !lens)) return ss__error(sw, SS_EINVAL, "frames and lengths are required");
    uint64_t count = 0;
    int rc = SS_OK;
    ss__lock_dp(sw);
    if (!sw->prog) {
        rc = ss__error(sw, SS_EINVAL, "no program loaded");
    } else {
        for (uint32_t i = 0; i < n; i++) ss__run_pipeline(sw, ingress_port, frames[i], lens[i], count_emit, &count);
    }
    ss__unlock(sw);
    if (n_out) *n_out = count;
    return rc;
}
