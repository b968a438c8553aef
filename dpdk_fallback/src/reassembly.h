/* Partial request messages, keyed by (client address, request_id), until all their fragments
 * are in. Bounded in count and bytes (the oldest partial is dropped to make room) and in time
 * (a partial with no new fragment for `timeout` seconds is dropped). */
#ifndef RS_REASSEMBLY_H
#define RS_REASSEMBLY_H

#include <stddef.h>
#include <stdint.h>

#include "kmap.h"
#include "proto.h"

struct rs_reassembly {
    struct rs_kmap map;
    size_t max_entries, max_bytes, bytes;
    double timeout;
    uint64_t expired, evicted;
};

enum rs_ra_result {
    RS_RA_INCOMPLETE = 0, /* stored; more fragments needed (or a duplicate was ignored) */
    RS_RA_COMPLETE = 1,   /* body and len hold the whole message (caller frees body) */
    RS_RA_ERROR = -1,     /* *status and msg say why; the partial, if any, is dropped */
};

int rs_reassembly_init(struct rs_reassembly *r, size_t max_entries, size_t max_bytes, double timeout);
void rs_reassembly_free(struct rs_reassembly *r);
/* Add one fragment (already checked: frag_count >= 2, index < count, sizes per the rules). */
enum rs_ra_result rs_reassembly_add(struct rs_reassembly *r, const struct rs_key *key,
                                    const struct rp_header *h, const uint8_t *piece, size_t plen,
                                    double now, uint8_t **body, size_t *len, int *status,
                                    char *msg, size_t msglen);
void rs_reassembly_expire(struct rs_reassembly *r, double now);

#endif
