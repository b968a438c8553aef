/* Recent replies by (client address, request_id): a repeated request is answered from here
 * instead of being executed again (so a resent PUSH stores nothing twice), and RESEND picks
 * fragments of a reply from here. Bounded in entries and bytes; the oldest go first. */
#ifndef RS_REPLY_CACHE_H
#define RS_REPLY_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "kmap.h"
#include "proto.h"

/* A whole reply message: header template plus body. Reference counted because the cache and
 * the send queue may both hold it. */
struct rs_msg {
    int refs;
    struct rp_header hdr; /* frag_index/frag_count are filled per datagram */
    uint32_t frag_count;
    size_t len;
    uint8_t body[];
};

struct rs_msg *rs_msg_new(const struct rp_header *hdr, const void *body, size_t len); /* refs = 1 */
void rs_msg_unref(struct rs_msg *m);
/* Write fragment k of m into out (at least RP_MAX_DATAGRAM bytes); returns its length. */
size_t rs_msg_fragment(const struct rs_msg *m, uint32_t k, uint8_t *out);

struct rs_reply_cache {
    struct rs_kmap map;
    size_t max_entries, max_bytes, bytes;
    uint64_t evictions;
};

int rs_reply_cache_init(struct rs_reply_cache *c, size_t max_entries, size_t max_bytes);
void rs_reply_cache_free(struct rs_reply_cache *c);
/* Borrowed pointer (valid until the next put), or NULL. */
struct rs_msg *rs_reply_cache_get(struct rs_reply_cache *c, const struct rs_key *key);
/* Remember msg under key (takes a reference; replaces an older entry of that key). A reply
 * larger than the whole byte budget is not cached. */
void rs_reply_cache_put(struct rs_reply_cache *c, const struct rs_key *key, struct rs_msg *msg);

#endif
