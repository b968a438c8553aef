/* Batched UDP I/O for the aggregation client (host_agents/aggio.py builds and binds it with cffi).
 *
 * One sendmmsg/recvmmsg moves a whole window of aggregation packets, so that Python pays one
 * call per batch instead of one per packet. Packets live in rows of a caller-owned
 * table (`stride` bytes per row); nothing here keeps state between calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "aggio.h"

#define AGGIO_BATCH 256 /* messages per system call: bounded so the arrays fit on the stack */
#define AGGIO_GSO_SEGS 64 /* datagrams per UDP GSO send (Linux takes up to 64 on every kernel with it) */
#define AGGIO_GSO_BYTES 65493u /* UDP payload of a GSO send whose frame stays within 65,535 bytes */

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

/* Waits for `events` on fd for at most timeout_ns (< 0: no limit). 1 ready, 0 timed out, -errno. */
static int wait_fd(int fd, short events, int64_t timeout_ns)
{
    struct pollfd p = {.fd = fd, .events = events, .revents = 0};
    struct timespec ts, *tsp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000);
        ts.tv_nsec = (long)(timeout_ns % 1000000000);
        tsp = &ts;
    }
    int r = ppoll(&p, 1, tsp, NULL);
    if (r >= 0)
        return r > 0 ? 1 : 0;
    /* a signal reads as a timeout, so that Python gets to handle it before the next wait */
    return errno == EINTR ? 0 : -errno;
}

/* Sends n datagrams to ip_be:port_be (network order): datagram k is the first lens[rows[k]]
 * bytes of row rows[k] of `table`. Waits for room when the socket buffer is full, up to
 * full_wait_ns per wait. Returns how many were sent, or -errno when the first one failed.
 *
 * gso (may be NULL): while *gso is 1, each run of consecutive datagrams of one length (the last
 * may be shorter) goes out as one UDP GSO message (UDP_SEGMENT): one pass through the socket
 * layer for up to 64 datagrams, which the kernel cuts, or hands whole to a link with UDP
 * segmentation offload (a switch port in offload mode). The kernel refuses GSO (EIO) on a
 * route whose device does not finish checksums; then *gso becomes 0 and datagrams go one by
 * one from then on. What reaches the wire is the same datagrams either way. */
int aggio_send(int fd, const uint8_t *table, uint32_t stride, const int32_t *rows, const uint32_t *lens,
               int n, uint32_t ip_be, uint16_t port_be, int64_t full_wait_ns, int32_t *gso)
{
    struct sockaddr_in dst;
    memset(&dst, 0, sizeof dst);
    dst.sin_family = AF_INET;
    dst.sin_port = port_be;
    dst.sin_addr.s_addr = ip_be;
    struct mmsghdr msgs[AGGIO_BATCH];
    struct iovec iov[AGGIO_BATCH];  /* one per datagram; a GSO message gathers several */
    int per[AGGIO_BATCH];           /* datagrams in each message */
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } ctl[AGGIO_BATCH];
    int sent = 0;
    while (sent < n) {
        int m = 0, v = 0, k = sent;
        while (k < n && v < AGGIO_BATCH) {
            uint32_t len = lens[rows[k]];
            int take = 1;
            if (gso && *gso == 1) {  /* the next datagrams of this length, the last may be shorter */
                uint32_t total = len;
                while (k + take < n && take < AGGIO_GSO_SEGS && v + take < AGGIO_BATCH) {
                    uint32_t l = lens[rows[k + take]];
                    if (l > len || l == 0 || total + l > AGGIO_GSO_BYTES)
                        break;
                    total += l;
                    take++;
                    if (l < len)
                        break;
                }
            }
            memset(&msgs[m], 0, sizeof msgs[m]);
            msgs[m].msg_hdr.msg_name = &dst;
            msgs[m].msg_hdr.msg_namelen = sizeof dst;
            msgs[m].msg_hdr.msg_iov = &iov[v];
            msgs[m].msg_hdr.msg_iovlen = (size_t)take;
            for (int j = 0; j < take; j++) {
                size_t row = (size_t)rows[k + j];
                /* the iovec's base is not const in POSIX; sendmmsg only reads it */
                iov[v + j].iov_base = (void *)(uintptr_t)(table + row * stride);
                iov[v + j].iov_len = lens[row];
            }
            if (take > 1) {
                uint16_t seg = (uint16_t)len;
                memset(&ctl[m], 0, sizeof ctl[m]);
                msgs[m].msg_hdr.msg_control = ctl[m].buf;
                msgs[m].msg_hdr.msg_controllen = sizeof ctl[m].buf;
                struct cmsghdr *cm = CMSG_FIRSTHDR(&msgs[m].msg_hdr);
                cm->cmsg_level = SOL_UDP;
                cm->cmsg_type = UDP_SEGMENT;
                cm->cmsg_len = CMSG_LEN(sizeof seg);
                memcpy(CMSG_DATA(cm), &seg, sizeof seg);
            }
            per[m++] = take;
            v += take;
            k += take;
        }
        int r = sendmmsg(fd, msgs, (unsigned)m, MSG_DONTWAIT);
        if (r > 0) {
            for (int j = 0; j < r; j++)
                sent += per[j];
            continue;
        }
        int err = r < 0 ? errno : EAGAIN;
        if (err == EINTR)
            continue;
        if (per[0] > 1 && (err == EIO || err == EINVAL || err == ENOPROTOOPT || err == EOPNOTSUPP)) {
            *gso = 0;  /* no GSO on this route (EIO: its device does not finish checksums) */
            continue;
        }
        if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
            int w = wait_fd(fd, POLLOUT, full_wait_ns);
            if (w > 0)
                continue;
            if (w == 0 && err == ENOBUFS) /* no poll event for ENOBUFS: try again after the wait */
                continue;
            return sent > 0 ? sent : (w < 0 ? w : -err);
        }
        return sent > 0 ? sent : -err;
    }
    return sent;
}

/* Waits up to timeout_ns (< 0: no limit) for a datagram, then receives up to max of them without
 * waiting again: datagram k into row k of `table` (truncated to stride bytes), its length in
 * lens[k]. Returns how many were received (0: timed out), or -errno. */
int aggio_recv(int fd, uint8_t *table, uint32_t stride, uint32_t *lens, int max, int64_t timeout_ns)
{
    int w = wait_fd(fd, POLLIN, timeout_ns);
    if (w <= 0)
        return w;
    struct mmsghdr msgs[AGGIO_BATCH];
    struct iovec iov[AGGIO_BATCH];
    int got = 0;
    while (got < max) {
        int m = max - got < AGGIO_BATCH ? max - got : AGGIO_BATCH;
        for (int k = 0; k < m; k++) {
            iov[k].iov_base = table + (size_t)(got + k) * stride;
            iov[k].iov_len = stride;
            memset(&msgs[k], 0, sizeof msgs[k]);
            msgs[k].msg_hdr.msg_iov = &iov[k];
            msgs[k].msg_hdr.msg_iovlen = 1;
        }
        int r = recvmmsg(fd, msgs, (unsigned)m, MSG_DONTWAIT, NULL);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            return got > 0 ? got : -errno;
        }
        for (int k = 0; k < r; k++)
            lens[got + k] = msgs[k].msg_len;
        got += r;
        if (r < m) /* the queue is empty: do not pay for another call that finds nothing */
            break;
    }
    return got;
}

/* ---- the synchronous allreduce protocol, run whole in C ------------------------------------
 *
 * The same protocol as AggregationClient's NumPy path (docs/protocol.md) for synchronous jobs:
 * slot s of the n_active = min(slots, chunks) slots carries chunks s, s + W, s + 2W, ... one
 * round each; with an exponent agreed through the switch (dynamic) a slot first runs a
 * header-only bootstrap round that announces its first chunk's exponent, unless the caller
 * predicted that exponent from the last call (predicted[s]): then the first chunk goes out at
 * once, and a worker whose chunk does not fit says so with next_exp = AGG_EXP_REDO, which the
 * switch's max hands to every worker: all of them drop that result and run the bootstrap and
 * the chunk again. A RESULT for the
 * slot's outstanding round completes it: the values are descaled into `result`, the next
 * round is sent. An unanswered round is sent again after the adaptive timeout (doubled per
 * try); after timeout_s * max_tries the call fails. Python keeps what does not pay per packet:
 * block exponents, the tensor, errors. All state lives in `struct aggc_call` and the arrays it
 * points to, so a call interrupted by a signal resumes where it was.
 */
#define AGG_HEADER_BYTES 28
#define AGG_OP_DATA 1
#define AGG_OP_RESULT 2
#define AGG_OP_STALE 3
#define AGG_FLAG_RETX 1
#define AGG_EXP_BIAS 128
#define AGG_EXP_REDO 255 /* next_exp of a predicted round a chunk did not fit: every worker redoes it */



static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* x rounded to the nearest integer, ties to even (np.rint's result), for |x| < 2^51: adding and
 * subtracting 1.5 * 2^52 leaves the rounding to the FPU's default mode. A plain expression
 * instead of nearbyint(), which is a library call per value unless SSE4.1 may be assumed. */
static inline double round_even(double x)
{
    const double magic = 6755399441055744.0; /* 1.5 * 2^52 */
    return (x + magic) - magic; /* not folded: IEEE rounding forbids it without -ffast-math */
}

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static uint32_t get16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* scale_for() of agg_protocol.py: 2^(30 - e - headroom), 1 for an all-zero chunk (e = 0) */
static double chunk_scale(const struct aggc_call *c, int64_t biased)
{
    if (biased == 0)
        return 1.0;
    return ldexp(1.0, (int)(30 - (biased - AGG_EXP_BIAS) - c->headroom));
}

/* chunk of slot s's round r in this call; -1 for the bootstrap round or past the slot's last */
static int64_t chunk_of(const struct aggc_call *c, int32_t s, int64_t r)
{
    if (r < 0)
        return -1;
    int64_t chunk = (int64_t)s + (int64_t)c->slots * r;
    return chunk < c->chunks ? chunk : -1;
}

static double rto_for(const struct aggc_call *c, int64_t tries)
{
    int64_t k = tries - 1 < 16 ? tries - 1 : 16;
    double t = ldexp(c->rto, (int)(k > 0 ? k : 0));
    return t < c->timeout_s ? t : c->timeout_s;
}

/* ---- a packet's values: float <-> big-endian int32 at a power-of-two scale ----
 * These two loops were most of a worker's user-space CPU at 8 x 1 MB (perf: encode 21%, decode
 * inside aggc_run 14%; bench/README.md, "Twelfth pass"). Each is split in two passes so that the
 * arithmetic pass vectorizes on any x86-64 (a byte swap has no vector form before SSSE3) and
 * the swap pass is a plain loop. aggio.py builds with -fno-trapping-math, which lets the
 * compiler turn the selects below into vector blends. */

#define AGGIO_MAX_VPP 1024 /* values per pass of the loops below (their stack arrays) */

/* The reference encoding (and the fallback): x * scale in double, clipped to int32 (np.clip
 * after np.rint gives the same), then rounded half to even (in range, round_even is exact). */
static int32_t encode_one(float x, double scale)
{
    double q = (double)x * scale;
    q = q >= 2147483647.0 ? 2147483647.0 : q <= -2147483648.0 ? -2147483648.0 : round_even(q);
    return (int32_t)q;
}

/* encode_one of n values into out as big-endian int32. With a scale that is a normal float,
 * the same result in float arithmetic: x * scale is exact there too (a power of two only moves
 * the exponent; a product too small to be normal rounds to 0 either way), |q| < 2^23 rounds half
 * to even by adding and taking off 2^23 (with q's sign), larger floats are integers already,
 * and every float at or beyond +-2^31 clips as the double does. */
static void encode_values(uint8_t *restrict out, const float *restrict x, int32_t n, double scale)
{
    if (!(scale >= 0x1p-126 && scale <= 0x1p126)) {
        for (int32_t i = 0; i < n; i++)
            put32(out + 4 * (size_t)i, (uint32_t)encode_one(x[i], scale));
        return;
    }
    const float s = (float)scale;
    int32_t q32[AGGIO_MAX_VPP];
    for (int32_t base = 0; base < n; base += AGGIO_MAX_VPP) {
        int32_t m = n - base < AGGIO_MAX_VPP ? n - base : AGGIO_MAX_VPP;
        for (int32_t i = 0; i < m; i++) {
            float q = x[base + i] * s;
            float half = __builtin_copysignf(8388608.0f, q);
            float r = (q + half) - half;
            r = __builtin_fabsf(q) < 8388608.0f ? r : q;
            q32[i] = r >= 2147483648.0f ? INT32_MAX : r < -2147483648.0f ? INT32_MIN : (int32_t)r;
        }
        for (int32_t i = 0; i < m; i++)
            put32(out + 4 * (size_t)(base + i), (uint32_t)q32[i]);
    }
}

/* A result's n big-endian int32 sums back to floats: times inv (1 / scale, a power of two, so
 * the double product is the exact quotient), rounded once to float. */
static void decode_values(float *restrict out, const uint8_t *restrict v, int32_t n, double inv)
{
    int32_t w[AGGIO_MAX_VPP];
    for (int32_t base = 0; base < n; base += AGGIO_MAX_VPP) {
        int32_t m = n - base < AGGIO_MAX_VPP ? n - base : AGGIO_MAX_VPP;
        for (int32_t i = 0; i < m; i++) {
            uint32_t u = get32(v + 4 * (size_t)(base + i)); /* two's complement, spelled out */
            w[i] = u <= INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
        }
        for (int32_t i = 0; i < m; i++)
            out[base + i] = (float)((double)w[i] * inv);
    }
}

void aggc_encode(uint8_t *out, const float *x, int32_t n, double scale)
{
    encode_values(out, x, n, scale);
}

void aggc_decode(float *out, const uint8_t *v, int32_t n, double inv)
{
    decode_values(out, v, n, inv);
}

/* Writes slot s's next round into its tx row and queues it. */
static void launch(struct aggc_call *c, int32_t s, int32_t *nq, double now)
{
    uint8_t *p = c->tx + (size_t)s * c->row;
    c->rounds[s] += 1;
    int64_t r = c->cur[s], chunk = chunk_of(c, s, r), next = chunk_of(c, s, r + 1);
    p[0] = AGG_OP_DATA;
    p[1] = 0;
    p[2] = c->job_id;
    p[3] = c->worker_id;
    put16(p + 4, (uint32_t)s);
    put16(p + 6, (uint32_t)(c->rounds[s] & 0xFFFF));
    /* the next chunk's exponent; on a slot's last round (agreed exponents) its first chunk's,
     * whose job-wide maximum the next call predicts from */
    int64_t announce = next >= 0 ? c->local_exp[next] : c->dynamic ? c->local_exp[s] : 0;
    if (c->predicted[s] && chunk >= 0 && c->local_exp[chunk] > c->agreed[chunk])
        announce = AGG_EXP_REDO; /* this chunk does not fit the predicted exponent */
    p[8] = (uint8_t)announce;
    p[9] = 0;
    put16(p + 10, chunk >= 0 ? 1u : 0u);
    put32(p + 12, 0);
    put32(p + 16, (uint32_t)(chunk >= 0 ? chunk : 0));
    put32(p + 20, c->version);
    put32(p + 24, c->version);
    uint32_t len = AGG_HEADER_BYTES;
    if (chunk >= 0) {
        encode_values(p + AGG_HEADER_BYTES, c->blocks + (size_t)chunk * (size_t)c->vpp, c->vpp,
                      chunk_scale(c, c->agreed[chunk]));
        len += 4u * (uint32_t)c->vpp;
    }
    c->tx_len[s] = len;
    c->sendq[(*nq)++] = s;
    c->sent_at[s] = c->first_sent[s] = now;
    c->tries[s] = 1;
}

/* Sends rows q[0..n) of tx (lens[row] bytes each), all of them: 0, or -errno (EAGAIN when the
 * socket stayed full) after a send that moved nothing. Both protocol loops below flush with it. */
static int send_all(int fd, const uint8_t *tx, uint32_t row, const int32_t *q, const uint32_t *lens, int n,
                    uint32_t ip_be, uint16_t port_be, int32_t *gso)
{
    for (int done = 0; done < n;) {
        int r = aggio_send(fd, tx, row, q + done, lens, n - done, ip_be, port_be, 1000000000, gso);
        if (r <= 0)
            return r < 0 ? r : -EAGAIN;
        done += r;
    }
    return 0;
}

static int flush(struct aggc_call *c, int32_t *nq)
{
    if (*nq == 0)
        return 0;
    int r = send_all(c->fd, c->tx, c->row, c->sendq, c->tx_len, *nq, c->ip_be, c->port_be, &c->gso);
    if (r < 0) {
        c->err_errno = -r;
        return -3;
    }
    for (int k = 0; k < *nq; k++) {
        c->packets_sent += 1;
        c->bytes_sent += c->tx_len[c->sendq[k]] + c->frame_overhead;
    }
    *nq = 0;
    return 0;
}

static void rtt_sample(struct aggc_call *c, double rtt)
{
    if (!c->have_rtt) {
        c->srtt = rtt;
        c->rttvar = rtt / 2;
        c->have_rtt = 1;
    } else {
        c->rttvar = 0.75 * c->rttvar + 0.25 * fabs(c->srtt - rtt);
        c->srtt = 0.875 * c->srtt + 0.125 * rtt;
    }
    double t = c->srtt + 4 * c->rttvar;
    t = t > c->min_rto ? t : c->min_rto;
    c->rto = t < c->timeout_s ? t : c->timeout_s;
}

/* One received datagram: 0 (used or ignored), -2 (the switch holds another round: the workers'
 * counters disagree, which a synchronous job cannot repair). */
static int absorb(struct aggc_call *c, const uint8_t *p, uint32_t n, int32_t *nq, double now)
{
    c->packets_received += 1;
    c->bytes_received += n + c->frame_overhead;
    if (n < AGG_HEADER_BYTES || p[2] != c->job_id)
        return 0;
    uint32_t s = get16(p + 4);
    if (s >= (uint32_t)c->n_active || c->tries[s] == 0)
        return 0; /* not a slot of this call, or nothing outstanding on it: a late duplicate */
    uint32_t wire = get16(p + 6);
    int64_t cur = c->rounds[s];
    int match = wire == (uint32_t)(cur & 0xFFFF);
    if (p[0] == AGG_OP_STALE && !match) {
        uint32_t delta = (wire - (uint32_t)cur) & 0xFFFF;
        c->err_slot = (int32_t)s;
        c->err_round = cur;
        c->err_held = cur + (delta >= 0x8000 ? (int64_t)delta - 0x10000 : (int64_t)delta);
        return -2;
    }
    if (p[0] != AGG_OP_RESULT || !match)
        return 0;
    int64_t r = c->cur[s], chunk = chunk_of(c, (int32_t)s, r);
    if (chunk >= 0 && n < AGG_HEADER_BYTES + 4u * (uint32_t)c->vpp)
        return 0;
    if (c->tries[s] == 1) /* a retransmitted round's reply times no single send (Karn) */
        rtt_sample(c, now - c->sent_at[s]);
    c->tries[s] = 0;
    if (c->predicted[s]) {
        c->predicted[s] = 0;
        if (p[8] == AGG_EXP_REDO) { /* a worker's chunk did not fit: bootstrap, then the chunk again */
            c->redone += 1;
            c->cur[s] = -1;
            launch(c, (int32_t)s, nq, now);
            return 0;
        }
    }
    if (chunk >= 0) {
        /* scale is a power of two: times its inverse is the division, exactly */
        decode_values(c->result + (size_t)chunk * (size_t)c->vpp, p + AGG_HEADER_BYTES, c->vpp,
                      1.0 / chunk_scale(c, c->agreed[chunk]));
        c->count[chunk] = get16(p + 10);
        c->bitmap[chunk] = get32(p + 12);
        c->vlo[chunk] = get32(p + 20);
        c->vhi[chunk] = get32(p + 24);
    }
    int64_t next = chunk_of(c, (int32_t)s, r + 1);
    if (c->dynamic)
        c->agreed[next >= 0 ? next : (int64_t)s] = p[8]; /* chunk s: the slot's first */
    c->cur[s] = r + 1;
    if (next >= 0)
        launch(c, (int32_t)s, nq, now);
    else
        c->pending -= 1;
    return 0;
}

/* Runs (or resumes) the call. 0: every chunk has its result; 1: a signal arrived (call again
 * after Python has handled it); -1: a slot got no result in timeout_s * max_tries (err_*);
 * -2: the switch holds another round of a slot (err_*); -3: a socket error (err_errno). */
int aggc_run(struct aggc_call *c)
{
    int32_t nq = 0;
    if (!c->started) {
        c->started = 1;
        c->pending = c->n_active;
        double now = now_s();
        for (int32_t s = 0; s < c->n_active; s++) {
            c->cur[s] = c->dynamic && !c->predicted[s] ? -1 : 0;
            launch(c, s, &nq, now);
        }
        if (flush(c, &nq) < 0)
            return -3;
    }
    while (c->pending > 0) {
        /* retransmit what is due; the earliest next deadline bounds the wait */
        double now = now_s(), deadline = now + c->timeout_s;
        for (int32_t s = 0; s < c->n_active; s++) {
            if (c->tries[s] == 0)
                continue;
            double due = c->sent_at[s] + rto_for(c, c->tries[s]);
            if (due <= now) {
                if (now - c->first_sent[s] >= c->timeout_s * c->max_tries) {
                    c->err_slot = s;
                    c->err_round = c->rounds[s];
                    c->err_tries = c->tries[s];
                    return -1;
                }
                c->tx[(size_t)s * c->row + 1] = AGG_FLAG_RETX;
                c->tries[s] += 1;
                c->sent_at[s] = now;
                c->retransmissions += 1;
                c->sendq[nq++] = s;
                due = now + rto_for(c, c->tries[s]);
            }
            if (due < deadline)
                deadline = due;
        }
        if (flush(c, &nq) < 0)
            return -3;
        double wait = deadline - now_s();
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN, .revents = 0};
        struct timespec ts;
        if (wait < 0)
            wait = 0;
        ts.tv_sec = (time_t)wait;
        ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
        int w = ppoll(&pfd, 1, &ts, NULL);
        if (w < 0) {
            if (errno == EINTR)
                return 1;
            c->err_errno = errno;
            return -3;
        }
        if (w == 0)
            continue;
        int k = aggio_recv(c->fd, c->rx, c->row, c->rx_len, c->rx_rows, 0);
        if (k < 0) {
            c->err_errno = -k;
            return -3;
        }
        now = now_s();
        for (int i = 0; i < k; i++) {
            int r = absorb(c, c->rx + (size_t)i * c->row, c->rx_len[i], &nq, now);
            if (r < 0)
                return r;
        }
        if (flush(c, &nq) < 0)
            return -3;
    }
    return 0;
}

/* Block exponents of `chunks` rows of vpp floats (agg_protocol.block_exponents): per row the
 * biased exponent b with every |x| < 2^(b - 128), 0 for an all-zero row. Returns 0, -1 when a
 * value is NaN or infinite, -2 when one is 2^126 or more (b would reach the redo mark, 255). */
int aggc_exponents(const float *blocks, int64_t chunks, int32_t vpp, int64_t *out)
{
    for (int64_t k = 0; k < chunks; k++) {
        const float *x = blocks + (size_t)k * (size_t)vpp;
        /* |x| as its bit pattern: for non-negative floats integer order is float order, and
         * infinity and NaN are the patterns from 0x7f800000 up; an integer max vectorizes */
        uint32_t top = 0;
        for (int32_t i = 0; i < vpp; i++) {
            uint32_t u;
            memcpy(&u, &x[i], sizeof u);
            u &= 0x7fffffffu;
            top = u > top ? u : top;
        }
        if (top >= 0x7f800000u)
            return -1;
        float peak;
        memcpy(&peak, &top, sizeof peak);
        int e = 0;
        if (top != 0)
            frexp((double)peak, &e); /* peak = m * 2^e, 0.5 <= m < 1: peak < 2^e */
        int64_t b = top != 0 ? (int64_t)e + AGG_EXP_BIAS : 0;
        if (b >= AGG_EXP_REDO)
            return -2;
        out[k] = top != 0 && b < 1 ? 1 : b;
    }
    return 0;
}

/* ---- the replay switch path's request/reply exchange, in C ----------------------------------
 *
 * What SwitchReplayClient._exchange_table does per datagram, without Python per datagram: send
 * new requests while fewer than `window` are in flight, resend those past their due time (same
 * request id; ReplayTimeout in Python after max_tries), receive a batch, copy each one-datagram
 * reply into its request's row. A reply in fragments (a long SAMPLE_REPLY) goes to Python's
 * reassembler: rexc_run returns 2 with the batch's fragment rows listed, Python takes them and
 * calls again. State lives in the struct: the call resumes where it was.
 * Returns 0 (all answered), 1 (a wait ended empty: a resend may be due, or a signal came; call
 * again after Python has run its handlers), 2 (fragments for Python), -1 (a request ran out of
 * tries: err_index), -3 (a socket error: err_errno).
 */
#define REPLAY_HEADER_BYTES 32
#define REPLAY_FRAGMENT_BYTES 1400

int rexc_run(struct rexc_call *c)
{
    c->n_frag = 0;
    while (c->answered < c->n) {
        double now = now_s();
        int32_t nq = 0;
        while (c->next_new < c->n && c->in_flight < c->window) {
            int32_t i = c->next_new++;
            c->sendq[nq++] = i;
            c->tries[i] = 1;
            c->due[i] = now + c->timeout_s;
            c->outstanding[i] = 1;
            c->in_flight += 1;
        }
        double wake = now + c->timeout_s;
        for (int32_t i = 0; i < c->next_new; i++) {
            if (!c->outstanding[i])
                continue;
            if (c->due[i] <= now) {
                if (c->tries[i] >= c->max_tries) {
                    c->err_index = i;
                    c->err_tries = c->tries[i];
                    return -1;
                }
                c->sendq[nq++] = i;
                c->tries[i] += 1;
                c->due[i] = now + c->timeout_s;
                c->resent[i] = 1;
                c->resent_total += 1;
            }
            if (c->due[i] < wake)
                wake = c->due[i];
        }
        int sent = send_all(c->fd, c->tx, c->tx_row, c->sendq, c->tx_len, nq, c->ip_be, c->port_be, NULL);
        if (sent < 0) {
            c->err_errno = -sent;
            return -3;
        }
        double wait = wake - now_s();
        int64_t wait_ns = wait > 0 ? (int64_t)(wait * 1e9) : 0;
        int k = aggio_recv(c->fd, c->rx, c->rx_row, c->rx_len, c->rx_rows, wait_ns);
        if (k < 0) {
            c->err_errno = -k;
            return -3;
        }
        if (k == 0)
            return 1; /* a timeout, or a signal (aggio_recv cannot tell): Python looks, then resumes */
        for (int j = 0; j < k; j++) {
            const uint8_t *p = c->rx + (size_t)j * c->rx_row;
            uint32_t len = c->rx_len[j];
            if (len > c->rx_row)
                len = c->rx_row; /* truncated to the row (recvmmsg reports the datagram's length) */
            if (len < REPLAY_HEADER_BYTES) {
                c->stray += 1;
                continue;
            }
            uint32_t idx = get32(p + 4) - c->base; /* request id arithmetic, mod 2^32 */
            if (idx >= (uint32_t)c->n) {
                c->stray += 1;
                continue;
            }
            uint32_t frag_index = get16(p + 8), frag_count = get16(p + 10);
            if (frag_count != 1 || frag_index != 0 || len - REPLAY_HEADER_BYTES > REPLAY_FRAGMENT_BYTES) {
                c->frag[c->n_frag++] = j; /* a fragment: Python's reassembler */
                continue;
            }
            if (c->done[idx]) {
                c->stray += 1; /* a duplicate */
                continue;
            }
            memcpy(c->out + (size_t)idx * c->rx_row, p, len);
            c->out_len[idx] = len;
            c->done[idx] = 1;
            c->outstanding[idx] = 0;
            c->in_flight -= 1;
            c->answered += 1;
        }
        if (c->n_frag > 0)
            return 2;
    }
    return 0;
}
