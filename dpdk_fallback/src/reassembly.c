#include "reassembly.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct partial {
    struct rs_knode node; /* first: node pointer == partial pointer */
    struct rp_header hdr; /* of the first fragment seen */
    uint32_t received;
    size_t last_len;      /* bytes in the last fragment, once seen */
    int have_last;
    double last_seen;
    size_t cap;           /* frag_count * RP_FRAG_BYTES */
    uint8_t *buf;
    uint8_t bits[];       /* one bit per fragment */
};

int rs_reassembly_init(struct rs_reassembly *r, size_t max_entries, size_t max_bytes, double timeout)
{
    memset(r, 0, sizeof *r);
    r->max_entries = max_entries;
    r->max_bytes = max_bytes;
    r->timeout = timeout;
    return rs_kmap_init(&r->map, max_entries < 16 ? 16 : max_entries);
}

static void drop(struct rs_reassembly *r, struct partial *p)
{
    rs_kmap_remove(&r->map, &p->node);
    r->bytes -= p->cap;
    free(p->buf);
    free(p);
}

void rs_reassembly_free(struct rs_reassembly *r)
{
    while (r->map.head)
        drop(r, (struct partial *)r->map.head);
    rs_kmap_free(&r->map);
}

void rs_reassembly_expire(struct rs_reassembly *r, double now)
{
    /* the age list is ordered by last fragment time, so only the head can be stale */
    while (r->map.head && now - ((struct partial *)r->map.head)->last_seen > r->timeout) {
        drop(r, (struct partial *)r->map.head);
        r->expired++;
    }
}

static struct partial *create(struct rs_reassembly *r, const struct rs_key *key,
                              const struct rp_header *h)
{
    size_t cap = (size_t)h->frag_count * RP_FRAG_BYTES;
    if (cap > r->max_bytes)
        return NULL;
    while (r->map.head && (r->map.count + 1 > r->max_entries || r->bytes + cap > r->max_bytes)) {
        drop(r, (struct partial *)r->map.head);
        r->evicted++;
    }
    struct partial *p = calloc(1, sizeof *p + (h->frag_count + 7u) / 8);
    if (!p)
        return NULL;
    p->buf = malloc(cap);
    if (!p->buf) {
        free(p);
        return NULL;
    }
    p->node.key = *key;
    p->hdr = *h;
    p->cap = cap;
    r->bytes += cap;
    rs_kmap_insert(&r->map, &p->node);
    return p;
}

enum rs_ra_result rs_reassembly_add(struct rs_reassembly *r, const struct rs_key *key,
                                    const struct rp_header *h, const uint8_t *piece, size_t plen,
                                    double now, uint8_t **body, size_t *len, int *status,
                                    char *msg, size_t msglen)
{
    struct partial *p = (struct partial *)rs_kmap_find(&r->map, key);
    if (p && (p->hdr.op != h->op || p->hdr.flags != h->flags || p->hdr.table_id != h->table_id ||
              p->hdr.frag_count != h->frag_count)) {
        snprintf(msg, msglen,
                 "fragment %u of request %u disagrees with its earlier fragments "
                 "(op %u/%u, table %u/%u, frag_count %u/%u, flags %u/%u); request dropped",
                 h->frag_index, h->request_id, h->op, p->hdr.op, h->table_id, p->hdr.table_id,
                 h->frag_count, p->hdr.frag_count, h->flags, p->hdr.flags);
        *status = RP_MALFORMED;
        drop(r, p);
        return RS_RA_ERROR;
    }
    if (!p) {
        p = create(r, key, h);
        if (!p) {
            snprintf(msg, msglen, "no room to reassemble a %u-fragment request", h->frag_count);
            *status = RP_INTERNAL;
            return RS_RA_ERROR;
        }
    }
    p->last_seen = now;
    rs_kmap_touch(&r->map, &p->node);
    uint32_t k = h->frag_index;
    if (p->bits[k / 8] & (1u << (k % 8)))
        return RS_RA_INCOMPLETE; /* duplicate fragment */
    p->bits[k / 8] |= (uint8_t)(1u << (k % 8));
    memcpy(p->buf + (size_t)k * RP_FRAG_BYTES, piece, plen);
    if (k == (uint32_t)h->frag_count - 1) {
        p->have_last = 1;
        p->last_len = plen;
    }
    if (++p->received < h->frag_count)
        return RS_RA_INCOMPLETE;
    *body = p->buf;
    *len = (size_t)(h->frag_count - 1) * RP_FRAG_BYTES + p->last_len;
    p->buf = NULL;
    r->bytes -= p->cap;
    p->cap = 0;
    rs_kmap_remove(&r->map, &p->node);
    free(p);
    return RS_RA_COMPLETE;
}
