/* io.c — packet I/O of the native software switch: ports bound to Linux interfaces, the
 * data-path thread, packet-out, per-port statistics (the API of ss_runtime.h's "ports and
 * data-path threads" section).
 *
 * Design
 * ------
 * ONE data-path thread serves every port.  The machine the switch runs on has two cores that
 * it shares with the hosts it serves; one thread that polls all ports keeps the pipeline on
 * one core, needs no cross-thread hand-off of frames, and makes "as if the pipeline processed
 * packets one at a time" trivial: the thread holds the switch lock (ss__lock) while it runs a
 * batch of at most IO_BATCH frames of one port through the pipeline, then releases it, so
 * control calls (table writes, register reads, packet-out) interleave between batches and an
 * entry written through the API applies to the next batch.  Ports are served round robin,
 * one batch each, so a flooded port cannot starve the others.
 *
 * Receive: AF_PACKET, TPACKET_V2 memory-mapped RX ring per port.  TPACKET_V3 (block ring) was
 * the first choice, but V3 hands a block to user space only when it is full or when its retire
 * timer fires (>= 1 ms), so at light load every frame would wait up to a millisecond per
 * switch hop; the project's request/response traffic (aggregation rounds, replay samples) is
 * latency bound.  V2 has the same zero-syscall, zero-copy reading (frames are fed to the
 * pipeline straight from the ring) and wakes the poller per frame.  Slots are sized from the
 * interface MTU; a larger frame (jumbo after an MTU change, a super-frame in offload mode) is
 * delivered in full through the socket's receive queue (PACKET_COPY_THRESH: the slot is marked
 * TP_STATUS_COPY) and read with recv(); frames above SS_MAX_FRAME (in offload mode: super-frames
 * above a full 65,535-byte IPv4 packet) are dropped and counted.
 *
 * Offload mode (ss_set_port_offloads): every frame in and out carries a virtio_net_hdr
 * (PACKET_VNET_HDR).  A received super-frame, or a frame whose checksum the host left partial,
 * goes through ss_off_split (offload.c) and reaches the pipeline as wire frames; at each flush
 * a run of queued output frames that ss_off_run_* accept leaves as one super-frame (its first
 * frame's headers rewritten in the arena, the others' payloads gathered by iovec).  VLAN tags
 * the kernel stripped into the slot header are put back into the frame.  Ring overruns are
 * counted by the kernel (PACKET_STATISTICS tp_drops) and reported as rx_dropped.
 *
 * Transmit: each port has a queue of up to IO_BATCH frames copied into an arena; it is sent
 * with one sendmmsg(MSG_DONTWAIT) after each pipeline batch (outside the lock) or when it
 * fills.  A frame the kernel refuses (EMSGSIZE above the MTU, EAGAIN with the send buffer
 * full, ENETDOWN) is dropped and counted in tx_dropped; the data path never blocks on send.
 * Packet-out (another thread, under the lock) sends its few outputs directly with send().
 * Two faster transmit paths were left out on purpose: PACKET_QDISC_BYPASS would silently skip
 * the tc qdiscs (tbf, netem) that topologies/launcher.py puts on the switch-side interfaces;
 * a TPACKET TX ring hands its slots back when the skb is orphaned, while the skb's page frags
 * still point into the ring, so over veth a host socket that reads late could see a slot we
 * already rewrote.  Measured (tests/io_run.sh bench): the kernel's transmit path is about two
 * thirds of the switch's ~1.4 us per forwarded frame, the pipeline and ring reading the rest.
 *
 * Sleeping: when no ring has a frame and no emulated link has a frame due, the thread sleeps
 * in ppoll() on all port sockets and an eventfd (ss_stop, new ports, new netem frames from
 * packet-out wake it); the timeout is the time to the next due netem frame (ns precision),
 * none otherwise.  No busy polling.
 *
 * Link emulation (netem.c): per port and direction, serviced by the same thread: received
 * frames pass ingress netem before the pipeline, outputs pass egress netem before the
 * transmit queue.  A port without netem has a NULL pointer there and pays one test.  The
 * global loss rate (ss_set_loss_rate, --loss-rate) drops received frames after ingress netem
 * and outputs before egress netem, as softswitch/__main__.py does; its losses are counted in
 * the port's netem_lost.
 *
 * Locking: everything in io_state and io_port is read and written with the switch lock held,
 * except (a) what only the data-path thread touches (transmit queues, the dp_* fields), (b)
 * the transmit counters, which only the data-path thread writes (relaxed atomics, read by
 * ss_get_port_stats), (c) start/stop state, under io->ctl.  Ports are never removed before
 * ss__io_free, so the thread may keep pointers to them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "netem.h"
#include "offload.h"
#include "ss_internal.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define IO_MAX_PORTS 512u          /* v1model ports are bit<9>; 511 is the drop port */
#define IO_BATCH 64u               /* frames per lock hold and per sendmmsg */
#define IO_TX_ARENA (256u * 1024u) /* bytes of queued output frames per port */
#define IO_RING_BYTES (8u << 20)   /* RX ring per port */
#define IO_RING_MIN_FRAMES 1024u
#define IO_RCVBUF (8 << 20)        /* receive queue of oversize frames (TP_STATUS_COPY) */
#define IO_SNDBUF (4 << 20)
/* a super-frame may carry a full 65,535-byte IPv4 packet: Ethernet, a VLAN tag and that (its wire
 * frames are each within SS_MAX_FRAME); + 1: MSG_TRUNC tells longer frames */
#define IO_MAX_SUPER (18u + 65535u)
#define IO_BIG_BUF (SS_VNET_HDR_LEN + IO_MAX_SUPER + 1u)
#define IO_VLAN_BUF (SS_MAX_FRAME + 4u)
#define IO_MAX_SLEEP_NS 500000000ull   /* safety net only: the eventfd wakes the thread */

typedef struct io_txq {
    uint32_t n;
    size_t used;
    uint8_t *arena;
    struct mmsghdr msgs[IO_BATCH];
    struct iovec iov[IO_BATCH];
} io_txq;

typedef struct io_port {
    uint32_t port;
    int ifindex;
    int fd;
    int vnet;                    /* offload mode: a virtio_net_hdr before every frame */
    uint32_t mtu;                /* the interface's, when bound: merged runs keep to it */
    char ifname[IF_NAMESIZE];
    /* RX ring */
    uint8_t *ring;
    size_t ring_len;
    uint32_t frame_size, frame_nr;
    uint32_t rx_idx;             /* next slot to read (data-path thread) */
    /* transmit queue (data-path thread) */
    io_txq tx;
    int tx_dirty;
    /* link emulation, [0] received frames, [1] frames sent to the port (lock) */
    ss_netem *nm[2];
    uint64_t nm_lost_gone, nm_qdrop_gone;  /* counts of netem directions removed */
    /* counters (lock) */
    uint64_t rx_packets, rx_bytes, rx_bad;  /* rx_bad: too long, unreadable */
    uint64_t kdrops;                        /* kernel ring drops, accumulated */
    uint64_t lost_rate;                     /* dropped by the global loss rate */
    uint64_t ctl_tx_packets, ctl_tx_bytes, ctl_tx_dropped;  /* packet-out's sends */
    /* counters written only by the data-path thread (relaxed atomics) */
    uint64_t tx_packets, tx_bytes, tx_dropped;
} io_port;

typedef struct io_state {
    struct ss_switch *sw;
    uint32_t cpu_port;
    io_port *ports[IO_MAX_PORTS];      /* by port number (lock) */
    io_port *list[IO_MAX_PORTS];       /* bound ports in order of binding (lock) */
    uint32_t n_ports;                  /* (lock; the thread reads it with the generation) */
    uint32_t n_netem;                  /* netem directions configured (lock, relaxed reads) */
    uint32_t gen;                      /* bumped when a port is added (relaxed atomic) */
    uint32_t loss_thr;                 /* global loss rate, parts per 2^32 (lock) */
    uint64_t loss_rng;
    uint64_t tx_unbound;               /* outputs to a port nobody bound (lock) */
    int wake_fd;                       /* eventfd */
    /* start/stop */
    pthread_mutex_t ctl;
    pthread_t thread;
    int running;
    int stop;                          /* relaxed atomic */
    /* data-path thread only */
    io_port *dirty[IO_MAX_PORTS];
    uint32_t n_dirty;
    uint8_t *big;                      /* oversize frames read with recv() */
    uint8_t *vlan;                     /* frames with their VLAN tag put back */
    uint8_t *seg;                      /* wire frames cut from a super-frame (offload mode) */
    /* transmit in offload mode: messages of a virtio_net_hdr and one frame or a merged run */
    struct mmsghdr vmsgs[IO_BATCH];
    struct iovec viov[2 * IO_BATCH];
    uint8_t vhdr[IO_BATCH][SS_VNET_HDR_LEN];
    uint32_t vframes[IO_BATCH];        /* wire frames in each message */
    uint64_t vbytes[IO_BATCH];         /* their bytes */
    int offloads;                      /* ports bound from now on use offload mode (lock) */
} io_state;

static const uint8_t no_vnet_hdr[SS_VNET_HDR_LEN];  /* no GSO, no checksum to finish */

/* ------------------------------------------------------------------ helpers */

static inline uint64_t ld64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void add64(uint64_t *p, uint64_t v)  /* single writer */
{
    __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

static void io_wake(io_state *io)
{
    uint64_t one = 1;
    ssize_t r = write(io->wake_fd, &one, sizeof one);
    (void)r;  /* EAGAIN: the counter is already non-zero, the thread will wake */
}

/* The io state of the switch, created on first use; call with the switch lock held. */
static io_state *io_get_locked(struct ss_switch *sw)
{
    void **slot = ss__io_slot(sw);
    if (*slot)
        return *slot;
    io_state *io = calloc(1, sizeof *io);
    if (!io)
        return NULL;
    io->sw = sw;
    io->cpu_port = ss__cpu_port(sw);
    io->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    io->big = malloc(IO_BIG_BUF);
    io->vlan = malloc(IO_VLAN_BUF);
    io->seg = malloc(SS_MAX_FRAME);
    if (io->wake_fd < 0 || !io->big || !io->vlan || !io->seg ||
        pthread_mutex_init(&io->ctl, NULL) != 0) {
        if (io->wake_fd >= 0)
            close(io->wake_fd);
        free(io->big);
        free(io->vlan);
        free(io->seg);
        free(io);
        return NULL;
    }
    io->loss_rng = ss_nm_mix(0, 0x10557a7eull);
    *slot = io;
    return io;
}

static io_state *io_get(struct ss_switch *sw)
{
    ss__lock(sw);
    io_state *io = io_get_locked(sw);
    ss__unlock(sw);
    return io;
}

static inline int lose(uint32_t thr, uint64_t *rng)
{
    return thr && (uint32_t)(ss_nm_rand(rng) >> 32) < thr;
}

/* ------------------------------------------------------------------ transmit */

/* sendmmsg of n messages; message k holds frames[k] wire frames of bytes[k] bytes (NULL: one
 * frame, its iovec's length).  A refused message is dropped and counted; the rest go on. */
static void tx_send(io_port *p, struct mmsghdr *msgs, uint32_t n, const uint32_t *frames,
                    const uint64_t *bytes_of)
{
    uint32_t i = 0;
    uint64_t sent = 0, dropped = 0, bytes = 0;
    while (i < n) {
        int r = sendmmsg(p->fd, msgs + i, n - i, MSG_DONTWAIT);
        if (r > 0) {
            for (uint32_t k = i; k < i + (uint32_t)r; k++) {
                sent += frames ? frames[k] : 1u;
                bytes += bytes_of ? bytes_of[k] : msgs[k].msg_hdr.msg_iov[0].iov_len;
            }
            i += (uint32_t)r;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else {  /* the message at i was refused: drop it, go on with the rest */
            dropped += frames ? frames[i] : 1u;
            i++;
        }
    }
    add64(&p->tx_packets, sent);
    add64(&p->tx_bytes, bytes);
    if (dropped)
        add64(&p->tx_dropped, dropped);
}

/* Offload mode: each run of frames that ss_off_run_* accept goes out as one super-frame (the
 * first frame, its headers rewritten in the arena, then the others' payloads: gathered, not
 * copied), every other frame alone behind an empty virtio_net_hdr. */
static void tx_flush_vnet(io_state *io, io_port *p)
{
    io_txq *q = &p->tx;
    uint32_t m = 0, g = 0, i = 0;
    while (i < q->n) {
        uint8_t *f0 = q->iov[i].iov_base;
        ss_off_run run;
        uint32_t j = i + 1;
        /* a merged frame skips the kernel's MTU check on the way out (packet_snd and veth
         * let GSO frames through): runs whose wire frames would not fit are not merged */
        if (ss_off_run_begin(&run, f0, (uint32_t)q->iov[i].iov_len) &&
            run.hdr_len + run.seg <= p->mtu + 14u)
            while (j < q->n && ss_off_run_add(&run, q->iov[j].iov_base, (uint32_t)q->iov[j].iov_len))
                j++;
        struct iovec *v = &io->viov[g];
        uint64_t bytes = q->iov[i].iov_len;
        v[1] = q->iov[i];
        if (j - i >= 2) {
            ss_vnet_hdr vh;
            ss_off_run_finish(&run, f0, &vh);
            ss_vnet_store(&vh, io->vhdr[m]);
            v[0].iov_base = io->vhdr[m];
            for (uint32_t k = i + 1; k < j; k++) {
                v[1 + k - i].iov_base = (uint8_t *)q->iov[k].iov_base + run.hdr_len;
                v[1 + k - i].iov_len = q->iov[k].iov_len - run.hdr_len;
                bytes += q->iov[k].iov_len;
            }
        } else {
            v[0].iov_base = (void *)(uintptr_t)no_vnet_hdr;  /* only read by sendmmsg */
        }
        v[0].iov_len = SS_VNET_HDR_LEN;
        memset(&io->vmsgs[m], 0, sizeof io->vmsgs[m]);
        io->vmsgs[m].msg_hdr.msg_iov = v;
        io->vmsgs[m].msg_hdr.msg_iovlen = 1u + (j - i);
        io->vframes[m] = j - i;
        io->vbytes[m] = bytes;
        g += 1u + (j - i);
        m++;
        i = j;
    }
    tx_send(p, io->vmsgs, m, io->vframes, io->vbytes);
}

static void tx_flush(io_state *io, io_port *p)
{
    io_txq *q = &p->tx;
    if (p->vnet)
        tx_flush_vnet(io, p);
    else
        tx_send(p, q->msgs, q->n, NULL, NULL);
    q->n = 0;
    q->used = 0;
}

static void tx_flush_dirty(io_state *io)
{
    for (uint32_t i = 0; i < io->n_dirty; i++) {
        io_port *p = io->dirty[i];
        p->tx_dirty = 0;
        tx_flush(io, p);
    }
    io->n_dirty = 0;
}

/* Queue one frame on a port (data-path thread). */
static void tx_append(io_state *io, io_port *p, const uint8_t *frame, uint32_t len)
{
    io_txq *q = &p->tx;
    if (q->n == IO_BATCH || q->used + len > IO_TX_ARENA)
        tx_flush(io, p);
    if (len > IO_TX_ARENA) {  /* cannot happen (frames <= SS_MAX_FRAME) */
        add64(&p->tx_dropped, 1);
        return;
    }
    uint8_t *dst = q->arena + q->used;
    memcpy(dst, frame, len);
    q->iov[q->n].iov_base = dst;
    q->iov[q->n].iov_len = len;
    q->n++;
    q->used += (len + 15u) & ~(size_t)15u;
    if (!p->tx_dirty) {
        p->tx_dirty = 1;
        io->dirty[io->n_dirty++] = p;
    }
}

/* ------------------------------------------------------------------ pipeline glue */

typedef struct emit_ctx {
    io_state *io;
    int direct;  /* 1: packet-out (not the data-path thread): send() at once */
} emit_ctx;

static void to_wire(emit_ctx *e, io_port *p, const uint8_t *frame, uint32_t len)
{
    if (!e->direct) {
        tx_append(e->io, p, frame, len);
        return;
    }
    struct iovec v[2] = {{(void *)(uintptr_t)no_vnet_hdr, SS_VNET_HDR_LEN},
                         {(void *)(uintptr_t)frame, len}};  /* only read by sendmsg */
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = p->vnet ? v : v + 1;
    mh.msg_iovlen = p->vnet ? 2 : 1;
    ssize_t r;
    do
        r = sendmsg(p->fd, &mh, MSG_DONTWAIT);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        p->ctl_tx_dropped++;
    } else {
        p->ctl_tx_packets++;
        p->ctl_tx_bytes += len;
    }
}

/* ss_emit_fn: an output of the pipeline (lock held). */
static void on_output(void *arg, uint32_t port, const uint8_t *frame, uint32_t len)
{
    emit_ctx *e = arg;
    io_state *io = e->io;
    if (port == io->cpu_port) {
        ss__packet_in_push(io->sw, frame, len);
        return;
    }
    io_port *p = port < IO_MAX_PORTS ? io->ports[port] : NULL;
    if (!p) {
        io->tx_unbound++;
        return;
    }
    if (lose(io->loss_thr, &io->loss_rng)) {
        p->lost_rate++;
        return;
    }
    ss_netem *nm = p->nm[1];
    if (nm) {
        uint64_t now = ss_nm_schedules(nm) ? ss_nm_now() : 0;
        if (ss_nm_submit(nm, now, frame, len) != SS_NM_PASS)
            return;
    }
    to_wire(e, p, frame, len);
}

/* A received frame, after ingress netem (lock held, data-path thread). */
static void to_pipeline(io_state *io, io_port *p, const uint8_t *frame, uint32_t len)
{
    if (lose(io->loss_thr, &io->loss_rng)) {
        p->lost_rate++;
        return;
    }
    emit_ctx e = {io, 0};
    (void)ss__run_pipeline(io->sw, p->port, frame, len, on_output, &e);
}

/* ------------------------------------------------------------------ receive */

static inline struct tpacket2_hdr *rx_slot(io_port *p, uint32_t i)
{
    return (struct tpacket2_hdr *)(void *)(p->ring + (size_t)i * p->frame_size);
}

static inline int slot_ready(struct tpacket2_hdr *h)
{
    return (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) != 0;
}

/* What a received wire frame needs besides its bytes: the slot's VLAN tag and status. */
typedef struct rx_ctx {
    io_state *io;
    io_port *p;
    const struct tpacket2_hdr *h;
    uint32_t status;
} rx_ctx;

/* A wire frame (a received one, or one cut from a super-frame): its VLAN tag put back, counted,
 * through ingress netem into the pipeline (ss_seg_fn; lock held, data-path thread). */
static void rx_deliver(void *arg, uint8_t *frame, uint32_t len)
{
    rx_ctx *c = arg;
    io_port *p = c->p;
    const uint8_t *data = frame;
    if (c->status & TP_STATUS_VLAN_VALID) {  /* the kernel took the tag off: put it back */
        if (len < 12 || len + 4 > SS_MAX_FRAME) {
            p->rx_bad++;
            return;
        }
        uint16_t tpid = (c->status & TP_STATUS_VLAN_TPID_VALID) ? c->h->tp_vlan_tpid : ETH_P_8021Q;
        uint8_t *v = c->io->vlan;
        memcpy(v, frame, 12);
        v[12] = (uint8_t)(tpid >> 8);
        v[13] = (uint8_t)tpid;
        v[14] = (uint8_t)(c->h->tp_vlan_tci >> 8);
        v[15] = (uint8_t)c->h->tp_vlan_tci;
        memcpy(v + 16, frame + 12, len - 12);
        data = v;
        len += 4;
    }
    p->rx_packets++;
    p->rx_bytes += len;
    ss_netem *nm = p->nm[0];
    if (nm) {
        uint64_t now = ss_nm_schedules(nm) ? ss_nm_now() : 0;
        if (ss_nm_submit(nm, now, data, len) != SS_NM_PASS)
            return;
    }
    to_pipeline(c->io, p, data, len);
}

/* One ring slot (lock held, data-path thread). */
static void rx_one(io_state *io, io_port *p, struct tpacket2_hdr *h)
{
    uint32_t status = h->tp_status;
    const struct sockaddr_ll *sll =
        (const struct sockaddr_ll *)(const void *)((const uint8_t *)h + TPACKET_ALIGN(sizeof *h));
    uint8_t *data;
    uint32_t len;
    uint32_t vnet = p->vnet ? SS_VNET_HDR_LEN : 0u;
    const uint8_t *vraw;
    if (status & TP_STATUS_COPY) {  /* did not fit the slot: the whole frame is queued */
        ssize_t n;
        do
            n = recv(p->fd, io->big, IO_BIG_BUF, MSG_DONTWAIT | MSG_TRUNC);
        while (n < 0 && errno == EINTR);
        if (n <= (ssize_t)vnet || (size_t)n - vnet > (vnet ? IO_MAX_SUPER : SS_MAX_FRAME)) {
            p->rx_bad++;
            return;
        }
        vraw = io->big;
        data = io->big + vnet;
        len = (uint32_t)n - vnet;
    } else {
        if (h->tp_snaplen < h->tp_len || h->tp_snaplen == 0 || h->tp_mac < vnet ||
            (uint64_t)h->tp_mac + h->tp_snaplen > p->frame_size) {
            p->rx_bad++;  /* truncated and no copy (receive queue full) */
            return;
        }
        data = (uint8_t *)h + h->tp_mac;  /* the slot is ours until it is handed back */
        vraw = data - vnet;
        len = h->tp_snaplen;
    }
    if (sll->sll_pkttype == PACKET_OUTGOING)  /* our own (kernels without IGNORE_OUTGOING) */
        return;
    rx_ctx c = {io, p, h, status};
    if (vnet) {
        ss_vnet_hdr vh;
        ss_vnet_load(&vh, vraw);
        if (vh.gso_type == SS_VNET_GSO_NONE && len > SS_MAX_FRAME) {
            p->rx_bad++;  /* only a super-frame may be longer (its wire frames are not) */
            return;
        }
        if (vh.gso_type != SS_VNET_GSO_NONE || (vh.flags & SS_VNET_F_NEEDS_CSUM)) {
            if (ss_off_split(&vh, data, len, io->seg, SS_MAX_FRAME, rx_deliver, &c) < 0)
                p->rx_bad++;  /* a super-frame its header does not describe */
            return;
        }
    }
    rx_deliver(&c, data, len);
}

/* Up to IO_BATCH frames of one port through the pipeline under one lock hold. */
static unsigned rx_batch(io_state *io, io_port *p)
{
    struct tpacket2_hdr *h = rx_slot(p, p->rx_idx);
    if (!slot_ready(h))
        return 0;
    unsigned n = 0;
    ss__lock_dp(io->sw);
    do {
        rx_one(io, p, h);
        __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        if (++p->rx_idx == p->frame_nr)
            p->rx_idx = 0;
        h = rx_slot(p, p->rx_idx);
    } while (++n < IO_BATCH && slot_ready(h));
    ss__unlock(io->sw);
    tx_flush_dirty(io);
    return n;
}

/* ------------------------------------------------------------------ netem service */

/* Time of the next due netem frame (lock held). */
static uint64_t netem_next_due(io_state *io)
{
    uint64_t t = UINT64_MAX;
    for (uint32_t k = 0; k < io->n_ports; k++)
        for (int d = 0; d < 2; d++) {
            ss_netem *nm = io->list[k]->nm[d];
            if (nm) {
                uint64_t due = ss_nm_next_due(nm);
                if (due < t)
                    t = due;
            }
        }
    return t;
}

/* Hand on the netem frames that are due, at most IO_BATCH (data-path thread). */
static unsigned netem_service(io_state *io)
{
    unsigned n = 0;
    ss__lock_dp(io->sw);
    uint64_t now = ss_nm_now();
    for (uint32_t k = 0; k < io->n_ports && n < IO_BATCH; k++) {
        io_port *p = io->list[k];
        for (int d = 0; d < 2 && n < IO_BATCH; d++) {
            ss_nm_frame *f;
            while (n < IO_BATCH && p->nm[d] && (f = ss_nm_pop_due(p->nm[d], now))) {
                if (d == 0)
                    to_pipeline(io, p, f->data, f->len);
                else
                    tx_append(io, p, f->data, f->len);
                free(f);
                n++;
            }
        }
    }
    ss__unlock(io->sw);
    tx_flush_dirty(io);
    return n;
}

/* ------------------------------------------------------------------ the data-path thread */

static void clear_socket_error(int fd)
{
    int err = 0;
    socklen_t l = sizeof err;
    (void)getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
}

static void *dp_main(void *arg)
{
    io_state *io = arg;
    io_port *ports[IO_MAX_PORTS];
    struct pollfd pfd[IO_MAX_PORTS + 1];
    uint32_t n = 0, gen = 0;
    int have_gen = 0;
    pfd[0].fd = io->wake_fd;
    pfd[0].events = POLLIN;
    while (!__atomic_load_n(&io->stop, __ATOMIC_RELAXED)) {
        uint32_t g = __atomic_load_n(&io->gen, __ATOMIC_ACQUIRE);
        if (!have_gen || g != gen) {  /* ports were added: take the new list */
            ss__lock_dp(io->sw);
            gen = __atomic_load_n(&io->gen, __ATOMIC_RELAXED);
            n = io->n_ports;
            memcpy(ports, io->list, n * sizeof ports[0]);
            ss__unlock(io->sw);
            for (uint32_t i = 0; i < n; i++) {
                pfd[i + 1].fd = ports[i]->fd;
                pfd[i + 1].events = POLLIN;
            }
            have_gen = 1;
        }
        unsigned work = 0;
        for (uint32_t i = 0; i < n; i++)
            work += rx_batch(io, ports[i]);
        if (__atomic_load_n(&io->n_netem, __ATOMIC_RELAXED))
            work += netem_service(io);
        if (work)
            continue;
        /* idle: sleep until a frame arrives, a netem frame is due, or we are woken */
        uint64_t due = UINT64_MAX;
        if (__atomic_load_n(&io->n_netem, __ATOMIC_RELAXED)) {
            ss__lock_dp(io->sw);
            due = netem_next_due(io);
            ss__unlock(io->sw);
        }
        uint64_t now = ss_nm_now();
        uint64_t wait = IO_MAX_SLEEP_NS;
        if (due != UINT64_MAX)
            wait = due <= now ? 0 : (due - now < wait ? due - now : wait);
        if (wait == 0)
            continue;
        struct timespec ts = {(time_t)(wait / 1000000000ull), (long)(wait % 1000000000ull)};
        int r = ppoll(pfd, n + 1, &ts, NULL);
        if (r <= 0)
            continue;
        if (pfd[0].revents & POLLIN) {
            uint64_t v;
            ssize_t rr = read(io->wake_fd, &v, sizeof v);
            (void)rr;
        }
        for (uint32_t i = 0; i < n; i++) {
            short re = pfd[i + 1].revents;
            if (re & POLLERR)  /* e.g. ENETDOWN when the interface goes down: clear it */
                clear_socket_error(pfd[i + 1].fd);
            if (re & POLLNVAL)  /* cannot happen (fds live until ss__io_free); never spin */
                pfd[i + 1].fd = -1;
        }
    }
    tx_flush_dirty(io);
    return NULL;
}

/* ------------------------------------------------------------------ ports */

static int bad_ifname(const char *s)
{
    size_t l = strnlen(s, IF_NAMESIZE);
    if (l == 0 || l >= IF_NAMESIZE)
        return 1;
    for (size_t i = 0; i < l; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c == '/' || c == ':' || c >= 0x7f)
            return 1;
    }
    return 0;
}

static void port_close(io_port *p)
{
    if (!p)
        return;
    if (p->ring && p->ring != MAP_FAILED)
        munmap(p->ring, p->ring_len);
    if (p->fd >= 0)
        close(p->fd);
    ss_nm_free(p->nm[0]);
    ss_nm_free(p->nm[1]);
    free(p->tx.arena);
    free(p);
}

static uint32_t pow2_at_least(uint32_t v)
{
    uint32_t x = 1;
    while (x < v)
        x <<= 1;
    return x;
}

/* Open and configure the socket and ring of a port (no lock held). */
static int port_open(struct ss_switch *sw, uint32_t port, const char *ifname, int vnet,
                     io_port **out)
{
    io_port *p = calloc(1, sizeof *p);
    if (!p)
        return ss__error(sw, SS_ENOMEM, "out of memory binding port %u", port);
    p->fd = -1;
    p->port = port;
    p->vnet = vnet;
    memcpy(p->ifname, ifname, strlen(ifname) + 1);
    p->ifindex = (int)if_nametoindex(ifname);
    int rc;
    if (p->ifindex == 0) {
        rc = ss__error(sw, SS_ENOENT, "network interface '%s' does not exist (see `ip link`)",
                       ifname);
        goto fail;
    }
    /* protocol 0: receives nothing until bind() names the interface and ETH_P_ALL */
    p->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (p->fd < 0) {
        int e = errno;
        rc = ss__error(sw, e == EPERM || e == EACCES ? SS_EINVAL : SS_EIO,
                       "cannot open a raw socket for '%s': %s%s", ifname, strerror(e),
                       e == EPERM || e == EACCES ? " (AF_PACKET needs root or CAP_NET_RAW)" : "");
        goto fail;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, ifname, strlen(ifname));
    if (ioctl(p->fd, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
        ifr.ifr_flags = (short)(ifr.ifr_flags | IFF_UP);
        if (ioctl(p->fd, SIOCSIFFLAGS, &ifr) != 0) {
            rc = ss__error(sw, SS_EIO, "cannot bring '%s' up: %s%s", ifname, strerror(errno),
                           errno == EPERM ? " (needs root or CAP_NET_ADMIN)" : "");
            goto fail;
        }
    }
    int mtu = 1500;
    memset(&ifr, 0, sizeof ifr);
    memcpy(ifr.ifr_name, ifname, strlen(ifname));
    if (ioctl(p->fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
        mtu = ifr.ifr_mtu;
    p->mtu = (uint32_t)mtu;
    int v = TPACKET_V2;
    if (setsockopt(p->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof v) != 0) {
        rc = ss__error(sw, SS_EIO, "'%s': TPACKET_V2 not supported: %s", ifname, strerror(errno));
        goto fail;
    }
    if (vnet) {  /* before the ring: the kernel sizes the slots' headroom by it */
        v = 1;
        if (setsockopt(p->fd, SOL_PACKET, PACKET_VNET_HDR, &v, sizeof v) != 0) {
            rc = ss__error(sw, SS_EIO, "'%s': offload mode needs PACKET_VNET_HDR: %s", ifname,
                           strerror(errno));
            goto fail;
        }
    }
    /* slot: header + sockaddr_ll + alignment (80 bytes before the network header), the
     * virtio_net_hdr in offload mode, the Ethernet header, an inner VLAN tag, the MTU; larger
     * frames (super-frames too) take the TP_STATUS_COPY path */
    uint32_t need = 80u + SS_VNET_HDR_LEN + 14u + 8u + (uint32_t)(mtu < 65536 ? mtu : 65536);
    p->frame_size = pow2_at_least(need < 2048u ? 2048u : need);
    if (p->frame_size > 65536u)
        p->frame_size = 65536u;
    uint32_t block = p->frame_size > 131072u ? p->frame_size : 131072u;
    p->frame_nr = IO_RING_BYTES / p->frame_size;
    if (p->frame_nr < IO_RING_MIN_FRAMES)
        p->frame_nr = IO_RING_MIN_FRAMES;
    uint32_t per_block = block / p->frame_size;
    p->frame_nr = (p->frame_nr + per_block - 1) / per_block * per_block;
    struct tpacket_req req = {.tp_block_size = block,
                              .tp_block_nr = p->frame_nr / per_block,
                              .tp_frame_size = p->frame_size,
                              .tp_frame_nr = p->frame_nr};
    if (setsockopt(p->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0) {
        rc = ss__error(sw, SS_ENOMEM, "'%s': cannot set up the receive ring (%u x %u bytes): %s",
                       ifname, p->frame_nr, p->frame_size, strerror(errno));
        goto fail;
    }
    p->ring_len = (size_t)req.tp_block_size * req.tp_block_nr;
    p->ring = mmap(NULL, p->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
    if (p->ring == MAP_FAILED) {
        p->ring = NULL;
        rc = ss__error(sw, SS_ENOMEM, "'%s': cannot map the receive ring: %s", ifname,
                       strerror(errno));
        goto fail;
    }
    v = 1;  /* frames that do not fit a slot are queued in full on the socket */
    (void)setsockopt(p->fd, SOL_PACKET, PACKET_COPY_THRESH, &v, sizeof v);
    v = IO_RCVBUF;
    if (setsockopt(p->fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof v) != 0)
        (void)setsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    v = IO_SNDBUF;
    if (setsockopt(p->fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof v) != 0)
        (void)setsockopt(p->fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
    v = 1;  /* never see our own transmissions (the pkttype test in rx_one is the fallback) */
    (void)setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &v, sizeof v);
    struct sockaddr_ll sll;
    memset(&sll, 0, sizeof sll);
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = p->ifindex;
    if (bind(p->fd, (struct sockaddr *)&sll, sizeof sll) != 0) {
        rc = ss__error(sw, SS_EIO, "cannot bind a raw socket to '%s': %s", ifname, strerror(errno));
        goto fail;
    }
    struct packet_mreq mr;
    memset(&mr, 0, sizeof mr);
    mr.mr_ifindex = p->ifindex;
    mr.mr_type = PACKET_MR_PROMISC;  /* undone by the kernel when the socket closes */
    if (setsockopt(p->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) != 0) {
        rc = ss__error(sw, SS_EIO, "cannot put '%s' in promiscuous mode: %s", ifname,
                       strerror(errno));
        goto fail;
    }
    p->tx.arena = malloc(IO_TX_ARENA);
    if (!p->tx.arena) {
        rc = ss__error(sw, SS_ENOMEM, "out of memory binding port %u", port);
        goto fail;
    }
    for (uint32_t i = 0; i < IO_BATCH; i++) {
        p->tx.msgs[i].msg_hdr.msg_iov = &p->tx.iov[i];
        p->tx.msgs[i].msg_hdr.msg_iovlen = 1;
    }
    *out = p;
    return SS_OK;
fail:
    port_close(p);
    return rc;
}

int ss_port_add(struct ss_switch *sw, uint32_t port, const char *ifname)
{
    if (!sw)
        return SS_EINVAL;
    if (!ifname || bad_ifname(ifname))
        return ss__error(sw, SS_EINVAL,
                         "invalid interface name: 1 to %d characters, no spaces, '/' or ':'",
                         IF_NAMESIZE - 1);
    if (port >= IO_MAX_PORTS - 1)
        return ss__error(sw, SS_EINVAL, "port %u is out of range 0..%u (511 is the drop port)",
                         port, IO_MAX_PORTS - 2);
    if (port == ss__cpu_port(sw))
        return ss__error(sw, SS_EINVAL, "port %u is the CPU port; bind interfaces to other ports",
                         port);
    io_state *io = io_get(sw);
    if (!io)
        return ss__error(sw, SS_ENOMEM, "out of memory");
    io_port *p = NULL;
    ss__lock(sw);
    int vnet = io->offloads;
    ss__unlock(sw);
    int rc = port_open(sw, port, ifname, vnet, &p);
    if (rc != SS_OK)
        return rc;
    ss__lock(sw);
    if (io->ports[port]) {
        rc = ss__error(sw, SS_EEXIST, "port %u is already bound to '%s'", port,
                       io->ports[port]->ifname);
    } else {
        for (uint32_t k = 0; k < io->n_ports; k++)
            if (strcmp(io->list[k]->ifname, ifname) == 0)
                rc = ss__error(sw, SS_EEXIST, "interface '%s' is already bound to port %u",
                               ifname, io->list[k]->port);
    }
    if (rc == SS_OK && io->offloads != vnet)
        rc = ss__error(sw, SS_EEXIST, "offload mode changed while port %u was being bound", port);
    if (rc == SS_OK) {
        io->ports[port] = p;
        io->list[io->n_ports++] = p;
        __atomic_add_fetch(&io->gen, 1, __ATOMIC_RELEASE);
    }
    ss__unlock(sw);
    if (rc != SS_OK) {
        port_close(p);
        return rc;
    }
    io_wake(io);
    return SS_OK;
}

/* Whether a kernel release ("6.18.4-...") is at least major.minor. */
static int release_at_least(const char *release, unsigned major, unsigned minor)
{
    unsigned a = 0, b = 0;
    if (sscanf(release, "%u.%u", &a, &b) != 2)
        return 0;
    return a > major || (a == major && b >= minor);
}

int ss_set_port_offloads(struct ss_switch *sw, int on)
{
    if (!sw)
        return SS_EINVAL;
    struct utsname u;
    if (uname(&u) != 0)
        strcpy(u.release, "unknown");
    int rc = SS_OK;
    ss__lock(sw);
    io_state *io = io_get_locked(sw);
    if (!io)
        rc = ss__error(sw, SS_ENOMEM, "out of memory");
    else if (io->n_ports)
        rc = ss__error(sw, SS_EEXIST, "offload mode is chosen before the first port is bound "
                                      "(%u bound)", io->n_ports);
    else if (on && !release_at_least(u.release, 6, 2))
        rc = ss__error(sw, SS_EINVAL, "offload mode needs Linux 6.2 or newer (UDP segmentation "
                                      "through packet sockets); this kernel is %s", u.release);
    else
        io->offloads = on != 0;
    ss__unlock(sw);
    return rc;
}

int ss_port_netem(struct ss_switch *sw, uint32_t port, int dir, uint64_t delay_ns,
                  uint64_t jitter_ns, uint32_t loss, uint64_t rate_bps, uint32_t limit,
                  uint64_t backlog_ns, uint64_t seed)
{
    if (!sw)
        return SS_EINVAL;
    if (dir != 0 && dir != 1)
        return ss__error(sw, SS_EINVAL, "netem direction %d: 0 (received) or 1 (sent)", dir);
    ss_nm_params prm = {delay_ns, jitter_ns, loss, rate_bps, limit, backlog_ns};
    int rc = SS_OK;
    ss__lock(sw);
    io_state *io = io_get_locked(sw);
    io_port *p = io && port < IO_MAX_PORTS ? io->ports[port] : NULL;
    if (!io) {
        rc = ss__error(sw, SS_ENOMEM, "out of memory");
    } else if (!p) {
        rc = ss__error(sw, SS_ENOENT, "netem on port %u, which no interface is bound to", port);
    } else if (ss_nm_params_transparent(&prm)) {
        if (p->nm[dir]) {  /* frames still held are discarded (counted as queue drops) */
            uint64_t lost, qdrop;
            ss_nm_counts(p->nm[dir], &lost, &qdrop, NULL);
            p->nm_lost_gone += lost;
            p->nm_qdrop_gone += qdrop + ss_nm_queued(p->nm[dir]);
            ss_nm_free(p->nm[dir]);
            p->nm[dir] = NULL;
            __atomic_sub_fetch(&io->n_netem, 1, __ATOMIC_RELAXED);
        }
    } else if (p->nm[dir]) {
        ss_nm_configure(p->nm[dir], &prm, seed, ((uint64_t)port << 1) | (uint64_t)dir);
    } else {
        p->nm[dir] = ss_nm_new(&prm, seed, ((uint64_t)port << 1) | (uint64_t)dir);
        if (!p->nm[dir])
            rc = ss__error(sw, SS_ENOMEM, "out of memory");
        else
            __atomic_add_fetch(&io->n_netem, 1, __ATOMIC_RELAXED);
    }
    ss__unlock(sw);
    if (io)
        io_wake(io);
    return rc;
}

int ss_set_loss_rate(struct ss_switch *sw, double loss_rate, uint64_t seed)
{
    if (!sw)
        return SS_EINVAL;
    if (!(loss_rate >= 0.0 && loss_rate < 1.0))
        return ss__error(sw, SS_EINVAL, "loss rate %g must be in [0, 1)", loss_rate);
    double t = loss_rate * 4294967296.0;
    uint32_t thr = t >= 4294967295.0 ? UINT32_MAX : (uint32_t)t;
    if (thr == 0 && loss_rate > 0.0)
        thr = 1;
    int rc = SS_OK;
    ss__lock(sw);
    io_state *io = io_get_locked(sw);
    if (io) {
        io->loss_thr = thr;
        io->loss_rng = ss_nm_mix(seed, 0x10557a7eull);
    } else {
        rc = ss__error(sw, SS_ENOMEM, "out of memory");
    }
    ss__unlock(sw);
    return rc;
}

/* ------------------------------------------------------------------ start, stop, free */

int ss_start(struct ss_switch *sw)
{
    if (!sw)
        return SS_EINVAL;
    io_state *io = io_get(sw);
    if (!io)
        return ss__error(sw, SS_ENOMEM, "out of memory");
    pthread_mutex_lock(&io->ctl);
    int rc = SS_OK;
    if (io->running) {
        rc = ss__error(sw, SS_EEXIST, "the switch is already started");
    } else {
        __atomic_store_n(&io->stop, 0, __ATOMIC_RELAXED);
        sigset_t all, old;
        sigfillset(&all);  /* signals stay with the application's threads */
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int e = pthread_create(&io->thread, NULL, dp_main, io);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (e != 0) {
            rc = ss__error(sw, SS_ENOMEM, "cannot start the data-path thread: %s", strerror(e));
        } else {
            (void)pthread_setname_np(io->thread, "ss-datapath");
            io->running = 1;
        }
    }
    pthread_mutex_unlock(&io->ctl);
    return rc;
}

static void io_stop(io_state *io)
{
    pthread_mutex_lock(&io->ctl);
    if (io->running) {
        __atomic_store_n(&io->stop, 1, __ATOMIC_RELAXED);
        io_wake(io);
        pthread_join(io->thread, NULL);
        io->running = 0;
    }
    pthread_mutex_unlock(&io->ctl);
}

int ss_stop(struct ss_switch *sw)
{
    if (!sw)
        return SS_EINVAL;
    ss__lock(sw);
    io_state *io = *ss__io_slot(sw);
    ss__unlock(sw);
    if (io)
        io_stop(io);
    return SS_OK;
}

void ss__io_free(struct ss_switch *sw)
{
    if (!sw)
        return;
    void **slot = ss__io_slot(sw);
    io_state *io = *slot;
    if (!io)
        return;
    io_stop(io);
    for (uint32_t k = 0; k < io->n_ports; k++)
        port_close(io->list[k]);
    close(io->wake_fd);
    pthread_mutex_destroy(&io->ctl);
    free(io->big);
    free(io->vlan);
    free(io->seg);
    free(io);
    *slot = NULL;
}

/* ------------------------------------------------------------------ packet-out, stats */

int ss_packet_out(struct ss_switch *sw, const uint8_t *data, uint32_t len)
{
    if (!sw)
        return SS_EINVAL;
    if (!data || len == 0 || len > SS_MAX_FRAME)
        return ss__error(sw, SS_EINVAL, "packet-out of %u bytes: 1 to %u", len, SS_MAX_FRAME);
    ss__lock(sw);
    io_state *io = io_get_locked(sw);
    int rc;
    if (!io) {
        rc = ss__error(sw, SS_ENOMEM, "out of memory");
    } else {
        emit_ctx e = {io, 1};
        rc = ss__run_pipeline(sw, io->cpu_port, data, len, on_output, &e);
    }
    int netem = io && io->n_netem;
    ss__unlock(sw);
    if (netem)  /* an output may have been queued on an emulated link: re-arm the timer */
        io_wake(io);
    return rc < 0 ? rc : SS_OK;
}

int ss_get_port_stats(struct ss_switch *sw, uint32_t port, ss_port_stats *st)
{
    if (!sw)
        return SS_EINVAL;
    if (!st)
        return ss__error(sw, SS_EINVAL, "no stats buffer");
    int rc = SS_OK;
    ss__lock(sw);
    io_state *io = *ss__io_slot(sw);
    io_port *p = io && port < IO_MAX_PORTS ? io->ports[port] : NULL;
    if (!p) {
        rc = ss__error(sw, SS_ENOENT, "port %u is not bound", port);
    } else {
        struct tpacket_stats ks;
        socklen_t l = sizeof ks;
        if (getsockopt(p->fd, SOL_PACKET, PACKET_STATISTICS, &ks, &l) == 0)
            p->kdrops += ks.tp_drops;  /* the kernel resets its counters on each read */
        memset(st, 0, sizeof *st);
        st->rx_packets = p->rx_packets;
        st->rx_bytes = p->rx_bytes;
        st->tx_packets = ld64(&p->tx_packets) + p->ctl_tx_packets;
        st->tx_bytes = ld64(&p->tx_bytes) + p->ctl_tx_bytes;
        st->rx_dropped = p->kdrops + p->rx_bad;
        st->tx_dropped = ld64(&p->tx_dropped) + p->ctl_tx_dropped;
        st->netem_lost = p->nm_lost_gone + p->lost_rate;
        st->netem_qdrop = p->nm_qdrop_gone;
        for (int d = 0; d < 2; d++)
            if (p->nm[d]) {
                uint64_t lost, qdrop;
                ss_nm_counts(p->nm[d], &lost, &qdrop, NULL);
                st->netem_lost += lost;
                st->netem_qdrop += qdrop;
            }
    }
    ss__unlock(sw);
    return rc;
}
