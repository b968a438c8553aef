/* The replay server core: turns request datagrams into reply datagrams. Knows nothing of
 * sockets or DPDK (io.h brings datagrams in and takes them out). Single-threaded. */
#ifndef RS_SERVER_H
#define RS_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "io.h"
#include "reassembly.h"
#include "reply_cache.h"
#include "table.h"
#include "util.h"

#define RS_TX_BURST 32

struct rs_limits {
    uint64_t max_item_bytes;
    uint64_t max_message_bytes;
    double reassembly_timeout;
    size_t reassembly_entries, reassembly_bytes;
    size_t reply_cache_entries, reply_cache_bytes;
};

struct rs_param_slot {
    uint64_t version; /* 0: never set */
    size_t len;
    uint8_t *blob;
};

struct rs_counters {
    uint64_t received, dropped_short, requests, duplicates, resends, fragments_in;
    uint64_t pushes, items_pushed, samples, items_sampled, switch_samples, updates,
        priorities_updated, priorities_ignored, set_params, get_params, infos, checkpoints;
    uint64_t datagrams_sent, tx_dropped, error_replies_suppressed;
    uint64_t errors[RP_STATUS_COUNT];
};

/* One reply waiting to go out: fragments first..first+count-1 of msg, or the listed ones. */
struct rs_tx {
    struct rs_peer peer;
    struct rs_msg *msg;
    uint32_t first, count, done;
    uint16_t *list; /* RESEND: explicit fragment indexes (owned), or NULL */
};

struct rs_server {
    struct rs_table *tables;
    uint16_t n_tables;
    struct rs_param_slot *params;
    uint32_t n_params;
    struct rs_limits lim;
    struct rs_rng rng;
    uint64_t seed;
    struct rs_reassembly reasm;
    struct rs_reply_cache cache;
    struct rs_counters c;
    struct rs_tx *txq;
    size_t tx_head, tx_len, tx_cap;
    struct rs_datagram *txbuf; /* RS_TX_BURST datagrams being handed to the I/O path */
    const char *io_name;
    uint16_t port;
    const char *checkpoint_path; /* NULL: CHECKPOINT op fails with INTERNAL */
    double started;
};

int rs_server_init(struct rs_server *s, const struct rs_limits *lim, uint64_t seed);
void rs_server_free(struct rs_server *s);
/* Define the next table (id = tables so far). 0 ok, -1 out of memory. */
int rs_server_add_table(struct rs_server *s, const char *name, uint32_t max_size, double alpha,
                        enum rs_mode mode);
int rs_server_set_param_slots(struct rs_server *s, uint32_t n); /* grow only; 0 ok, -1 OOM */
/* Handle one received datagram; replies are queued. */
void rs_server_handle(struct rs_server *s, const struct rs_datagram *dg, double now);
/* Periodic work (reassembly timeouts). */
void rs_server_tick(struct rs_server *s, double now);
/* Send the queued replies through io; gives up on what the I/O path refuses for
 * `give_up_s` seconds in a row (counted as tx_dropped). */
void rs_server_flush(struct rs_server *s, struct rs_io *io, double give_up_s);
int rs_server_pending_tx(const struct rs_server *s);

/* Checkpoint the server's tables and params (checkpoint.c). */
int rs_checkpoint_write(const struct rs_server *s, const char *path, char *err, size_t errlen);
/* Restore from path. With tables already defined (from --table), the checkpoint's must agree
 * with them (name, max_size, mode, same ids; more --table entries than checkpointed ones are
 * fine); without, the tables come from the checkpoint. Returns 1 when restored, 0 when the
 * file does not exist, -1 on an error (err says why). */
int rs_checkpoint_restore(struct rs_server *s, const char *path, char *err, size_t errlen);

#endif
