/* host_agents/aggio.c's interface: batched UDP I/O and the synchronous allreduce loop of the
 * aggregation client. host_agents/aggio.py hands these declarations to cffi (comments and
 * preprocessor lines removed), so this file is the only copy of them. */
#ifndef INNET_AGGIO_H
#define INNET_AGGIO_H
#include <stdint.h>

int aggio_send(int fd, const uint8_t *table, uint32_t stride, const int32_t *rows, const uint32_t *lens,
               int n, uint32_t ip_be, uint16_t port_be, int64_t full_wait_ns, int32_t *gso);
int aggio_recv(int fd, uint8_t *table, uint32_t stride, uint32_t *lens, int max, int64_t timeout_ns);

/* One synchronous allreduce call: inputs, caller-owned arrays, state kept across a resume. */
struct aggc_call {
    /* the job and the socket */
    int fd;
    int32_t gso;                  /* 1: UDP GSO sends (aggio_send), set to 0 where the route refuses */
    uint32_t ip_be;
    uint16_t port_be;
    uint8_t job_id, worker_id;
    int32_t vpp, chunks, slots, n_active, headroom, dynamic;
    uint32_t version;
    uint32_t row;                 /* bytes per row of tx and rx */
    int32_t rx_rows;
    double timeout_s, min_rto;
    int32_t max_tries;
    uint32_t frame_overhead;
    /* arrays (caller-owned) */
    const float *blocks;          /* chunks x vpp */
    const int64_t *local_exp;     /* chunks: biased exponent of each chunk */
    int64_t *agreed;              /* chunks: the job's exponent of each chunk (fixed: preset) */
    float *result;                /* chunks x vpp */
    int64_t *count, *bitmap, *vlo, *vhi; /* chunks */
    int64_t *rounds;              /* slots: 32-bit round counter of each slot, kept across calls */
    int64_t *cur;                 /* n_active: round index within this call (-1: bootstrap) */
    int64_t *predicted;           /* n_active: 1 while the slot's first round runs on the exponent
                                     predicted from the last call (agreed[] preset), no bootstrap */
    int64_t *tries;               /* n_active: sends of the outstanding round (0: none out) */
    double *sent_at, *first_sent; /* n_active */
    int32_t *sendq;               /* n_active: rows to send next */
    uint32_t *tx_len;             /* slots */
    uint8_t *tx, *rx;             /* slots x row, rx_rows x row */
    uint32_t *rx_len;             /* rx_rows */
    /* the adaptive retransmission timeout (RFC 6298), kept across calls */
    double srtt, rttvar, rto;
    int32_t have_rtt;
    /* progress and results */
    int32_t started, pending;
    int64_t packets_sent, packets_received, retransmissions, bytes_sent, bytes_received;
    int64_t redone;               /* predicted first rounds that a chunk did not fit: bootstrapped */
    int32_t err_slot;             /* the slot that failed (timeout or a stale round) */
    int64_t err_round, err_held, err_tries;
    int32_t err_errno;
};

int aggc_run(struct aggc_call *c);
int aggc_exponents(const float *blocks, int64_t chunks, int32_t vpp, int64_t *out);
/* One packet's values, as aggc_run codes them (exported for the tests): x * scale as big-endian
 * int32 (clipped, rounded half to even), and big-endian int32 sums times inv as floats. scale and
 * inv are powers of two, as the protocol's are: the float path is exact only for those. */
void aggc_encode(uint8_t *out, const float *x, int32_t n, double scale);
void aggc_decode(float *out, const uint8_t *v, int32_t n, double inv);

/* One exchange of the replay switch path (host_agents/replay_client.py, SwitchReplayClient):
 * n one-datagram requests with consecutive request ids from `base`, `window` in flight, each
 * resent after timeout_s until max_tries; one-datagram replies (docs/replay_protocol.md header,
 * matched by request id) are copied into their request's row of `out`. */
struct rexc_call {
    int fd;
    uint32_t ip_be;
    uint16_t port_be;
    int32_t n, window, max_tries;
    double timeout_s;
    uint32_t base;                /* request id of row 0 */
    const uint8_t *tx;            /* n x tx_row: the requests */
    uint32_t tx_row;
    const uint32_t *tx_len;       /* n */
    uint8_t *rx;                  /* rx_rows x rx_row: one receive batch */
    uint32_t rx_row;
    uint32_t *rx_len;
    int32_t rx_rows;
    uint8_t *out;                 /* n x rx_row: each request's one-datagram reply */
    int64_t *out_len;             /* n */
    uint8_t *done, *outstanding, *resent; /* n: answered; sent and unanswered; resent since Python looked */
    int64_t *tries;               /* n */
    double *due;                  /* n: when to resend */
    int32_t *sendq;               /* n: scratch */
    int32_t *frag;                /* rx_rows: rx rows of this batch that are fragments, for Python */
    int32_t n_frag;
    int32_t started, in_flight, next_new, answered;
    int64_t resent_total, stray;
    int32_t err_index;            /* the request that ran out of tries */
    int64_t err_tries;
    int32_t err_errno;
};

int rexc_run(struct rexc_call *c);

#endif
