/* Intrusive hash map keyed by (peer address, request_id) that also keeps its entries in
 * insertion/use order, oldest first, so stores bounded in count and bytes can evict the
 * oldest entry in O(1). Shared by the reassembly store and the reply cache. */
#ifndef RS_KMAP_H
#define RS_KMAP_H

#include <stddef.h>
#include <stdint.h>

struct rs_key {
    uint32_t ip;   /* network order, as in rs_peer */
    uint16_t port; /* network order */
    uint32_t request_id;
};

struct rs_knode {
    struct rs_key key;
    struct rs_knode *hnext;      /* bucket chain */
    struct rs_knode *prev, *next; /* age list: head is the oldest */
};

struct rs_kmap {
    struct rs_knode **buckets;
    size_t nbuckets; /* power of two */
    struct rs_knode *head, *tail;
    size_t count;
};

int rs_kmap_init(struct rs_kmap *m, size_t nbuckets); /* 0 ok, -1 out of memory */
void rs_kmap_free(struct rs_kmap *m);                 /* frees the buckets, not the nodes */
struct rs_knode *rs_kmap_find(const struct rs_kmap *m, const struct rs_key *key);
void rs_kmap_insert(struct rs_kmap *m, struct rs_knode *n); /* as the newest; key must be absent */
void rs_kmap_remove(struct rs_kmap *m, struct rs_knode *n);
void rs_kmap_touch(struct rs_kmap *m, struct rs_knode *n); /* make it the newest */

#endif
