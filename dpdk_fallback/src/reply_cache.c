#include "reply_cache.h"

#include <stdlib.h>
#include <string.h>

struct entry {
    struct rs_knode node; /* first, so a node pointer is an entry pointer */
    struct rs_msg *msg;
};

struct rs_msg *rs_msg_new(const struct rp_header *hdr, const void *body, size_t len)
{
    struct rs_msg *m = malloc(sizeof *m + len);
    if (!m)
        return NULL;
    m->refs = 1;
    m->hdr = *hdr;
    m->len = len;
    m->frag_count = rp_frag_count(len);
    if (len)
        memcpy(m->body, body, len);
    return m;
}

void rs_msg_unref(struct rs_msg *m)
{
    if (m && --m->refs == 0)
        free(m);
}

size_t rs_msg_fragment(const struct rs_msg *m, uint32_t k, uint8_t *out)
{
    struct rp_header h = m->hdr;
    h.frag_index = (uint16_t)k;
    h.frag_count = (uint16_t)m->frag_count;
    rp_header_encode(out, &h);
    size_t off = (size_t)k * RP_FRAG_BYTES;
    size_t n = off < m->len ? m->len - off : 0;
    if (n > RP_FRAG_BYTES)
        n = RP_FRAG_BYTES;
    if (n)
        memcpy(out + RP_HEADER_BYTES, m->body + off, n);
    return RP_HEADER_BYTES + n;
}

int rs_reply_cache_init(struct rs_reply_cache *c, size_t max_entries, size_t max_bytes)
{
    c->max_entries = max_entries;
    c->max_bytes = max_bytes;
    c->bytes = 0;
    c->evictions = 0;
    return rs_kmap_init(&c->map, max_entries < 16 ? 16 : max_entries);
}

static void drop(struct rs_reply_cache *c, struct entry *e)
{
    rs_kmap_remove(&c->map, &e->node);
    c->bytes -= e->msg->len;
    rs_msg_unref(e->msg);
    free(e);
}

void rs_reply_cache_free(struct rs_reply_cache *c)
{
    while (c->map.head)
        drop(c, (struct entry *)c->map.head);
    rs_kmap_free(&c->map);
}

struct rs_msg *rs_reply_cache_get(struct rs_reply_cache *c, const struct rs_key *key)
{
    struct entry *e = (struct entry *)rs_kmap_find(&c->map, key);
    return e ? e->msg : NULL;
}

void rs_reply_cache_put(struct rs_reply_cache *c, const struct rs_key *key, struct rs_msg *msg)
{
    struct entry *old = (struct entry *)rs_kmap_find(&c->map, key);
    if (old)
        drop(c, old);
    if (c->max_entries == 0 || msg->len > c->max_bytes)
        return;
    while (c->map.head && (c->map.count + 1 > c->max_entries || c->bytes + msg->len > c->max_bytes)) {
        drop(c, (struct entry *)c->map.head);
        c->evictions++;
    }
    struct entry *e = malloc(sizeof *e);
    if (!e)
        return; /* not caching is safe: only dedupe/RESEND of this reply are lost */
    e->node.key = *key;
    e->msg = msg;
    msg->refs++;
    c->bytes += msg->len;
    rs_kmap_insert(&c->map, &e->node);
}
