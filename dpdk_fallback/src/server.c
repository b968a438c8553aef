#include "server.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERRLEN 256

int rs_server_init(struct rs_server *s, const struct rs_limits *lim, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    s->lim = *lim;
    s->seed = seed;
    rs_rng_seed(&s->rng, seed);
    s->started = rs_now();
    s->txbuf = malloc(RS_TX_BURST * sizeof *s->txbuf);
    if (!s->txbuf ||
        rs_reassembly_init(&s->reasm, lim->reassembly_entries, lim->reassembly_bytes,
                           lim->reassembly_timeout) ||
        rs_reply_cache_init(&s->cache, lim->reply_cache_entries, lim->reply_cache_bytes))
        return -1;
    return 0;
}

static void tx_release(struct rs_tx *tx)
{
    rs_msg_unref(tx->msg);
    free(tx->list);
    tx->msg = NULL;
    tx->list = NULL;
}

void rs_server_free(struct rs_server *s)
{
    for (size_t i = s->tx_head; i < s->tx_len; i++)
        tx_release(&s->txq[i]);
    free(s->txq);
    for (uint16_t i = 0; i < s->n_tables; i++)
        rs_table_free(&s->tables[i]);
    free(s->tables);
    for (uint32_t i = 0; i < s->n_params; i++)
        free(s->params[i].blob);
    free(s->params);
    rs_reassembly_free(&s->reasm);
    rs_reply_cache_free(&s->cache);
    free(s->txbuf);
    memset(s, 0, sizeof *s);
}

int rs_server_add_table(struct rs_server *s, const char *name, uint32_t max_size, double alpha,
                        enum rs_mode mode)
{
    struct rs_table *t = realloc(s->tables, (s->n_tables + 1u) * sizeof *t);
    if (!t)
        return -1;
    s->tables = t;
    if (rs_table_init(&s->tables[s->n_tables], name, max_size, alpha, mode))
        return -1;
    s->n_tables++;
    return 0;
}

int rs_server_set_param_slots(struct rs_server *s, uint32_t n)
{
    if (n <= s->n_params)
        return 0;
    struct rs_param_slot *p = realloc(s->params, n * sizeof *p);
    if (!p)
        return -1;
    memset(p + s->n_params, 0, (n - s->n_params) * sizeof *p);
    s->params = p;
    s->n_params = n;
    return 0;
}

/* ---- reply queue ---------------------------------------------------------------------- */

static void queue(struct rs_server *s, const struct rs_peer *peer, struct rs_msg *msg,
                  uint32_t first, uint32_t count, uint16_t *list)
{
    if (s->tx_len == s->tx_cap && s->tx_head > 0) { /* reuse the consumed front */
        memmove(s->txq, s->txq + s->tx_head, (s->tx_len - s->tx_head) * sizeof *s->txq);
        s->tx_len -= s->tx_head;
        s->tx_head = 0;
    }
    if (s->tx_len == s->tx_cap) {
        size_t cap = s->tx_cap ? 2 * s->tx_cap : 64;
        struct rs_tx *q = realloc(s->txq, cap * sizeof *q);
        if (!q) {
            s->c.tx_dropped += count;
            free(list);
            return;
        }
        s->txq = q;
        s->tx_cap = cap;
    }
    msg->refs++;
    s->txq[s->tx_len++] = (struct rs_tx){*peer, msg, first, count, 0, list};
}

static void advance(struct rs_server *s, int n)
{
    while (s->tx_head < s->tx_len) {
        struct rs_tx *tx = &s->txq[s->tx_head];
        uint32_t take = tx->count - tx->done;
        if ((uint32_t)n < take)
            take = (uint32_t)n;
        tx->done += take;
        n -= (int)take;
        if (tx->done < tx->count)
            break;
        tx_release(tx);
        s->tx_head++;
    }
    if (s->tx_head == s->tx_len)
        s->tx_head = s->tx_len = 0;
}

int rs_server_pending_tx(const struct rs_server *s) { return s->tx_head < s->tx_len; }

void rs_server_flush(struct rs_server *s, struct rs_io *io, double give_up_s)
{
    double stalled_since = 0;
    while (s->tx_head < s->tx_len) {
        int n = 0;
        size_t ti = s->tx_head;
        uint32_t d = s->txq[ti].done;
        while (n < RS_TX_BURST && ti < s->tx_len) {
            struct rs_tx *tx = &s->txq[ti];
            if (d >= tx->count) {
                if (++ti < s->tx_len)
                    d = s->txq[ti].done;
                continue;
            }
            uint32_t k = tx->list ? tx->list[d] : tx->first + d;
            s->txbuf[n].peer = tx->peer;
            s->txbuf[n].len = (uint16_t)rs_msg_fragment(tx->msg, k, s->txbuf[n].data);
            n++;
            d++;
        }
        int sent = n ? io->send_burst(io, s->txbuf, n) : 0;
        if (sent < 0)
            sent = 0;
        s->c.datagrams_sent += (uint64_t)sent;
        advance(s, n ? sent : 0);
        if (n == 0)
            break;
        if (sent > 0) {
            stalled_since = 0;
            continue;
        }
        double now = rs_now();
        if (stalled_since == 0) {
            stalled_since = now;
        } else if (now - stalled_since > give_up_s) { /* the I/O path refuses: drop the rest */
            for (size_t i = s->tx_head; i < s->tx_len; i++) {
                s->c.tx_dropped += s->txq[i].count - s->txq[i].done;
                tx_release(&s->txq[i]);
            }
            s->tx_head = s->tx_len = 0;
            break;
        }
        usleep(100);
    }
}

/* ---- replies ------------------------------------------------------------------------- */

static struct rp_header reply_header(const struct rp_header *req, uint8_t op, uint8_t status)
{
    struct rp_header h = *req;
    h.op = op;
    h.status = status;
    h.version = RP_VERSION;
    h.reserved = 0;
    return h;
}

static void send_msg(struct rs_server *s, const struct rs_peer *peer, const struct rp_header *h,
                     const void *body, size_t len, int cache)
{
    struct rs_msg *m = rs_msg_new(h, body, len);
    if (!m) {
        s->c.tx_dropped++;
        return;
    }
    if (cache) {
        struct rs_key key = {peer->ip, peer->port, h->request_id};
        rs_reply_cache_put(&s->cache, &key, m);
    }
    queue(s, peer, m, 0, m->frag_count, NULL);
    rs_msg_unref(m);
}

static void send_error(struct rs_server *s, const struct rs_peer *peer, const struct rp_header *req,
                       int status, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void send_error(struct rs_server *s, const struct rs_peer *peer, const struct rp_header *req,
                       int status, const char *fmt, ...)
{
    char text[ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    s->c.errors[status]++;
    struct rp_header h = reply_header(req, RP_OP_ERROR, (uint8_t)status);
    send_msg(s, peer, &h, text, strlen(text), 0); /* errors change nothing: not cached */
}

/* ---- ops --------------------------------------------------------------------------------- */

#define FAIL(st, ...)                                                                              \
    do {                                                                                           \
        snprintf(err, ERRLEN, __VA_ARGS__);                                                        \
        return (st);                                                                               \
    } while (0)

static int check_priority(float p) { return isfinite(p) && p >= 0; }

/* A switch-path PUSH (flags MULTI + INSERT): each item's priority field is its fixed-point leaf
 * (u32), and the reply carries the leaves as an UPDATE batch (INSERT) for the switch to set as
 * it passes, then the u64 first key: one datagram, so at most RP_BATCH_MAX_ENTRIES items. */
#define PUSH_LEAVES (RP_FLAG_MULTI | RP_FLAG_INSERT)

/* The reply body of a PUSH with leaves, into `at` (push_leaves_bytes(count) bytes): the batch
 * header, one UPDATE entry per item (its slot, its leaf value as the actor sent it, key + 1 mod
 * 2^32 for the leaf to remember), then the u64 first key (item i's key is first_key + i). */
static size_t push_leaves_bytes(uint32_t count)
{
    return RP_BATCH_HEADER_BYTES + RP_BATCH_ENTRY_BYTES * (size_t)count + 8;
}

static void put_push_leaves(uint8_t *at, const struct rs_table *t, const uint8_t *b, uint32_t count,
                            uint64_t first_key)
{
    memset(at, 0, push_leaves_bytes(count));
    rp_put16(at + 2, (uint16_t)count); /* next stays 0: the switch counts its passes there */
    at += RP_BATCH_HEADER_BYTES;
    size_t off = 4;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t key = first_key + i;
        rp_put32(at, rs_table_slot(t, key));
        rp_put32(at + 4, rp_get32(b + off));
        rp_put32(at + 8, (uint32_t)(key + 1));
        at += RP_BATCH_ENTRY_BYTES;
        off += 8 + rp_get32(b + off + 4);
    }
    rp_put64(at, first_key);
}

static int op_push(struct rs_server *s, struct rs_table *t, const struct rp_header *h,
                   const uint8_t *b, size_t len, struct rs_buf *out, char *err)
{
    /* its flags come back on the reply, which the switch then marks SWITCH_UPDATED: no others */
    int leaves = (h->flags & PUSH_LEAVES) != 0;
    if (leaves && h->flags != PUSH_LEAVES)
        FAIL(RP_MALFORMED, "a PUSH with the leaves in its reply has flags MULTI and INSERT only, not 0x%02x",
             h->flags);
    if (leaves && t->mode != RS_MODE_SWITCH)
        FAIL(RP_MALFORMED, "a PUSH with leaves (flags MULTI + INSERT) is the switch path's; table '%s' "
             "keeps its priorities on the server", t->name);
    if (len < 4)
        FAIL(RP_MALFORMED, "PUSH body is %zu bytes; it needs at least a u32 count", len);
    uint32_t count = rp_get32(b);
    if (leaves && (count == 0 || count > RP_BATCH_MAX_ENTRIES))
        FAIL(RP_TOO_LARGE, "a PUSH with leaves holds 1 to %u items (one reply datagram), not %u",
             RP_BATCH_MAX_ENTRIES, count);
    size_t off = 4;
    /* validate everything before storing anything */
    for (uint32_t i = 0; i < count; i++) {
        if (len - off < 8)
            FAIL(RP_MALFORMED, "PUSH body ends inside item %u of %u", i, count);
        float p = rp_getf32(b + off);
        uint32_t ilen = rp_get32(b + off + 4);
        off += 8;
        if (ilen > s->lim.max_item_bytes)
            FAIL(RP_TOO_LARGE, "item %u is %u bytes; --max-item-bytes is %llu", i, ilen,
                 (unsigned long long)s->lim.max_item_bytes);
        if (ilen > len - off)
            FAIL(RP_MALFORMED, "item %u says %u bytes but only %zu remain", i, ilen, len - off);
        if (t->mode == RS_MODE_HOST && !check_priority(p))
            FAIL(RP_MALFORMED, "item %u has priority %g; priorities must be finite and >= 0", i,
                 (double)p);
        off += ilen;
    }
    if (off != len)
        FAIL(RP_MALFORMED, "PUSH body has %zu bytes after its %u items", len - off, count);
    struct rs_item **items = calloc(count ? count : 1, sizeof *items);
    if (!items)
        FAIL(RP_INTERNAL, "out of memory");
    off = 4;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t ilen = rp_get32(b + off + 4);
        items[i] = malloc(sizeof(struct rs_item) + ilen);
        if (!items[i]) {
            for (uint32_t j = 0; j < i; j++)
                free(items[j]);
            free(items);
            FAIL(RP_INTERNAL, "out of memory storing %u items", count);
        }
        items[i]->len = ilen;
        memcpy(items[i]->data, b + off + 8, ilen);
        off += 8 + ilen;
    }
    /* room for the reply before anything is stored: running out of memory loses nothing */
    uint8_t *reply = rs_buf_grow(out, leaves ? push_leaves_bytes(count) : 4 + 8 * (size_t)count);
    if (!reply) {
        for (uint32_t j = 0; j < count; j++)
            free(items[j]);
        free(items);
        FAIL(RP_INTERNAL, "out of memory");
    }
    uint64_t first_key = t->next_key;
    off = 4;
    for (uint32_t i = 0; i < count; i++) {
        float p = leaves ? 0.0f : rp_getf32(b + off); /* leaves: the switch holds the priority */
        off += 8 + items[i]->len;
        rs_table_insert(t, items[i], p);
    }
    free(items);
    if (leaves) {
        put_push_leaves(reply, t, b, count, first_key);
    } else {
        rp_put32(reply, count);
        for (uint32_t i = 0; i < count; i++)
            rp_put64(reply + 4 + 8 * (size_t)i, first_key + i);
    }
    s->c.pushes++;
    s->c.items_pushed += count;
    return RP_OK;
}

static int put_item(struct rs_buf *out, const struct rs_table *t, uint32_t slot, double prob,
                    double weight)
{
    const struct rs_item *it = t->slots[slot];
    uint8_t *at = rs_buf_grow(out, 20 + (size_t)it->len);
    if (!at)
        return -1;
    rp_put64(at, rs_table_slot_key(t, slot));
    rp_putf32(at + 8, (float)prob);
    rp_putf32(at + 12, (float)weight);
    rp_put32(at + 16, it->len);
    memcpy(at + 20, it->data, it->len);
    return 0;
}

/* One slot the switch chose (index, its priority, the tree's total): the checks of a
 * switch-sampled draw; 0 or the status, with err filled. */
static int check_switch_draw(const struct rs_table *t, uint64_t size, uint32_t index,
                             uint32_t priority, uint32_t total, char *err)
{
    /* an empty tree's walk ends at its last leaf, beyond a smaller table: EMPTY first */
    if (total == 0 || priority == 0)
        FAIL(RP_EMPTY, "the switch's tree for table '%s' holds no priority > 0", t->name);
    if (index >= t->max_size)
        FAIL(RP_BAD_INDEX, "switch index %u is beyond table '%s' (max_size %u)", index, t->name,
             t->max_size);
    if (index >= size)
        FAIL(RP_EMPTY, "switch sampled slot %u of table '%s', which holds no item of priority > 0",
             index, t->name);
    if (total < priority)
        FAIL(RP_MALFORMED, "switch total %u is below the sampled priority %u", total, priority);
    return RP_OK;
}

/* A SAMPLE batch the switch walked (flags MULTI + SWITCH_SAMPLED): one item per entry, in the
 * entries' order, each with its unnormalized weight. */
static int op_sample_batch(struct rs_server *s, struct rs_table *t, const struct rp_header *h,
                           const uint8_t *b, size_t len, struct rs_buf *out, char *err)
{
    if (t->mode != RS_MODE_SWITCH)
        FAIL(RP_MALFORMED, "a SAMPLE batch (flag MULTI) is the switch path's; table '%s' is "
             "sampled by the server (body u32 batch_size, f32 beta)", t->name);
    if (!(h->flags & RP_FLAG_SWITCH_SAMPLED))
        FAIL(RP_NOT_SWITCH_SAMPLED,
             "table '%s' keeps its priorities in the switch, and this SAMPLE batch did not pass "
             "(all the way) through a switch that holds it (control plane not run?)",
             t->name);
    if (len < RP_BATCH_HEADER_BYTES)
        FAIL(RP_MALFORMED, "SAMPLE batch body is %zu bytes; its batch header is 8", len);
    uint32_t next = rp_get16(b), count = rp_get16(b + 2);
    float beta = rp_getf32(b + 4);
    if (count == 0 || count > RP_BATCH_MAX_ENTRIES)
        FAIL(RP_MALFORMED, "SAMPLE batch of %u entries; a batch holds 1 to %u", count,
             RP_BATCH_MAX_ENTRIES);
    if (len != RP_BATCH_HEADER_BYTES + RP_BATCH_ENTRY_BYTES * (size_t)count)
        FAIL(RP_MALFORMED, "SAMPLE batch body is %zu bytes; %u entries need %u", len, count,
             RP_BATCH_HEADER_BYTES + RP_BATCH_ENTRY_BYTES * count);
    if (next != count)
        FAIL(RP_MALFORMED, "the switch did %u of the batch's %u draws", next, count);
    if (!isfinite(beta) || beta < 0)
        FAIL(RP_MALFORMED, "beta %g must be finite and >= 0", (double)beta);
    uint64_t size = rs_table_size(t);
    const uint8_t *e = b + RP_BATCH_HEADER_BYTES;
    for (uint32_t i = 0; i < count; i++, e += RP_BATCH_ENTRY_BYTES) {
        int st = check_switch_draw(t, size, rp_get32(e), rp_get32(e + 4), rp_get32(e + 12), err);
        if (st != RP_OK)
            return st;
    }
    rs_buf_u64(out, size);
    rs_buf_u32(out, count);
    e = b + RP_BATCH_HEADER_BYTES;
    for (uint32_t i = 0; i < count; i++, e += RP_BATCH_ENTRY_BYTES) {
        double prob = (double)rp_get32(e + 4) / (double)rp_get32(e + 12);
        double weight = pow((double)size * prob, -(double)beta);
        if (put_item(out, t, rp_get32(e), prob, weight))
            FAIL(RP_INTERNAL, "out of memory");
    }
    if (out->failed)
        FAIL(RP_INTERNAL, "out of memory");
    if (out->len > s->lim.max_message_bytes)
        FAIL(RP_TOO_LARGE, "the reply would be %zu bytes; --max-message-bytes is %llu", out->len,
             (unsigned long long)s->lim.max_message_bytes);
    t->samples += count;
    s->c.switch_samples++;
    s->c.items_sampled += count;
    return RP_OK;
}

static int op_sample(struct rs_server *s, struct rs_table *t, const struct rp_header *h,
                     const uint8_t *b, size_t len, struct rs_buf *out, char *err)
{
    if (h->flags & RP_FLAG_MULTI)
        return op_sample_batch(s, t, h, b, len, out, err);
    if (len != 8)
        FAIL(RP_MALFORMED, "SAMPLE body is %zu bytes; it is u32 batch_size, f32 beta (8)", len);
    uint32_t batch = rp_get32(b);
    float beta = rp_getf32(b + 4);
    if (!isfinite(beta) || beta < 0)
        FAIL(RP_MALFORMED, "beta %g must be finite and >= 0", (double)beta);
    uint64_t size = rs_table_size(t);
    if (h->flags & RP_FLAG_SWITCH_SAMPLED) {
        /* the switch chose the slot: serve it with its unnormalized weight */
        if (batch != 1)
            FAIL(RP_MALFORMED, "a switch-sampled SAMPLE draws one item; batch_size is %u", batch);
        int st = check_switch_draw(t, size, h->index, h->priority, h->total, err);
        if (st != RP_OK)
            return st;
        double prob = (double)h->priority / (double)h->total;
        double weight = pow((double)size * prob, -(double)beta);
        rs_buf_u64(out, size);
        rs_buf_u32(out, 1);
        if (put_item(out, t, h->index, prob, weight) || out->failed)
            FAIL(RP_INTERNAL, "out of memory");
        if (out->len > s->lim.max_message_bytes)
            FAIL(RP_TOO_LARGE, "the reply would be %zu bytes; --max-message-bytes is %llu",
                 out->len, (unsigned long long)s->lim.max_message_bytes);
        t->samples++;
        s->c.switch_samples++;
        s->c.items_sampled++;
        return RP_OK;
    }
    if (t->mode == RS_MODE_SWITCH)
        FAIL(RP_NOT_SWITCH_SAMPLED,
             "table '%s' keeps its priorities in the switch, and this SAMPLE did not pass "
             "through a switch that holds it (control plane not run?)",
             t->name);
    if (batch == 0)
        FAIL(RP_MALFORMED, "batch_size is 0");
    if (12 + 20 * (uint64_t)batch > s->lim.max_message_bytes)
        FAIL(RP_TOO_LARGE, "a batch of %u cannot fit in --max-message-bytes %llu", batch,
             (unsigned long long)s->lim.max_message_bytes);
    double total = rs_sumtree_total(&t->tree);
    if (!(total > 0))
        FAIL(RP_EMPTY, "table '%s' holds no item of priority > 0 (size %llu)", t->name,
             (unsigned long long)size);
    uint32_t *idx = malloc(batch * sizeof *idx);
    if (!idx)
        FAIL(RP_INTERNAL, "out of memory");
    rs_sumtree_sample(&t->tree, batch, &s->rng, idx);
    uint64_t bytes = 12;
    for (uint32_t i = 0; i < batch; i++)
        bytes += 20 + (uint64_t)t->slots[idx[i]]->len;
    if (bytes > s->lim.max_message_bytes) {
        free(idx);
        FAIL(RP_TOO_LARGE, "the sampled batch is %llu bytes; --max-message-bytes is %llu",
             (unsigned long long)bytes, (unsigned long long)s->lim.max_message_bytes);
    }
    double minleaf = rs_sumtree_min(&t->tree);
    rs_buf_u64(out, size);
    rs_buf_u32(out, batch);
    for (uint32_t i = 0; i < batch; i++) {
        double leaf = rs_sumtree_get(&t->tree, idx[i]);
        /* (N P_i)^-b / (N P_min)^-b = (leaf_i / leaf_min)^-b, <= 1 */
        double weight = pow(leaf / minleaf, -(double)beta);
        if (put_item(out, t, idx[i], leaf / total, weight)) {
            free(idx);
            FAIL(RP_INTERNAL, "out of memory");
        }
    }
    free(idx);
    if (out->failed)
        FAIL(RP_INTERNAL, "out of memory");
    t->samples += batch;
    s->c.samples++;
    s->c.items_sampled += batch;
    return RP_OK;
}

static int op_update(struct rs_server *s, struct rs_table *t, const struct rp_header *h,
                     const uint8_t *b, size_t len, struct rs_buf *out, char *err)
{
    if (t->mode == RS_MODE_SWITCH)
        FAIL(RP_NOT_SWITCH_SAMPLED,
             "table '%s' keeps its priorities in the switch; this UPDATE_PRIORITY reached the "
             "server, so no switch on the way holds the table (control plane not run?)",
             t->name);
    if (h->flags & RP_FLAG_MULTI)
        FAIL(RP_MALFORMED, "an UPDATE_PRIORITY batch (flag MULTI) is the switch path's; table "
             "'%s' takes u32 count, then u64 key, f32 priority per entry", t->name);
    if (len < 4)
        FAIL(RP_MALFORMED, "UPDATE_PRIORITY body is %zu bytes; it needs at least a u32 count", len);
    uint32_t count = rp_get32(b);
    if ((len - 4) % 12 != 0 || (len - 4) / 12 != count)
        FAIL(RP_MALFORMED, "UPDATE_PRIORITY says %u entries (12 bytes each) but carries %zu bytes",
             count, len - 4);
    for (uint32_t i = 0; i < count; i++) { /* validate the batch before applying any of it */
        float p = rp_getf32(b + 4 + 12 * (size_t)i + 8);
        if (!check_priority(p))
            FAIL(RP_MALFORMED, "entry %u has priority %g; priorities must be finite and >= 0", i,
                 (double)p);
    }
    uint32_t updated = 0, ignored = 0;
    for (uint32_t i = 0; i < count; i++) { /* in order, so a repeated key's last entry wins */
        const uint8_t *e = b + 4 + 12 * (size_t)i;
        uint64_t key = rp_get64(e);
        if (rs_table_has_key(t, key)) {
            rs_table_set_priority(t, rs_table_slot(t, key), rp_getf32(e + 8));
            updated++;
        } else {
            ignored++;
        }
    }
    t->updates += updated;
    t->ignored_updates += ignored;
    s->c.updates++;
    s->c.priorities_updated += updated;
    s->c.priorities_ignored += ignored;
    rs_buf_u32(out, updated);
    rs_buf_u32(out, ignored);
    return out->failed ? RP_INTERNAL : RP_OK;
}

static int op_set_params(struct rs_server *s, struct rs_param_slot *p, const uint8_t *b,
                         size_t len, struct rs_buf *out, char *err)
{
    if (len < 8)
        FAIL(RP_MALFORMED, "SET_PARAMS body is %zu bytes; it needs at least a u64 version", len);
    uint64_t version = rp_get64(b);
    if (version == 0)
        FAIL(RP_MALFORMED, "version 0 means 'never set'; use a version >= 1");
    /* a delayed older SET must not overwrite a newer one: the reply says what is stored */
    if (version >= p->version) {
        uint8_t *blob = malloc(len - 8 ? len - 8 : 1);
        if (!blob)
            FAIL(RP_INTERNAL, "out of memory storing %zu bytes of parameters", len - 8);
        memcpy(blob, b + 8, len - 8);
        free(p->blob);
        p->blob = blob;
        p->len = len - 8;
        p->version = version;
    }
    s->c.set_params++;
    rs_buf_u64(out, p->version);
    return out->failed ? RP_INTERNAL : RP_OK;
}

static void json_str(struct rs_buf *o, const char *str)
{
    if (!str) {
        rs_buf_printf(o, "null");
        return;
    }
    rs_buf_u8(o, '"');
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        if (*p == '"' || *p == '\\')
            rs_buf_printf(o, "\\%c", *p);
        else if (*p < 0x20)
            rs_buf_printf(o, "\\u%04x", *p);
        else
            rs_buf_u8(o, *p);
    }
    rs_buf_u8(o, '"');
}

static void info_json(struct rs_server *s, struct rs_buf *o)
{
    double now = rs_now();
    rs_buf_printf(o, "{\"server\":{\"protocol_version\":%d,\"io\":\"%s\",\"port\":%u,"
                     "\"uptime_s\":%.3f,\"seed\":%llu,\"checkpoint\":",
                  RP_VERSION, s->io_name ? s->io_name : "", s->port, now - s->started,
                  (unsigned long long)s->seed);
    json_str(o, s->checkpoint_path);
    rs_buf_printf(o, "},");
    rs_buf_printf(o, "\"limits\":{\"max_item_bytes\":%llu,\"max_message_bytes\":%llu,"
                     "\"reassembly_timeout_s\":%g,\"reassembly_entries\":%zu,\"reassembly_bytes\":%zu,"
                     "\"reply_cache_entries\":%zu,\"reply_cache_bytes\":%zu},",
                  (unsigned long long)s->lim.max_item_bytes,
                  (unsigned long long)s->lim.max_message_bytes, s->lim.reassembly_timeout,
                  s->lim.reassembly_entries, s->lim.reassembly_bytes, s->lim.reply_cache_entries,
                  s->lim.reply_cache_bytes);
    const struct rs_counters *c = &s->c;
#define C(name) (unsigned long long)c->name
    rs_buf_printf(o, "\"counters\":{\"received\":%llu,\"dropped_short\":%llu,\"requests\":%llu,"
                     "\"fragments_in\":%llu,\"duplicates\":%llu,\"resends\":%llu,\"pushes\":%llu,"
                     "\"items_pushed\":%llu,\"samples\":%llu,\"switch_samples\":%llu,"
                     "\"items_sampled\":%llu,\"updates\":%llu,\"priorities_updated\":%llu,"
                     "\"priorities_ignored\":%llu,\"set_params\":%llu,\"get_params\":%llu,"
                     "\"infos\":%llu,\"checkpoints\":%llu,\"datagrams_sent\":%llu,"
                     "\"tx_dropped\":%llu,\"error_replies_suppressed\":%llu,"
                     "\"reassembly_expired\":%llu,\"reassembly_evicted\":%llu,"
                     "\"reply_cache_evictions\":%llu,\"errors\":{",
                  C(received), C(dropped_short), C(requests), C(fragments_in), C(duplicates),
                  C(resends), C(pushes), C(items_pushed), C(samples), C(switch_samples),
                  C(items_sampled), C(updates), C(priorities_updated), C(priorities_ignored),
                  C(set_params), C(get_params), C(infos), C(checkpoints), C(datagrams_sent),
                  C(tx_dropped), C(error_replies_suppressed),
                  (unsigned long long)s->reasm.expired, (unsigned long long)s->reasm.evicted,
                  (unsigned long long)s->cache.evictions);
#undef C
    for (int i = 1; i < RP_STATUS_COUNT; i++)
        rs_buf_printf(o, "%s\"%s\":%llu", i > 1 ? "," : "", rp_status_name(i),
                      (unsigned long long)c->errors[i]);
    rs_buf_printf(o, "}},\"reassembly\":{\"pending\":%zu,\"bytes\":%zu},"
                     "\"reply_cache\":{\"entries\":%zu,\"bytes\":%zu},\"tables\":[",
                  s->reasm.map.count, s->reasm.bytes, s->cache.map.count, s->cache.bytes);
    for (uint16_t i = 0; i < s->n_tables; i++) {
        const struct rs_table *t = &s->tables[i];
        rs_buf_printf(o, "%s{\"id\":%u,\"name\":\"%s\",\"size\":%llu,\"max_size\":%u,\"alpha\":%.17g,"
                         "\"mode\":\"%s\",\"next_key\":%llu,\"inserts\":%llu,\"evictions\":%llu,"
                         "\"samples\":%llu,\"updates\":%llu,\"ignored_updates\":%llu,"
                         "\"total_priority\":%.17g}",
                      i ? "," : "", i, t->name, (unsigned long long)rs_table_size(t), t->max_size,
                      t->alpha, t->mode == RS_MODE_HOST ? "host" : "switch",
                      (unsigned long long)t->next_key, (unsigned long long)t->inserts,
                      (unsigned long long)t->evictions, (unsigned long long)t->samples,
                      (unsigned long long)t->updates, (unsigned long long)t->ignored_updates,
                      t->mode == RS_MODE_HOST ? rs_sumtree_total(&t->tree) : 0.0);
    }
    rs_buf_printf(o, "],\"params\":[");
    for (uint32_t i = 0; i < s->n_params; i++)
        rs_buf_printf(o, "%s{\"slot\":%u,\"version\":%llu,\"bytes\":%zu}", i ? "," : "", i,
                      (unsigned long long)s->params[i].version, s->params[i].len);
    rs_buf_printf(o, "]}");
}

static int is_request_op(uint8_t op)
{
    switch (op) {
    case RP_OP_PUSH:
    case RP_OP_SAMPLE:
    case RP_OP_UPDATE_PRIORITY:
    case RP_OP_SET_PARAMS:
    case RP_OP_GET_PARAMS:
    case RP_OP_INFO:
    case RP_OP_RESEND:
    case RP_OP_CHECKPOINT: return 1;
    default: return 0;
    }
}

static int dispatch(struct rs_server *s, const struct rp_header *h, const uint8_t *b, size_t len,
                    struct rs_buf *out, char *err)
{
    struct rs_table *t = NULL;
    struct rs_param_slot *slot = NULL;
    switch (h->op) {
    case RP_OP_PUSH:
    case RP_OP_SAMPLE:
    case RP_OP_UPDATE_PRIORITY:
        if (h->table_id >= s->n_tables)
            FAIL(RP_UNKNOWN_TABLE, "table %u does not exist (the server has %u tables)",
                 h->table_id, s->n_tables);
        t = &s->tables[h->table_id];
        break;
    case RP_OP_SET_PARAMS:
    case RP_OP_GET_PARAMS:
        if (h->table_id >= s->n_params)
            FAIL(RP_UNKNOWN_TABLE, "parameter slot %u does not exist (the server has %u)",
                 h->table_id, s->n_params);
        slot = &s->params[h->table_id];
        break;
    default: break;
    }
    switch (h->op) {
    case RP_OP_PUSH: return op_push(s, t, h, b, len, out, err);
    case RP_OP_SAMPLE: return op_sample(s, t, h, b, len, out, err);
    case RP_OP_UPDATE_PRIORITY: return op_update(s, t, h, b, len, out, err);
    case RP_OP_SET_PARAMS: return op_set_params(s, slot, b, len, out, err);
    case RP_OP_GET_PARAMS:
        if (len)
            FAIL(RP_MALFORMED, "GET_PARAMS has an empty body, not %zu bytes", len);
        rs_buf_u64(out, slot->version);
        rs_buf_put(out, slot->blob, slot->len);
        s->c.get_params++;
        return out->failed ? RP_INTERNAL : RP_OK;
    case RP_OP_INFO:
        if (len)
            FAIL(RP_MALFORMED, "INFO has an empty body, not %zu bytes", len);
        s->c.infos++;
        info_json(s, out);
        return out->failed ? RP_INTERNAL : RP_OK;
    case RP_OP_CHECKPOINT: {
        if (len)
            FAIL(RP_MALFORMED, "CHECKPOINT has an empty body, not %zu bytes", len);
        if (!s->checkpoint_path)
            FAIL(RP_INTERNAL, "the server was started without --checkpoint PATH");
        if (rs_checkpoint_write(s, s->checkpoint_path, err, ERRLEN))
            return RP_INTERNAL;
        s->c.checkpoints++;
        rs_buf_put(out, s->checkpoint_path, strlen(s->checkpoint_path));
        return out->failed ? RP_INTERNAL : RP_OK;
    }
    default: FAIL(RP_UNKNOWN_OP, "op %u is not a request op", h->op);
    }
}

static void op_resend(struct rs_server *s, const struct rs_peer *peer, const struct rp_header *h,
                      const uint8_t *b, size_t len)
{
    if (len < 4 || (len - 4) % 2 != 0 || (len - 4) / 2 != rp_get32(b) || len == 4) {
        send_error(s, peer, h, RP_MALFORMED,
                   "RESEND body is u32 count (>= 1), then a u16 fragment index per count");
        return;
    }
    struct rs_key key = {peer->ip, peer->port, h->request_id};
    struct rs_msg *m = rs_reply_cache_get(&s->cache, &key);
    if (!m) {
        send_error(s, peer, h, RP_NOT_CACHED,
                   "the reply to request %u is no longer cached: send the request again",
                   h->request_id);
        return;
    }
    uint32_t count = rp_get32(b);
    uint16_t *list = malloc(count * sizeof *list);
    if (!list) {
        send_error(s, peer, h, RP_INTERNAL, "out of memory");
        return;
    }
    for (uint32_t i = 0; i < count; i++) {
        list[i] = rp_get16(b + 4 + 2 * (size_t)i);
        if (list[i] >= m->frag_count) {
            send_error(s, peer, h, RP_MALFORMED, "fragment %u does not exist: the reply has %u",
                       list[i], m->frag_count);
            free(list);
            return;
        }
    }
    s->c.resends++;
    queue(s, peer, m, 0, count, list);
}

static void complete(struct rs_server *s, const struct rs_peer *peer, const struct rp_header *h,
                     const uint8_t *body, size_t len)
{
    s->c.requests++;
    if (h->op == RP_OP_RESEND) {
        op_resend(s, peer, h, body, len);
        return;
    }
    struct rs_key key = {peer->ip, peer->port, h->request_id};
    struct rs_msg *cached = rs_reply_cache_get(&s->cache, &key);
    if (cached && cached->hdr.op == h->op + 1 && cached->hdr.table_id == h->table_id) {
        s->c.duplicates++; /* answered already: send the same reply, do not run it twice */
        queue(s, peer, cached, 0, cached->frag_count, NULL);
        return;
    }
    struct rs_buf out;
    rs_buf_init(&out);
    char err[ERRLEN] = "";
    int status = dispatch(s, h, body, len, &out, err);
    if (status == RP_OK && out.len > RP_MAX_MESSAGE) {
        status = RP_TOO_LARGE;
        snprintf(err, sizeof err, "reply of %zu bytes exceeds %u fragments", out.len,
                 RP_MAX_FRAGMENTS);
    }
    if (status == RP_OK) {
        struct rp_header rh = reply_header(h, (uint8_t)(h->op + 1), RP_OK);
        send_msg(s, peer, &rh, out.data, out.len, 1);
    } else {
        send_error(s, peer, h, status, "%s", err);
    }
    rs_buf_free(&out);
}

void rs_server_handle(struct rs_server *s, const struct rs_datagram *dg, double now)
{
    s->c.received++;
    if (dg->len < RP_HEADER_BYTES) {
        s->c.dropped_short++;
        return;
    }
    struct rp_header h;
    rp_header_decode(dg->data, &h);
    const uint8_t *piece = dg->data + RP_HEADER_BYTES;
    size_t plen = dg->len - RP_HEADER_BYTES;
    const struct rs_peer *peer = &dg->peer;
    if (h.version != RP_VERSION) {
        send_error(s, peer, &h, RP_BAD_VERSION, "protocol version %u; this server speaks %d",
                   h.version, RP_VERSION);
        return;
    }
    if (!is_request_op(h.op)) {
        send_error(s, peer, &h, RP_UNKNOWN_OP,
                   "op %u is not a request (PUSH 1, SAMPLE 3, UPDATE_PRIORITY 5, SET_PARAMS 7, "
                   "GET_PARAMS 9, INFO 11, RESEND 13, CHECKPOINT 15)",
                   h.op);
        return;
    }
    if (h.frag_count == 0 || h.frag_index >= h.frag_count) {
        send_error(s, peer, &h, RP_MALFORMED, "fragment %u of %u", h.frag_index, h.frag_count);
        return;
    }
    int last = h.frag_index == h.frag_count - 1;
    if (plen > RP_FRAG_BYTES || (!last && plen != RP_FRAG_BYTES)) {
        send_error(s, peer, &h, RP_MALFORMED,
                   "fragment %u of %u carries %zu body bytes; every fragment but the last "
                   "carries exactly %d, the last at most %d",
                   h.frag_index, h.frag_count, plen, RP_FRAG_BYTES, RP_FRAG_BYTES);
        return;
    }
    uint64_t at_least = (uint64_t)(h.frag_count - 1) * RP_FRAG_BYTES + (last ? plen : 0);
    if (at_least > s->lim.max_message_bytes) {
        /* answer the first and last fragment only, not every one of a huge message */
        if (h.frag_index == 0 || last)
            send_error(s, peer, &h, RP_TOO_LARGE,
                       "a %u-fragment message is above --max-message-bytes %llu", h.frag_count,
                       (unsigned long long)s->lim.max_message_bytes);
        else
            s->c.error_replies_suppressed++;
        return;
    }
    if (h.frag_count == 1) {
        complete(s, peer, &h, piece, plen);
        return;
    }
    s->c.fragments_in++;
    struct rs_key key = {peer->ip, peer->port, h.request_id};
    uint8_t *body = NULL;
    size_t len = 0;
    int status = 0;
    char err[ERRLEN];
    enum rs_ra_result r = rs_reassembly_add(&s->reasm, &key, &h, piece, plen, now, &body, &len,
                                            &status, err, sizeof err);
    if (r == RS_RA_ERROR) {
        send_error(s, peer, &h, status, "%s", err);
    } else if (r == RS_RA_COMPLETE) {
        h.frag_index = 0;
        complete(s, peer, &h, body, len);
        free(body);
    }
}

void rs_server_tick(struct rs_server *s, double now) { rs_reassembly_expire(&s->reasm, now); }
