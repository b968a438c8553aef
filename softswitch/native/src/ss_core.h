/* ss_core.h — the runtime core's own structures (switch.c, tables.c, externs.c, algorithms.c,
 * pipeline.c).  io.c and netem.c use ss_internal.h only, so that they can be built and tested
 * against a stand-in core (tests/io_stub_core.c). */
#ifndef SS_CORE_H
#define SS_CORE_H

#include "ss_internal.h"
#include <pthread.h>
#include <stddef.h>

#define SS_MAX_KEYS 64u          /* key fields per table / value set */
#define SS_LPM_MAX_BITS 128u     /* widest lpm key (limbs: LPM + LPM_NEXT) of the LPM mode */
#define SS_MAX_GROUP 65536u      /* multicast group ids and clone session ids are < this */
#define SS_E2E_SLOTS 8u          /* E2E clone snapshots allocated at load (more as needed) */
#define SS_EQ_CAP 16u            /* egress queue capacity at load (grown as needed) */

typedef struct ss_meter_cell {
    uint8_t configured;
    uint64_t cir, cburst, pir, pburst;
    double tc, tp, last;        /* tokens and last update (seconds, CLOCK_MONOTONIC) */
} ss_meter_cell;

uint64_t ss__meter_mark(ss_meter_cell *m, uint64_t amount);  /* 0 green 1 yellow 2 red */
void ss__meter_configure(ss_meter_cell *m, uint64_t cir, uint64_t cburst, uint64_t pir,
                         uint64_t pburst);

/* ------------------------------------------------------------------ tables */
enum { SS_TMODE_EXACT = 0, SS_TMODE_LPM, SS_TMODE_SCAN };

typedef struct ss_entry {
    uint64_t hash;
    uint64_t seq;            /* insertion order (ties) */
    int64_t rank;            /* priority, negated when lower wins */
    uint32_t plen;           /* LPM: prefix length; scan: total prefix length */
    int32_t priority;
    uint32_t action, n_args, args_cap;
    uint64_t packets, bytes;
    ss_meter_cell meter;
    uint64_t *args;          /* max(n_args, SS_MIN_ARGS or the defined count) values */
    uint64_t *v, *m, *lo, *hi;  /* scan mode: (k & m) == v && lo <= k <= hi per field */
    uint32_t idlen;
    uint64_t id[];           /* identity (lookup key in exact/LPM mode), then the arrays above */
} ss_entry;

typedef struct ss_slot {
    uint64_t hash;
    ss_entry *e;             /* NULL: empty */
} ss_slot;

typedef struct ss_table {
    uint32_t n_keys, size, mode, lpm_index;
    uint8_t kinds[SS_MAX_KEYS];
    uint16_t widths[SS_MAX_KEYS];
    uint8_t range_len[SS_MAX_KEYS]; /* a RANGE field: its limbs (1 + the RANGE_NEXT after it) */
    int wide_range;          /* some range field has more than one limb (scan compares groups) */
    int has_direct_counter, largest_priority_wins, needs_priority;
    int32_t direct_meter;
    uint32_t count;
    uint64_t next_seq;
    ss_slot *slots;          /* open addressing, linear probing, keyed by id */
    uint32_t slot_mask;      /* capacity - 1 */
    ss_entry **sorted;       /* scan mode: entries best first; capacity size */
    uint32_t lpm_len, lpm_width;  /* the lpm key's limbs (1 + LPM_NEXT after it) and bits */
    uint32_t plen_count[SS_LPM_MAX_BITS + 1]; /* LPM mode: entries per prefix length */
    uint8_t plens[SS_LPM_MAX_BITS + 1];       /* LPM mode: used prefix lengths, longest first */
    uint32_t n_plens;
    uint32_t default_action, default_n_args;
    uint64_t *default_args;
} ss_table;

void ss__table_free(ss_table *t);

/* ------------------------------------------------------------------ externs */

typedef struct ss_counter {
    uint64_t size;
    int bytes, packets;
    uint64_t *cells;         /* bytes, packets per index */
} ss_counter;

typedef struct ss_meter {
    uint64_t size;
    int bytes;
    ss_meter_cell *cells;
} ss_meter;

typedef struct ss_dmeter {
    int defined, bytes;
} ss_dmeter;

typedef struct ss_value_set {
    uint32_t n_keys, size, count;
    uint64_t *vals;          /* count x n_keys values, then masks at vals + size * n_keys */
} ss_value_set;

typedef struct ss_replicas {
    uint32_t n;
    uint32_t packet_length_bytes;  /* clone sessions: each clone is cut to this length (0: whole) */
    uint32_t *ports, *rids;
} ss_replicas;

/* A bounded queue of variable-size records in one byte ring (packet-in, digests). */
typedef struct ss_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint8_t *buf;
    size_t cap, head, tail, used;  /* bytes */
    uint64_t count, dropped;
    uint32_t waiters;              /* polls blocked in queue_wait */
    int closing;                   /* ss_switch_free: blocked polls return SS_EIO */
} ss_queue;

/* ------------------------------------------------------------------ pipeline */
typedef struct ss_ingress_item {
    const uint8_t *data;
    uint32_t len, port, itype;
    int32_t fl;              /* field list to restore from state, SS_NONE: none */
    uint8_t *buf;            /* frame storage (items after the first) */
    void *state;             /* saved state for preserve */
} ss_ingress_item;

enum { SS_EQ_UNICAST = 0, SS_EQ_MCAST, SS_EQ_I2E, SS_EQ_E2E };

typedef struct ss_egress_item {
    uint32_t kind;
    const uint8_t *data;     /* the frame of the ingress pass */
    uint32_t len, payload_off;
    uint32_t port;           /* unicast: egress port; I2E: ingress port (to re-parse) */
    uint32_t next, n;        /* replica cursor */
    const uint32_t *ports, *rids;
    void *src;               /* base state (unicast/mcast/I2E preserve source) or snapshot */
    int32_t fl;
    uint32_t truncate;
    uint32_t cut;            /* clones: the session's packet_length_bytes (0: whole) */
} ss_egress_item;

typedef struct ss_pass {
    ss_ctx c;                /* first: generated code gets &pass->c */
    int asserted;
} ss_pass;

struct ss_switch {
    pthread_mutex_t lock;
    int ctl_waiting;         /* control calls waiting for the lock (__atomic; ss__lock_dp) */
    uint32_t cpu_port;
    uint64_t seed;
    uint64_t rng[4];         /* xoshiro256** */
    void *io;
    int log_msgs;

    const ss_program *prog;
    size_t slot_size;        /* state_size rounded up to 64 */

    uint32_t n_tables, n_registers, n_counters, n_meters, n_dmeters, n_vsets, n_actions;
    ss_table **tables;
    ss_register **registers;
    ss_counter **counters;
    ss_meter **meters;
    ss_dmeter *dmeters;      /* 8 (ss_ctx.last_meter_color) */
    ss_value_set **vsets;
    uint32_t *action_params; /* UINT32_MAX: not defined */

    ss_replicas **groups;    /* SS_MAX_GROUP pointers, allocated on first use */
    ss_replicas **sessions;

    /* pipeline memory, allocated at load (the two rings grow when a packet needs more) */
    uint8_t *arena;
    void *st_in, *st_eg;
    void **snaps;            /* ring of E2E snapshots (slot_size each), released in FIFO order */
    uint32_t snap_cap, snap_head, snap_used;
    ss_ingress_item items[SS_MAX_PASSES];
    uint8_t *outbuf;         /* SS_OUT_HEADROOM (headers) + SS_MAX_FRAME (payload) */
    ss_egress_item *eq;      /* ring of egress work */
    uint32_t eq_cap, eq_head, eq_n;
    uint32_t e2e_copies;     /* egress copies made by E2E clones for this input packet */
    /* ss_process_all's outputs */
    ss_out *pout;
    uint32_t pout_n, pout_cap;
    uint8_t *pbuf;
    size_t pbuf_used, pbuf_cap;

    ss_stats stats;
    ss_queue pktin, digests;
};

uint64_t ss__rand64(struct ss_switch *sw);
void ss__queue_init(ss_queue *q, size_t cap);
void ss__queue_close(ss_queue *q);    /* wake blocked polls, wait until they have left */
void ss__queue_destroy(ss_queue *q);
int ss__queue_push(ss_queue *q, const void *h, size_t hlen, const void *d, size_t dlen);

#endif /* SS_CORE_H */
