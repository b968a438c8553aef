/* DPDK poll-mode I/O path of the replay server (see io.h and docs/replay_protocol.md).
 *
 * One ethdev port (the first one EAL finds: a NIC bound to a DPDK driver, or a --vdev such as
 * net_af_packet0,iface=veth0), one rx and one tx queue, no offloads: this file is the server's
 * IP stack. It answers ARP requests for the configured address, takes IPv4/UDP datagrams to
 * that address and the server's port, and builds Ethernet/IPv4/UDP frames for the replies with
 * both checksums computed in software. Everything else that arrives is dropped and counted; the
 * counts are logged when the path closes.
 *
 * Not handled, on purpose: IP fragments (the protocol's datagrams fit one 1500-byte frame),
 * IP options on replies, VLAN tags (tagged frames are dropped: rs_peer has no field for a tag,
 * so a reply could not carry it back), ICMP (no ping answers), an ARP cache (replies go to the
 * Ethernet source of the request, kept in rs_peer.mac). */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>

#include <rte_arp.h>
#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pause.h>
#include <rte_random.h>
#include <rte_udp.h>

#include "io.h"

#define BURST 32
#define NUM_MBUFS 4095 /* a power of two minus one suits the mempool's ring */
#define MBUF_CACHE 256
#define RX_DESC 1024
#define TX_DESC 1024
#define TX_RETRIES 64 /* tx_burst attempts for one burst before the rest is given up */
#define PORT_MTU 1500
#define MAX_EAL_ARGS 64
/* Idle polling, by time since the last frame: spin with rte_pause() for SPIN_NS (a busy
 * server answers at once), then nanosleep SHORT_SLEEP_NS between polls until NAP_AFTER_NS, then
 * LONG_SLEEP_NS, so an idle server leaves its core to others (measured on a 2-core VM: ~20% of a
 * core with 20 us sleeps, a few % with 200 us) at the cost of that much latency for the first
 * request after a pause. */
#define SPIN_NS 200000ULL
#define SHORT_SLEEP_NS 20000L
#define NAP_AFTER_NS 20000000ULL
#define LONG_SLEEP_NS 200000L

/* The largest frame we build (Ethernet + IPv4 + UDP + RS_MAX_DATAGRAM) fits one mbuf. */
_Static_assert(RTE_MBUF_DEFAULT_DATAROOM >= RTE_ETHER_HDR_LEN + 20 + 8 + RS_MAX_DATAGRAM,
               "a reply frame must fit one mbuf segment");

struct dpdk_counters {
    uint64_t rx_frames, rx_datagrams, arp_replies, tx_datagrams, tx_failed;
    uint64_t drop_l2;       /* not IPv4/ARP, VLAN-tagged, not our MAC, runt, multi-segment */
    uint64_t drop_arp;      /* ARP that is not a request for our address */
    uint64_t drop_ip;       /* bad version/IHL/length/checksum, fragments, not UDP */
    uint64_t drop_not_ours; /* IPv4 to another address, UDP to another port */
    uint64_t drop_udp;      /* bad UDP length or checksum, payload above RS_MAX_DATAGRAM */
};

struct dpdk_io {
    struct rs_io io;
    uint16_t port_id;
    struct rte_mempool *pool;
    struct rte_ether_addr mac;
    uint32_t ip;       /* network order */
    uint16_t udp_port; /* network order */
    uint16_t ip_id;
    bool warned_udp_csum;
    uint64_t last_rx_ns; /* when a frame last arrived (idle back-off across calls) */
    struct dpdk_counters c;
};

/* EAL can be initialised once per process, and not again after rte_eal_cleanup. */
enum { EAL_NONE, EAL_UP, EAL_FAILED, EAL_DONE };
static int eal_state = EAL_NONE;
static bool port_open; /* one dpdk path at a time: it owns the port and the mempool name */
/* rte_eal_init may keep pointers into argv (and permutes it): the strings live for the process. */
static char *eal_argbuf;
static char *eal_argv[MAX_EAL_ARGS + 2];

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- checksums (RFC 1071), computed here so no offload is needed ---- */

static uint32_t csum_add(uint32_t sum, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len >= 2) {
        sum += (uint32_t)p[0] << 8 | p[1];
        p += 2;
        len -= 2;
    }
    if (len)
        sum += (uint32_t)p[0] << 8;
    return sum;
}

/* Folded one's-complement of sum, in host order (store with htons). */
static uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* Sum of the UDP pseudo header; addresses in network order, udp_len in host order. */
static uint32_t udp_pseudo_sum(uint32_t src, uint32_t dst, uint16_t udp_len)
{
    uint32_t sum = 0;
    sum = csum_add(sum, &src, 4);
    sum = csum_add(sum, &dst, 4);
    sum += IPPROTO_UDP;
    sum += udp_len;
    return sum;
}

/* ---- EAL and port set-up ---- */

static int eal_init_once(const char *args, char *err, size_t errlen)
{
    if (eal_state == EAL_UP)
        return 0;
    if (eal_state == EAL_FAILED) {
        set_err(err, errlen, "DPDK EAL initialisation failed earlier in this process");
        return -1;
    }
    if (eal_state == EAL_DONE) {
        set_err(err, errlen, "DPDK EAL was cleaned up and cannot be initialised again in one process");
        return -1;
    }
    eal_argbuf = strdup(args ? args : "");
    if (eal_argbuf == NULL) {
        set_err(err, errlen, "out of memory copying --dpdk-args");
        return -1;
    }
    int argc = 0;
    eal_argv[argc++] = "replay_server";
    char *save = NULL;
    for (char *tok = strtok_r(eal_argbuf, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
        if (argc > MAX_EAL_ARGS) {
            set_err(err, errlen, "--dpdk-args has more than %d arguments", MAX_EAL_ARGS);
            return -1;
        }
        eal_argv[argc++] = tok;
    }
    eal_argv[argc] = NULL;
    int used = rte_eal_init(argc, eal_argv);
    if (used < 0) {
        eal_state = EAL_FAILED;
        set_err(err, errlen, "rte_eal_init failed (%s): check --dpdk-args '%s' (EAL's log above says which)",
                rte_strerror(rte_errno), args ? args : "");
        return -1;
    }
    eal_state = EAL_UP;
    if (used + 1 < argc) {
        /* getopt moved the non-options to the end: the first one left over is eal_argv[used+1] */
        set_err(err, errlen, "--dpdk-args: '%s' is not an EAL option", eal_argv[used + 1]);
        return -1;
    }
    return 0;
}

static int port_setup(struct dpdk_io *d, char *err, size_t errlen)
{
    uint16_t pid = RTE_MAX_ETHPORTS, p;
    RTE_ETH_FOREACH_DEV(p) {
        pid = p;
        break;
    }
    if (pid == RTE_MAX_ETHPORTS) {
        set_err(err, errlen, "no DPDK port: give a --vdev, e.g. --vdev=net_af_packet0,iface=veth0 "
                             "(or bind a NIC to a DPDK driver)");
        return -1;
    }
    d->port_id = pid;

    struct rte_eth_dev_info info;
    int rc = rte_eth_dev_info_get(pid, &info);
    if (rc != 0) {
        set_err(err, errlen, "DPDK port %u: cannot read device info: %s", pid, rte_strerror(-rc));
        return -1;
    }
    int socket = rte_eth_dev_socket_id(pid);
    if (socket < 0)
        socket = (int)rte_socket_id();
    d->pool = rte_pktmbuf_pool_create("rs_mbufs", NUM_MBUFS, MBUF_CACHE, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                      socket);
    if (d->pool == NULL) {
        set_err(err, errlen, "cannot create the mbuf pool (%u mbufs): %s (give EAL more memory: -m)",
                NUM_MBUFS, rte_strerror(rte_errno));
        return -1;
    }

    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof(conf));
    conf.rxmode.mtu = PORT_MTU;
    if (info.max_mtu < PORT_MTU)
        conf.rxmode.mtu = info.max_mtu; /* e.g. net_null's default; frames above it are not ours */
    rc = rte_eth_dev_configure(pid, 1, 1, &conf);
    if (rc != 0) {
        set_err(err, errlen, "DPDK port %u (%s): configure 1 rx + 1 tx queue failed: %s", pid,
                info.driver_name, rte_strerror(-rc));
        return -1;
    }
    uint16_t nb_rx = RX_DESC, nb_tx = TX_DESC;
    rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &nb_rx, &nb_tx);
    if (rc != 0) {
        set_err(err, errlen, "DPDK port %u: cannot adjust descriptor counts: %s", pid, rte_strerror(-rc));
        return -1;
    }
    rc = rte_eth_rx_queue_setup(pid, 0, nb_rx, (unsigned)socket, NULL, d->pool);
    if (rc != 0) {
        set_err(err, errlen, "DPDK port %u: rx queue setup failed: %s", pid, rte_strerror(-rc));
        return -1;
    }
    rc = rte_eth_tx_queue_setup(pid, 0, nb_tx, (unsigned)socket, NULL);
    if (rc != 0) {
        set_err(err, errlen, "DPDK port %u: tx queue setup failed: %s", pid, rte_strerror(-rc));
        return -1;
    }
    rc = rte_eth_dev_start(pid);
    if (rc != 0) {
        set_err(err, errlen, "DPDK port %u (%s): start failed: %s", pid, info.driver_name, rte_strerror(-rc));
        return -1;
    }
    rc = rte_eth_macaddr_get(pid, &d->mac);
    if (rc != 0) {
        set_err(err, errlen, "DPDK port %u: cannot read its MAC address: %s", pid, rte_strerror(-rc));
        rte_eth_dev_stop(pid);
        return -1;
    }
    /* Promiscuous off: we only want frames to our MAC and broadcasts. Some vdevs cannot change
     * it (not an error: the MAC check below filters anyway). */
    (void)rte_eth_promiscuous_disable(pid);

    char mac[RTE_ETHER_ADDR_FMT_SIZE];
    rte_ether_format_addr(mac, sizeof(mac), &d->mac);
    fprintf(stderr, "dpdk: port %u (%s) MAC %s, %u rx / %u tx descriptors, %u mbufs\n", pid,
            info.driver_name, mac, nb_rx, nb_tx, NUM_MBUFS);
    return 0;
}

/* ---- receive ---- */

static inline bool mac_is(const struct rte_ether_addr *a, const struct rte_ether_addr *b)
{
    return rte_is_same_ether_addr(a, b);
}

/* Turn an ARP request for our address into its reply, in place. Returns true when m is to be
 * sent back (else the caller frees it). */
static bool handle_arp(struct dpdk_io *d, struct rte_mbuf *m, struct rte_ether_hdr *eth, uint32_t len)
{
    if (len < sizeof(*eth) + sizeof(struct rte_arp_hdr)) {
        d->c.drop_arp++;
        return false;
    }
    struct rte_arp_hdr *arp = (struct rte_arp_hdr *)(eth + 1);
    if (arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
        arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) || arp->arp_hlen != RTE_ETHER_ADDR_LEN ||
        arp->arp_plen != 4 || arp->arp_opcode != rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) ||
        arp->arp_data.arp_tip != d->ip) {
        d->c.drop_arp++;
        return false;
    }
    struct rte_arp_ipv4 *a = &arp->arp_data;
    arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
    rte_ether_addr_copy(&a->arp_sha, &a->arp_tha);
    a->arp_tip = a->arp_sip;
    rte_ether_addr_copy(&d->mac, &a->arp_sha);
    a->arp_sip = d->ip;
    rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
    rte_ether_addr_copy(&d->mac, &eth->src_addr);
    /* keep the request's length (it may carry padding to 60 bytes: fine for a reply) */
    m->ol_flags = 0;
    return true;
}

/* Parse one IPv4/UDP frame into out. Returns true when it is a datagram for us. */
static bool handle_ipv4(struct dpdk_io *d, struct rte_ether_hdr *eth, uint32_t len, struct rs_datagram *out)
{
    const uint8_t *l3 = (const uint8_t *)(eth + 1);
    uint32_t l3len = len - (uint32_t)sizeof(*eth);
    if (l3len < sizeof(struct rte_ipv4_hdr)) {
        d->c.drop_ip++;
        return false;
    }
    const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)l3;
    uint32_t ihl = (uint32_t)(ip->version_ihl & 0x0f) * 4;
    uint32_t total = rte_be_to_cpu_16(ip->total_length);
    /* total <= l3len: the frame may be longer (Ethernet pads to 60 bytes), never shorter */
    if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(*ip) || total < ihl || total > l3len) {
        d->c.drop_ip++;
        return false;
    }
    if (csum_fold(csum_add(0, ip, ihl)) != 0) {
        d->c.drop_ip++;
        return false;
    }
    if (rte_be_to_cpu_16(ip->fragment_offset) & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) {
        d->c.drop_ip++; /* a fragment: the protocol never needs them */
        return false;
    }
    if (ip->dst_addr != d->ip) {
        d->c.drop_not_ours++;
        return false;
    }
    if (ip->next_proto_id != IPPROTO_UDP) {
        d->c.drop_ip++;
        return false;
    }
    uint32_t src = rte_be_to_cpu_32(ip->src_addr);
    if (src == 0 || src == 0xffffffffu || (src >> 28) == 0xe) {
        d->c.drop_ip++; /* no reply could go to such a source */
        return false;
    }
    if (total - ihl < sizeof(struct rte_udp_hdr)) {
        d->c.drop_udp++;
        return false;
    }
    const struct rte_udp_hdr *udp = (const struct rte_udp_hdr *)(l3 + ihl);
    if (udp->dst_port != d->udp_port) {
        d->c.drop_not_ours++;
        return false;
    }
    uint32_t ulen = rte_be_to_cpu_16(udp->dgram_len);
    if (ulen < sizeof(*udp) || ulen > total - ihl || ulen - sizeof(*udp) > RS_MAX_DATAGRAM) {
        d->c.drop_udp++;
        return false;
    }
    if (udp->dgram_cksum != 0) { /* 0: the sender computed none (allowed over IPv4) */
        uint32_t sum = udp_pseudo_sum(ip->src_addr, ip->dst_addr, (uint16_t)ulen);
        if (csum_fold(csum_add(sum, udp, ulen)) != 0) {
            d->c.drop_udp++;
            if (!d->warned_udp_csum) {
                d->warned_udp_csum = true;
                fprintf(stderr, "dpdk: dropping UDP datagrams with a bad checksum (first from %s): is tx "
                                "checksum offload on at the sender? (ethtool -K <dev> tx off)\n",
                        inet_ntoa((struct in_addr){.s_addr = ip->src_addr}));
            }
            return false;
        }
    }
    out->peer.ip = ip->src_addr;
    out->peer.port = udp->src_port;
    memcpy(out->peer.mac, eth->src_addr.addr_bytes, 6);
    out->len = (uint16_t)(ulen - sizeof(*udp));
    memcpy(out->data, udp + 1, out->len);
    return true;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void send_arp_replies(struct dpdk_io *d, struct rte_mbuf **arp, uint16_t n)
{
    uint16_t sent = 0;
    for (int tries = 0; sent < n && tries < TX_RETRIES; tries++)
        sent += rte_eth_tx_burst(d->port_id, 0, arp + sent, n - sent);
    d->c.arp_replies += sent;
    if (sent < n)
        rte_pktmbuf_free_bulk(arp + sent, n - sent);
}

/* One rx_burst of at most room frames; returns the datagrams stored in out. */
static int poll_once(struct dpdk_io *d, struct rs_datagram *out, int room, uint16_t *frames)
{
    struct rte_mbuf *pkts[BURST], *arp[BURST];
    uint16_t want = room < BURST ? (uint16_t)room : BURST;
    uint16_t n = rte_eth_rx_burst(d->port_id, 0, pkts, want);
    uint16_t narp = 0;
    int got = 0;
    *frames = n;
    d->c.rx_frames += n;
    for (uint16_t i = 0; i < n; i++) {
        struct rte_mbuf *m = pkts[i];
        uint32_t len = rte_pktmbuf_data_len(m);
        if (m->nb_segs != 1 || len < sizeof(struct rte_ether_hdr)) {
            d->c.drop_l2++;
            rte_pktmbuf_free(m);
            continue;
        }
        struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
        uint16_t type = rte_be_to_cpu_16(eth->ether_type);
        if (type == RTE_ETHER_TYPE_ARP &&
            (rte_is_broadcast_ether_addr(&eth->dst_addr) || mac_is(&eth->dst_addr, &d->mac))) {
            if (handle_arp(d, m, eth, len)) {
                arp[narp++] = m;
                continue;
            }
        } else if (type == RTE_ETHER_TYPE_IPV4 && mac_is(&eth->dst_addr, &d->mac)) {
            if (handle_ipv4(d, eth, len, &out[got]))
                got++;
        } else {
            d->c.drop_l2++;
        }
        rte_pktmbuf_free(m);
    }
    if (narp)
        send_arp_replies(d, arp, narp);
    d->c.rx_datagrams += (uint64_t)got;
    return got;
}

static int dpdk_recv_burst(struct rs_io *io, struct rs_datagram *out, int max, int timeout_ms)
{
    struct dpdk_io *d = io->priv;
    if (max <= 0)
        return 0;
    uint64_t start = now_ns();
    uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : start + (uint64_t)timeout_ms * 1000000ULL;
    int got = 0;
    for (;;) {
        uint16_t frames;
        got += poll_once(d, out + got, max - got, &frames);
        uint64_t now = now_ns();
        if (frames > 0)
            d->last_rx_ns = now;
        /* a full burst may mean more is queued: drain it before returning */
        if (got == max || (got > 0 && frames < BURST))
            return got;
        if (now >= deadline) /* checked on busy polls too: a flood of junk must not hold us */
            return got;
        if (frames > 0) /* only ARP or dropped frames so far: keep polling */
            continue;
        /* Idle: spin briefly with rte_pause() (a frame that arrives soon is taken at once),
         * then nanosleep between polls, longer after a long quiet spell (see SPIN_NS). */
        uint64_t idle = now - d->last_rx_ns;
        if (idle < SPIN_NS) {
            for (int i = 0; i < 64; i++)
                rte_pause();
        } else {
            struct timespec ts = {0, idle < NAP_AFTER_NS ? SHORT_SLEEP_NS : LONG_SLEEP_NS};
            nanosleep(&ts, NULL);
        }
    }
}

/* ---- send ---- */

static void build_frame(struct dpdk_io *d, struct rte_mbuf *m, const struct rs_datagram *dg)
{
    uint16_t udp_len = (uint16_t)(sizeof(struct rte_udp_hdr) + dg->len);
    uint16_t ip_len = (uint16_t)(sizeof(struct rte_ipv4_hdr) + udp_len);
    uint16_t frame_len = (uint16_t)(sizeof(struct rte_ether_hdr) + ip_len);
    uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, frame_len); /* fits: checked by the caller */

    struct rte_ether_hdr *eth = (struct rte_ether_hdr *)p;
    memcpy(eth->dst_addr.addr_bytes, dg->peer.mac, 6);
    rte_ether_addr_copy(&d->mac, &eth->src_addr);
    eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);

    struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
    ip->version_ihl = RTE_IPV4_VHL_DEF; /* version 4, 20-byte header */
    ip->type_of_service = 0;
    ip->total_length = rte_cpu_to_be_16(ip_len);
    ip->packet_id = rte_cpu_to_be_16(d->ip_id++);
    ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
    ip->time_to_live = 64;
    ip->next_proto_id = IPPROTO_UDP;
    ip->hdr_checksum = 0;
    ip->src_addr = d->ip;
    ip->dst_addr = dg->peer.ip;
    ip->hdr_checksum = rte_cpu_to_be_16(csum_fold(csum_add(0, ip, sizeof(*ip))));

    struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip + 1);
    udp->src_port = d->udp_port;
    udp->dst_port = dg->peer.port;
    udp->dgram_len = rte_cpu_to_be_16(udp_len);
    udp->dgram_cksum = 0;
    memcpy(udp + 1, dg->data, dg->len);
    uint16_t ck = csum_fold(csum_add(udp_pseudo_sum(ip->src_addr, ip->dst_addr, udp_len), udp, udp_len));
    udp->dgram_cksum = rte_cpu_to_be_16(ck == 0 ? 0xffff : ck); /* 0 would mean "no checksum" */
    m->ol_flags = 0;
}

static int dpdk_send_burst(struct rs_io *io, const struct rs_datagram *dgs, int n)
{
    struct dpdk_io *d = io->priv;
    int done = 0;
    while (done < n) {
        struct rte_mbuf *pkts[BURST];
        uint16_t k = (uint16_t)(n - done < BURST ? n - done : BURST);
        for (uint16_t i = 0; i < k; i++) {
            if (dgs[done + i].len > RS_MAX_DATAGRAM) { /* a caller bug: send what came before */
                fprintf(stderr, "dpdk: refusing to send a %u-byte datagram (max %d)\n", dgs[done + i].len,
                        RS_MAX_DATAGRAM);
                k = i;
                break;
            }
        }
        if (k == 0)
            break;
        if (rte_pktmbuf_alloc_bulk(d->pool, pkts, k) != 0) {
            d->c.tx_failed += (uint64_t)(n - done);
            return done; /* pool exhausted: the caller may retry the rest */
        }
        for (uint16_t i = 0; i < k; i++)
            build_frame(d, pkts[i], &dgs[done + i]);
        uint16_t sent = 0;
        for (int tries = 0; sent < k && tries < TX_RETRIES; tries++) {
            uint16_t s = rte_eth_tx_burst(d->port_id, 0, pkts + sent, k - sent);
            sent += s;
            if (s == 0)
                rte_pause();
        }
        d->c.tx_datagrams += sent;
        done += sent;
        if (sent < k) {
            rte_pktmbuf_free_bulk(pkts + sent, k - sent);
            d->c.tx_failed += (uint64_t)(n - done);
            return done;
        }
        if (k < BURST && done < n)
            break; /* stopped at an oversized datagram */
    }
    return done;
}

/* ---- close ---- */

static void dpdk_close(struct rs_io *io)
{
    if (io == NULL)
        return;
    struct dpdk_io *d = io->priv;
    const struct dpdk_counters *c = &d->c;
    fprintf(stderr,
            "dpdk: rx %" PRIu64 " frames, %" PRIu64 " datagrams, %" PRIu64 " ARP replies; tx %" PRIu64
            " datagrams, %" PRIu64 " not sent; dropped: l2 %" PRIu64 ", arp %" PRIu64 ", ip %" PRIu64
            ", not ours %" PRIu64 ", udp %" PRIu64 "\n",
            c->rx_frames, c->rx_datagrams, c->arp_replies, c->tx_datagrams, c->tx_failed, c->drop_l2,
            c->drop_arp, c->drop_ip, c->drop_not_ours, c->drop_udp);
    rte_eth_dev_stop(d->port_id);
    rte_eth_dev_close(d->port_id);
    rte_mempool_free(d->pool);
    free(d);
    port_open = false;
    rte_eal_cleanup();
    eal_state = EAL_DONE;
}

struct rs_io *rs_io_dpdk_open(const struct rs_io_config *cfg, char *err, size_t errlen)
{
    if (cfg == NULL) {
        set_err(err, errlen, "dpdk: no configuration");
        return NULL;
    }
    if (port_open) {
        set_err(err, errlen, "dpdk: the DPDK path is already open in this process");
        return NULL;
    }
    struct in_addr addr;
    if (cfg->dpdk_ip == NULL || inet_pton(AF_INET, cfg->dpdk_ip, &addr) != 1) {
        set_err(err, errlen, "dpdk: --dpdk-ip '%s' is not an IPv4 address (the server's address on the "
                             "DPDK port; it answers ARP for it)",
                cfg->dpdk_ip ? cfg->dpdk_ip : "");
        return NULL;
    }
    uint32_t host_ip = ntohl(addr.s_addr);
    if (host_ip == 0 || host_ip == 0xffffffffu || (host_ip >> 28) == 0xe || (host_ip >> 24) == 127) {
        set_err(err, errlen, "dpdk: --dpdk-ip %s cannot be a host's address", cfg->dpdk_ip);
        return NULL;
    }
    if (cfg->port == 0) {
        set_err(err, errlen, "dpdk: UDP port 0");
        return NULL;
    }
    if (eal_init_once(cfg->dpdk_args, err, errlen) != 0)
        return NULL;

    struct dpdk_io *d = calloc(1, sizeof(*d));
    if (d == NULL) {
        set_err(err, errlen, "dpdk: out of memory");
        return NULL;
    }
    d->ip = addr.s_addr;
    d->udp_port = htons(cfg->port);
    d->ip_id = (uint16_t)rte_rand();
    if (port_setup(d, err, errlen) != 0) {
        if (d->port_id < RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port(d->port_id))
            rte_eth_dev_close(d->port_id);
        rte_mempool_free(d->pool);
        free(d);
        return NULL;
    }
    d->io.name = "dpdk";
    d->io.recv_burst = dpdk_recv_burst;
    d->io.send_burst = dpdk_send_burst;
    d->io.close = dpdk_close;
    d->io.priv = d;
    port_open = true;
    fprintf(stderr, "dpdk: serving %s UDP port %u\n", cfg->dpdk_ip, cfg->port);
    return &d->io;
}
