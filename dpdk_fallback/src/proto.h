/* Replay wire protocol constants and header codec (docs/replay_protocol.md is the authority;
 * host_agents/replay_protocol.py is the Python twin). Everything on the wire is big-endian. */
#ifndef RS_PROTO_H
#define RS_PROTO_H

#include <stdint.h>
#include <string.h>

#define RP_VERSION 1
#define RP_DEFAULT_PORT 47100
#define RP_HEADER_BYTES 32
#define RP_FRAG_BYTES 1400 /* body bytes per fragment; only the last may be shorter */
#define RP_MAX_DATAGRAM (RP_HEADER_BYTES + RP_FRAG_BYTES)
#define RP_MAX_FRAGMENTS 65535u /* frag_count is 16 bits */
#define RP_MAX_MESSAGE ((uint64_t)RP_MAX_FRAGMENTS * RP_FRAG_BYTES)

enum rp_op {
    RP_OP_PUSH = 1,
    RP_OP_PUSH_REPLY = 2,
    RP_OP_SAMPLE = 3,
    RP_OP_SAMPLE_REPLY = 4,
    RP_OP_UPDATE_PRIORITY = 5,
    RP_OP_UPDATE_REPLY = 6,
    RP_OP_SET_PARAMS = 7,
    RP_OP_SET_PARAMS_REPLY = 8,
    RP_OP_GET_PARAMS = 9,
    RP_OP_GET_PARAMS_REPLY = 10,
    RP_OP_INFO = 11,
    RP_OP_INFO_REPLY = 12,
    RP_OP_RESEND = 13,
    RP_OP_CHECKPOINT = 15,
    RP_OP_CHECKPOINT_REPLY = 16,
    RP_OP_ERROR = 255,
};

enum rp_flag {
    RP_FLAG_SWITCH_SAMPLED = 0x01,
    RP_FLAG_RANDOM_DRAW = 0x02,
    RP_FLAG_SWITCH_UPDATED = 0x04,
    RP_FLAG_INSERT = 0x08,       /* switch UPDATE: a new item; the leaf remembers its key */
    RP_FLAG_KEY_MISMATCH = 0x10, /* switch UPDATE_REPLY: ignored, the leaf holds another item */
    RP_FLAG_MULTI = 0x20,        /* switch SAMPLE/UPDATE: a batch of entries */
};

/* A switch-path batch (flag MULTI): u16 next, u16 count, f32 beta, then count entries of
 * u32 index, u32 priority, u32 draw, u32 total, u8 result, 3 bytes reserved. */
#define RP_BATCH_HEADER_BYTES 8u
#define RP_BATCH_ENTRY_BYTES 20u
#define RP_BATCH_MAX_ENTRIES 64u

enum rp_status {
    RP_OK = 0,
    RP_MALFORMED = 1,
    RP_UNKNOWN_OP = 2,
    RP_UNKNOWN_TABLE = 3,
    RP_BAD_INDEX = 4,
    RP_TOO_LARGE = 5,
    RP_EMPTY = 6,
    RP_NOT_SWITCH_SAMPLED = 7,
    RP_NOT_CACHED = 8,
    RP_BAD_VERSION = 9,
    RP_INTERNAL = 10,
    RP_STATUS_COUNT = 11,
};

struct rp_header {
    uint8_t op, flags;
    uint16_t table_id;
    uint32_t request_id;
    uint16_t frag_index, frag_count;
    uint32_t index, priority, draw, total;
    uint8_t status, version;
    uint16_t reserved;
};

static inline uint16_t rp_get16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t rp_get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t rp_get64(const uint8_t *p)
{
    return ((uint64_t)rp_get32(p) << 32) | rp_get32(p + 4);
}
static inline float rp_getf32(const uint8_t *p)
{
    uint32_t u = rp_get32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline void rp_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void rp_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void rp_put64(uint8_t *p, uint64_t v)
{
    rp_put32(p, (uint32_t)(v >> 32));
    rp_put32(p + 4, (uint32_t)v);
}
static inline void rp_putf32(uint8_t *p, float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    rp_put32(p, u);
}

static inline void rp_header_decode(const uint8_t *b, struct rp_header *h)
{
    h->op = b[0];
    h->flags = b[1];
    h->table_id = rp_get16(b + 2);
    h->request_id = rp_get32(b + 4);
    h->frag_index = rp_get16(b + 8);
    h->frag_count = rp_get16(b + 10);
    h->index = rp_get32(b + 12);
    h->priority = rp_get32(b + 16);
    h->draw = rp_get32(b + 20);
    h->total = rp_get32(b + 24);
    h->status = b[28];
    h->version = b[29];
    h->reserved = rp_get16(b + 30);
}

static inline void rp_header_encode(uint8_t *b, const struct rp_header *h)
{
    b[0] = h->op;
    b[1] = h->flags;
    rp_put16(b + 2, h->table_id);
    rp_put32(b + 4, h->request_id);
    rp_put16(b + 8, h->frag_index);
    rp_put16(b + 10, h->frag_count);
    rp_put32(b + 12, h->index);
    rp_put32(b + 16, h->priority);
    rp_put32(b + 20, h->draw);
    rp_put32(b + 24, h->total);
    b[28] = h->status;
    b[29] = h->version;
    rp_put16(b + 30, h->reserved);
}

/* Fragments a body of len bytes needs (an empty body is one fragment). */
static inline uint32_t rp_frag_count(uint64_t len)
{
    return len == 0 ? 1u : (uint32_t)((len + RP_FRAG_BYTES - 1) / RP_FRAG_BYTES);
}

const char *rp_status_name(int status);
const char *rp_op_name(int op);

#endif
