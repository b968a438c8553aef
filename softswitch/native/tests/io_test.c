/* io_test.c — tests and a throughput bench of the native data path (io.c, netem.c) over veth.
 *
 *   io_test [test]                 functional tests + flood test (default)
 *   io_test bench SECONDS [trafgen|mmsg] [SIZE]   forwarded packets/s, port 1 -> port 2
 *
 * The process moves itself into a network namespace of its own (unshare(CLONE_NEWNET)): the
 * kernel deletes it, with its veth pairs, when the process exits, whatever the exit.  Inside:
 * a0 <-> a1, b0 <-> b1, c0 <-> c1; the switch binds 1@a1 and 2@b1 and runs io_prog.c's
 * program (1 <-> 2); the test sends and receives on a0 and b0 with raw sockets.
 * Needs root (CAP_SYS_ADMIN for unshare, CAP_NET_RAW).  Built by io_run.sh against either the
 * runtime core (switch.c ...) or io_stub_core.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <math.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "io_prog.h"
#include "ss_runtime.h"

#define CPU_PORT 64u
#define ETH_TEST 0x88b5
#define MAGIC 0x5353494fu /* "SSIO" */

static int fails;
#define CHECK(c, ...)                                                                \
    do {                                                                             \
        if (!(c)) {                                                                  \
            fails++;                                                                 \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c);             \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
        }                                                                            \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int r = system(cmd);
    if (r != 0)
        fprintf(stderr, "command failed (%d): %s\n", r, cmd);
    return r;
}

static void setup_netns(void)
{
    if (unshare(CLONE_NEWNET) != 0) {
        perror("unshare(CLONE_NEWNET) (needs root)");
        exit(2);
    }
    int r = sh("ip link set lo up");
    /* no IPv6 autoconfiguration chatter on the test links */
    r |= sh("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1");
    for (const char *x = "abc"; *x; x++) {
        r |= sh("ip link add %c0 type veth peer name %c1", *x, *x);
        r |= sh("ip link set %c0 up && ip link set %c1 up", *x, *x);
    }
    if (r != 0)
        exit(2);
}

/* ------------------------------------------------------------------ raw sockets on a0, b0 */

static int raw_open(const char *ifname)
{
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        perror("socket");
        exit(2);
    }
    int one = 1, big = 16 << 20;
    setsockopt(fd, SOL_PACKET, 23 /* PACKET_IGNORE_OUTGOING */, &one, sizeof one);
    setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
                              .sll_ifindex = (int)if_nametoindex(ifname)};
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) != 0) {
        perror("bind");
        exit(2);
    }
    return fd;
}

/* Next test frame (EtherType ETH_TEST / ETH_TO_CPU, or VLAN-tagged), tag put back; 0 on timeout. */
static int raw_recv_us(int fd, uint8_t *buf, size_t cap, long timeout_us)
{
    double end = now_s() + (double)timeout_us * 1e-6;
    for (;;) {
        double left = end - now_s();
        if (left < 0)
            left = 0;
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        struct pollfd p = {fd, POLLIN, 0};
        if (ppoll(&p, 1, &ts, NULL) <= 0)
            return 0;
        union {
            struct cmsghdr h;
            uint8_t b[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
        } cm;
        struct iovec iov = {buf + 4, cap - 4};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = &cm,
                            .msg_controllen = sizeof cm};
        ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_TRUNC);
        if (n < 14)
            continue;
        if ((size_t)n > cap - 4)
            return (int)n;  /* caller sees it is too long */
        uint8_t *f = buf + 4;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA)
                continue;
            struct tpacket_auxdata aux;
            memcpy(&aux, CMSG_DATA(c), sizeof aux);
            if (aux.tp_status & TP_STATUS_VLAN_VALID) {
                uint16_t tpid = (aux.tp_status & TP_STATUS_VLAN_TPID_VALID) ? aux.tp_vlan_tpid
                                                                            : ETH_P_8021Q;
                memmove(buf, f, 12);
                buf[12] = (uint8_t)(tpid >> 8);
                buf[13] = (uint8_t)tpid;
                buf[14] = (uint8_t)(aux.tp_vlan_tci >> 8);
                buf[15] = (uint8_t)aux.tp_vlan_tci;
                f = buf;
                n += 4;
            }
        }
        if (f != buf)
            memmove(buf, f, (size_t)n);
        uint16_t et = (uint16_t)(buf[12] << 8 | buf[13]);
        if (et == ETH_TEST || et == IO_PROG_ETH_TO_CPU || et == ETH_P_8021Q)
            return (int)n;
    }
}

static int raw_recv(int fd, uint8_t *buf, size_t cap, int timeout_ms)
{
    return raw_recv_us(fd, buf, cap, (long)timeout_ms * 1000);
}

static void raw_drain(int fd)
{
    uint8_t b[70000];
    while (recv(fd, b, sizeof b, MSG_DONTWAIT) >= 0) {
    }
}

static size_t make_frame(uint8_t *f, uint32_t seq, size_t len, uint16_t etype)
{
    static const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x02}, src[6] = {0x02, 0, 0, 0, 0, 0x01};
    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    f[12] = (uint8_t)(etype >> 8);
    f[13] = (uint8_t)etype;
    uint32_t m = htonl(MAGIC), s = htonl(seq);
    memcpy(f + 14, &m, 4);
    memcpy(f + 18, &s, 4);
    for (size_t i = 22; i < len; i++)
        f[i] = (uint8_t)(i * 7 + seq);
    return len;
}

static uint32_t frame_seq(const uint8_t *f)
{
    uint32_t s;
    memcpy(&s, f + 18, 4);
    return ntohl(s);
}

static int raw_send(int fd, const uint8_t *f, size_t len)
{
    return send(fd, f, len, 0) == (ssize_t)len ? 0 : -1;
}

static struct ss_switch *sw_new(void)
{
    struct ss_switch *sw = ss_switch_new(CPU_PORT, 1);
    if (!sw || ss_switch_load(sw, &ss_program_desc) != SS_OK) {
        fprintf(stderr, "cannot create the switch: %s\n", sw ? ss_last_error(sw) : "NULL");
        exit(2);
    }
    __atomic_store_n(&io_prog_cpu_port, CPU_PORT, __ATOMIC_RELAXED);
    __atomic_store_n(&io_prog_mode, IO_PROG_CROSS, __ATOMIC_RELAXED);
    return sw;
}

static struct ss_switch *sw_bound(void)
{
    struct ss_switch *sw = sw_new();
    int r1 = ss_port_add(sw, 1, "a1"), r2 = ss_port_add(sw, 2, "b1");
    if (r1 || r2) {
        fprintf(stderr, "port add: %s\n", ss_last_error(sw));
        exit(2);
    }
    return sw;
}

static ss_port_stats pstats(struct ss_switch *sw, uint32_t port)
{
    ss_port_stats s;
    memset(&s, 0, sizeof s);
    int r = ss_get_port_stats(sw, port, &s);
    CHECK(r == SS_OK, "stats of port %u: %s", port, ss_last_error(sw));
    return s;
}

/* ------------------------------------------------------------------ tests */

static void t_errors(void)
{
    struct ss_switch *sw = sw_new();
    int r = ss_port_add(sw, 1, "");
    CHECK(r == SS_EINVAL && ss_last_error(sw)[0], "empty name: %d", r);
    r = ss_port_add(sw, 1, "a/b");
    CHECK(r == SS_EINVAL, "slash: %d", r);
    r = ss_port_add(sw, 1, "abcdefghijklmnopq");
    CHECK(r == SS_EINVAL, "too long: %d", r);
    r = ss_port_add(sw, 1, NULL);
    CHECK(r == SS_EINVAL, "NULL name: %d", r);
    r = ss_port_add(sw, 1, "nosuch0");
    CHECK(r == SS_ENOENT && strstr(ss_last_error(sw), "nosuch0"), "missing: %d %s", r,
          ss_last_error(sw));
    r = ss_port_add(sw, 511, "a1");
    CHECK(r == SS_EINVAL, "port 511: %d", r);
    r = ss_port_add(sw, 100000, "a1");
    CHECK(r == SS_EINVAL, "port 100000: %d", r);
    r = ss_port_add(sw, CPU_PORT, "a1");
    CHECK(r == SS_EINVAL, "cpu port: %d", r);
    CHECK(ss_port_add(sw, 1, "a1") == SS_OK, "a1: %s", ss_last_error(sw));
    r = ss_port_add(sw, 1, "b1");
    CHECK(r == SS_EEXIST, "port twice: %d", r);
    r = ss_port_add(sw, 5, "a1");
    CHECK(r == SS_EEXIST && strstr(ss_last_error(sw), "a1"), "iface twice: %d %s", r,
          ss_last_error(sw));
    ss_port_stats st;
    CHECK(ss_get_port_stats(sw, 2, &st) == SS_ENOENT, "stats of an unbound port");
    CHECK(ss_get_port_stats(sw, 9999, &st) == SS_ENOENT, "stats of port 9999");
    CHECK(ss_port_netem(sw, 2, 0, 1000, 0, 0, 0, 0, 0, 0) == SS_ENOENT, "netem unbound");
    CHECK(ss_port_netem(sw, 1, 2, 1000, 0, 0, 0, 0, 0, 0) == SS_EINVAL, "netem dir 2");
    CHECK(ss_set_loss_rate(sw, 1.0, 0) == SS_EINVAL, "loss 1.0");
    CHECK(ss_set_loss_rate(sw, -0.1, 0) == SS_EINVAL, "loss -0.1");
    CHECK(ss_set_loss_rate(sw, NAN, 0) == SS_EINVAL, "loss NaN");
    uint8_t f[64] = {0};
    CHECK(ss_packet_out(sw, f, 0) == SS_EINVAL, "packet-out of 0 bytes");
    CHECK(ss_packet_out(sw, NULL, 10) == SS_EINVAL, "packet-out NULL");
    CHECK(ss_packet_out(sw, f, SS_MAX_FRAME + 1) == SS_EINVAL, "packet-out too long");
    CHECK(ss_stop(sw) == SS_OK, "stop before start");
    CHECK(ss_start(sw) == SS_OK, "start: %s", ss_last_error(sw));
    r = ss_start(sw);
    CHECK(r == SS_EEXIST && ss_last_error(sw)[0], "start twice: %d", r);
    double t = now_s();
    CHECK(ss_stop(sw) == SS_OK, "stop");
    t = now_s() - t;
    CHECK(t < 0.05, "stop took %.3f s", t);
    CHECK(ss_stop(sw) == SS_OK, "stop twice");
    CHECK(ss_start(sw) == SS_OK, "restart: %s", ss_last_error(sw));
    ss_switch_free(sw);  /* frees a running switch */
    /* a switch that never bound anything */
    sw = sw_new();
    ss_switch_free(sw);
}

static void t_forward(void)
{
    struct ss_switch *sw = sw_bound();
    int a0 = raw_open("a0"), b0 = raw_open("b0");
    CHECK(ss_start(sw) == SS_OK, "start");
    uint8_t f[2000], g[2100];
    const int n = 300;
    int got = 0, bad = 0;
    for (int i = 0; i < n; i++) {
        size_t len = 60 + (size_t)(i * 37) % (1514 - 60 + 1);
        make_frame(f, (uint32_t)i, len, ETH_TEST);
        CHECK(raw_send(a0, f, len) == 0, "send %d", i);
        int m = raw_recv(b0, g, sizeof g, 1000);
        if (m == (int)len && memcmp(f, g, len) == 0)
            got++;
        else
            bad++;
    }
    CHECK(got == n && bad == 0, "a0 -> b0: %d of %d intact, %d wrong", got, n, bad);
    /* a burst, the other way: all in order */
    for (int i = 0; i < 200; i++) {
        make_frame(f, (uint32_t)i, 100, ETH_TEST);
        raw_send(b0, f, 100);
    }
    int inorder = 0;
    for (int i = 0; i < 200; i++) {
        int m = raw_recv(a0, g, sizeof g, 1000);
        if (m == 100 && frame_seq(g) == (uint32_t)i)
            inorder++;
    }
    CHECK(inorder == 200, "b0 -> a0 burst: %d of 200 in order", inorder);
    CHECK(raw_recv(b0, g, sizeof g, 100) == 0, "nothing echoed back to b0 (own transmissions)");
    sleep_ms(50);
    ss_port_stats s1 = pstats(sw, 1), s2 = pstats(sw, 2);
    CHECK(s1.rx_packets == (uint64_t)n && s2.tx_packets == (uint64_t)n, "counts rx1 %lu tx2 %lu",
          (unsigned long)s1.rx_packets, (unsigned long)s2.tx_packets);
    CHECK(s2.rx_packets == 200 && s1.tx_packets == 200, "counts rx2 %lu tx1 %lu",
          (unsigned long)s2.rx_packets, (unsigned long)s1.tx_packets);
    CHECK(s1.rx_bytes == s2.tx_bytes && s1.rx_bytes > 0, "bytes");
    CHECK(s1.rx_dropped == 0 && s2.tx_dropped == 0, "no drops");
    /* VLAN tag: stripped by the kernel on receive, put back by the switch */
    uint8_t v[200];
    make_frame(v, 7, 120, ETH_TEST);
    memmove(v + 16, v + 12, 120 - 12);
    v[12] = 0x81, v[13] = 0x00, v[14] = 0x20, v[15] = 0x05;
    raw_send(a0, v, 124);
    int m = raw_recv(b0, g, sizeof g, 1000);
    CHECK(m == 124 && memcmp(g, v, 124) == 0, "VLAN frame kept its tag (%d bytes)", m);
    /* echo: out of the port it came in on */
    __atomic_store_n(&io_prog_mode, IO_PROG_ECHO, __ATOMIC_RELAXED);
    make_frame(f, 99, 200, ETH_TEST);
    raw_send(a0, f, 200);
    m = raw_recv(a0, g, sizeof g, 1000);
    CHECK(m == 200 && memcmp(f, g, 200) == 0, "echo (%d)", m);
    __atomic_store_n(&io_prog_mode, IO_PROG_CROSS, __ATOMIC_RELAXED);
    /* packet-out goes to port 2; packet-in comes from a frame of EtherType ETH_TO_CPU */
    make_frame(f, 1234, 80, ETH_TEST);
    CHECK(ss_packet_out(sw, f, 80) == SS_OK, "packet-out: %s", ss_last_error(sw));
    m = raw_recv(b0, g, sizeof g, 1000);
    CHECK(m == 80 && memcmp(f, g, 80) == 0, "packet-out arrived (%d)", m);
    make_frame(f, 4321, 90, IO_PROG_ETH_TO_CPU);
    raw_send(a0, f, 90);
    m = ss_packet_in_poll(sw, g, sizeof g, 1000);
    CHECK(m == 90 && memcmp(f, g, 90) == 0, "packet-in (%d)", m);
    /* a port added while running */
    CHECK(ss_port_add(sw, 3, "c1") == SS_OK, "c1: %s", ss_last_error(sw));
    int c0 = raw_open("c0");
    ss_switch_free(sw);  /* no ss_stop: free stops */
    sw = sw_new();
    CHECK(ss_port_add(sw, 1, "a1") == SS_OK, "a1");
    CHECK(ss_start(sw) == SS_OK, "start");
    CHECK(ss_port_add(sw, 2, "b1") == SS_OK, "b1 while running");
    raw_drain(b0);
    make_frame(f, 5, 64, ETH_TEST);
    raw_send(a0, f, 64);
    m = raw_recv(b0, g, sizeof g, 1000);
    CHECK(m == 64, "forwarded to a port added while running (%d)", m);
    /* an interface deleted under the switch: no crash, no spinning, the rest goes on */
    CHECK(ss_port_add(sw, 3, "c1") == SS_OK, "c1");
    sleep_ms(20);
    close(c0);
    sh("ip link del c0");
    sleep_ms(100);
    struct timespec c_0, c_1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c_0);
    sleep_ms(500);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c_1);
    double cpu = (double)(c_1.tv_sec - c_0.tv_sec) + (double)(c_1.tv_nsec - c_0.tv_nsec) * 1e-9;
    CHECK(cpu < 0.05, "idle switch used %.3f s CPU in 0.5 s (busy polling?)", cpu);
    raw_send(a0, f, 64);
    m = raw_recv(b0, g, sizeof g, 1000);
    CHECK(m == 64, "still forwarding after an interface went away (%d)", m);
    ss_port_stats s3;
    CHECK(ss_get_port_stats(sw, 3, &s3) == SS_OK, "stats of the dead port");
    ss_switch_free(sw);
    sh("ip link add c0 type veth peer name c1 && ip link set c0 up && ip link set c1 up");
    close(a0);
    close(b0);
}

/* Frames too long for a ring slot (copy path), too long for the switch, too long to send. */
static void t_sizes(void)
{
    struct ss_switch *sw = sw_bound();  /* slots sized for MTU 1500 */
    int a0 = raw_open("a0"), b0 = raw_open("b0");
    CHECK(ss_start(sw) == SS_OK, "start");
    sh("ip link set a0 mtu 9000 && ip link set a1 mtu 9000 && ip link set b0 mtu 9000 && "
       "ip link set b1 mtu 9000");
    static uint8_t f[70000], g[70000];
    for (int i = 0; i < 20; i++) {
        size_t len = i % 2 ? 9014 : 3000 + (size_t)i * 100;
        make_frame(f, (uint32_t)i, len, ETH_TEST);
        raw_send(a0, f, len);
        int m = raw_recv(b0, g, sizeof g, 1000);
        CHECK(m == (int)len && memcmp(f, g, len) == 0, "jumbo %zu through the copy path (%d)",
              len, m);
    }
    /* interleaved small and big frames keep their order */
    for (int i = 0; i < 40; i++) {
        size_t len = i % 3 ? 100 : 8000;
        make_frame(f, (uint32_t)i, len, ETH_TEST);
        raw_send(a0, f, len);
    }
    int inorder = 0;
    for (int i = 0; i < 40; i++) {
        int m = raw_recv(b0, g, sizeof g, 1000);
        inorder += m > 0 && frame_seq(g) == (uint32_t)i;
    }
    CHECK(inorder == 40, "mixed sizes in order: %d of 40", inorder);
    sh("ip link set a0 mtu 65535 && ip link set a1 mtu 65535");
    ss_port_stats before1 = pstats(sw, 1), before2 = pstats(sw, 2);
    make_frame(f, 1, 65535 + 14, ETH_TEST);  /* longer than SS_MAX_FRAME */
    CHECK(raw_send(a0, f, 65535 + 14) == 0, "send 65549 bytes: %s", strerror(errno));
    make_frame(f, 2, 30000, ETH_TEST);  /* fits the switch, not b1's MTU */
    CHECK(raw_send(a0, f, 30000) == 0, "send 30000 bytes");
    make_frame(f, 3, 65535, ETH_TEST);  /* the largest the switch takes; b1 refuses it */
    CHECK(raw_send(a0, f, 65535) == 0, "send 65535 bytes");
    sleep_ms(100);
    ss_port_stats after1 = pstats(sw, 1), after2 = pstats(sw, 2);
    CHECK(after1.rx_dropped == before1.rx_dropped + 1, "too long counted: %lu -> %lu",
          (unsigned long)before1.rx_dropped, (unsigned long)after1.rx_dropped);
    CHECK(after1.rx_packets == before1.rx_packets + 2, "the other two received");
    CHECK(after2.tx_dropped == before2.tx_dropped + 2, "send failures counted: %lu -> %lu",
          (unsigned long)before2.tx_dropped, (unsigned long)after2.tx_dropped);
    CHECK(raw_recv(b0, g, sizeof g, 100) == 0, "nothing oversize arrived");
    sh("ip link set a0 mtu 1500 && ip link set a1 mtu 1500 && ip link set b0 mtu 1500 && "
       "ip link set b1 mtu 1500");
    make_frame(f, 4, 60, ETH_TEST);
    raw_send(a0, f, 60);
    CHECK(raw_recv(b0, g, sizeof g, 1000) == 60, "small frame after all that");
    ss_switch_free(sw);
    close(a0);
    close(b0);
}

/* Send n frames a0 -> b0 paced `gap_us` apart (0: a burst), then collect until 300 ms of
 * silence; returns frames received; *lat the mean one-way latency, *span first to last. */
static double sent_at[20000];
static void note(const uint8_t *g, int n, int *got, double *sum, double *first, double *last)
{
    double t = now_s();
    uint32_t s = frame_seq(g);
    if (s < (uint32_t)n)
        *sum += t - sent_at[s];
    if (!*got)
        *first = t;
    *last = t;
    (*got)++;
}

static int run_flow(int a0, int b0, int n, size_t len, int gap_us, double *lat, double *span)
{
    uint8_t f[2000], g[2100];
    raw_drain(b0);
    int got = 0, m;
    double sum = 0, first = 0, last = 0;
    for (int i = 0; i < n; i++) {
        make_frame(f, (uint32_t)i, len, ETH_TEST);
        sent_at[i] = now_s();
        raw_send(a0, f, len);
        if (gap_us) {
            double until = sent_at[i] + gap_us * 1e-6;
            while (now_s() < until)
                if ((m = raw_recv_us(b0, g, sizeof g, (long)((until - now_s()) * 1e6))) > 0)
                    note(g, n, &got, &sum, &first, &last);
        }
    }
    while ((m = raw_recv(b0, g, sizeof g, 300)) > 0)
        note(g, n, &got, &sum, &first, &last);
    if (lat)
        *lat = got ? sum / got : 0;
    if (span)
        *span = last - first;
    return got;
}

static void t_netem(void)
{
    struct ss_switch *sw = sw_bound();
    int a0 = raw_open("a0"), b0 = raw_open("b0");
    CHECK(ss_start(sw) == SS_OK, "start");
    double lat, span;
    int got = run_flow(a0, b0, 50, 100, 2000, &lat, NULL);
    CHECK(got == 50 && lat < 0.005, "plain: %d, %.3f ms", got, lat * 1e3);
    printf("  latency a0 -> b0 without netem: %.1f us\n", lat * 1e6);
    /* delay out of port 2, then also into port 1 */
    CHECK(ss_port_netem(sw, 2, 1, 20000000, 0, 0, 0, 0, 100000000, 1) == SS_OK, "netem");
    got = run_flow(a0, b0, 50, 100, 2000, &lat, NULL);
    CHECK(got == 50 && lat > 0.020 && lat < 0.024, "delay 20ms: %d, %.3f ms", got, lat * 1e3);
    printf("  latency with delay=20ms out of port 2: %.3f ms\n", lat * 1e3);
    CHECK(ss_port_netem(sw, 1, 0, 10000000, 0, 0, 0, 0, 100000000, 1) == SS_OK, "netem");
    got = run_flow(a0, b0, 50, 100, 2000, &lat, NULL);
    CHECK(got == 50 && lat > 0.030 && lat < 0.034, "delay 10+20ms: %d, %.3f ms", got, lat * 1e3);
    /* jitter keeps the order */
    CHECK(ss_port_netem(sw, 1, 0, 10000000, 5000000, 0, 0, 0, 100000000, 1) == SS_OK, "netem");
    uint8_t f[2000], g[2100];
    raw_drain(b0);
    for (int i = 0; i < 200; i++) {
        make_frame(f, (uint32_t)i, 64, ETH_TEST);
        raw_send(a0, f, 64);
        sleep_ms(i % 10 == 0);
    }
    int inorder = 0;
    for (int i = 0; i < 200; i++)
        inorder += raw_recv(b0, g, sizeof g, 1000) > 0 && frame_seq(g) == (uint32_t)i;
    CHECK(inorder == 200, "jitter keeps order: %d of 200", inorder);
    /* back to a plain link */
    CHECK(ss_port_netem(sw, 1, 0, 0, 0, 0, 0, 0, 0, 0) == SS_OK, "off");
    CHECK(ss_port_netem(sw, 2, 1, 0, 0, 0, 0, 0, 0, 0) == SS_OK, "off");
    got = run_flow(a0, b0, 20, 100, 1000, &lat, NULL);
    CHECK(got == 20 && lat < 0.005, "netem removed: %d, %.3f ms", got, lat * 1e3);
    /* rate: 200 x 1500 bytes at 12 Mbit/s = 1 ms each */
    CHECK(ss_port_netem(sw, 2, 1, 0, 0, 0, 12000000, 1000, 1000000000, 1) == SS_OK, "rate");
    got = run_flow(a0, b0, 200, 1500, 0, NULL, &span);
    CHECK(got == 200 && span > 0.190 && span < 0.215, "rate 12mbit: %d in %.1f ms (199 ms)", got,
          span * 1e3);
    printf("  rate=12mbit: 200 x 1500 B in %.1f ms (ideal 199.0)\n", span * 1e3);
    /* backlog 20 ms: about 21 of the burst pass, the rest is tail-dropped */
    ss_port_stats s0 = pstats(sw, 2);
    CHECK(ss_port_netem(sw, 2, 1, 0, 0, 0, 12000000, 1000, 20000000, 1) == SS_OK, "backlog");
    got = run_flow(a0, b0, 200, 1500, 0, NULL, NULL);
    ss_port_stats s1 = pstats(sw, 2);
    uint64_t qd = s1.netem_qdrop - s0.netem_qdrop;
    CHECK(got >= 20 && got <= 80 && qd == 200 - (uint64_t)got, "backlog 20ms: %d passed, %lu qdrop",
          got, (unsigned long)qd);
    /* limit: delay 50 ms, 30 frames queued at most */
    CHECK(ss_port_netem(sw, 2, 1, 50000000, 0, 0, 0, 30, 0, 1) == SS_OK, "limit");
    s0 = pstats(sw, 2);
    got = run_flow(a0, b0, 100, 100, 0, NULL, NULL);
    s1 = pstats(sw, 2);
    CHECK(got == 30 && s1.netem_qdrop - s0.netem_qdrop == 70, "limit 30: %d passed, %lu qdrop", got,
          (unsigned long)(s1.netem_qdrop - s0.netem_qdrop));
    /* loss 0.5 (seeded) */
    CHECK(ss_port_netem(sw, 2, 1, 0, 0, 0x80000000u, 0, 0, 0, 7) == SS_OK, "loss");
    s0 = pstats(sw, 2);
    got = run_flow(a0, b0, 1000, 64, 20, NULL, NULL);
    s1 = pstats(sw, 2);
    uint64_t lost = s1.netem_lost - s0.netem_lost;
    CHECK(got > 400 && got < 600 && lost == 1000 - (uint64_t)got, "loss 0.5: %d passed, %lu lost",
          got, (unsigned long)lost);
    CHECK(ss_port_netem(sw, 2, 1, 0, 0, 0, 0, 0, 0, 0) == SS_OK, "off");
    /* global loss rate: on receive (port 1) and on send (port 2) */
    CHECK(ss_set_loss_rate(sw, 0.25, 3) == SS_OK, "loss rate");
    ss_port_stats r0 = pstats(sw, 1);
    s0 = pstats(sw, 2);
    got = run_flow(a0, b0, 2000, 64, 20, NULL, NULL);
    ss_port_stats r1 = pstats(sw, 1);
    s1 = pstats(sw, 2);
    uint64_t lin = r1.netem_lost - r0.netem_lost, lout = s1.netem_lost - s0.netem_lost;
    CHECK(got > 1000 && got < 1250 && lin + lout == 2000 - (uint64_t)got && lin > 400 && lout > 250,
          "loss rate 0.25 both ways: %d passed (1125 expected), lost %lu in %lu out", got,
          (unsigned long)lin, (unsigned long)lout);
    CHECK(ss_set_loss_rate(sw, 0.0, 0) == SS_OK, "loss rate off");
    /* packet-out into an emulated link: the timer is re-armed */
    CHECK(ss_port_netem(sw, 2, 1, 30000000, 0, 0, 0, 0, 0, 1) == SS_OK, "delay");
    raw_drain(b0);
    make_frame(f, 77, 64, ETH_TEST);
    double t0 = now_s();
    CHECK(ss_packet_out(sw, f, 64) == SS_OK, "packet-out");
    int m = raw_recv(b0, g, sizeof g, 1000);
    double dt = now_s() - t0;
    CHECK(m == 64 && dt > 0.029 && dt < 0.034, "packet-out delayed 30 ms: %.3f ms", dt * 1e3);
    /* frames held when the switch stops are freed by ss_switch_free (ASan checks) */
    for (int i = 0; i < 10; i++)
        raw_send(a0, f, 64);
    sleep_ms(5);
    ss_switch_free(sw);
    close(a0);
    close(b0);
}

/* ------------------------------------------------------------------ flood */

typedef struct blast {
    const char *ifname;
    long n;
    size_t len;
    double seconds;  /* > 0: send for this long instead of n frames */
    long sent;
    double elapsed;
    double cpu;  /* the sender thread's CPU time */
} blast;

static double cpu_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void pin_to(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *blaster(void *arg)
{
    blast *b = arg;
    if (getenv("SSIO_PIN"))
        pin_to(0);
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = 0,
                              .sll_ifindex = (int)if_nametoindex(b->ifname)};
    if (fd < 0 || bind(fd, (struct sockaddr *)&sll, sizeof sll) != 0) {
        perror("blaster socket");
        return NULL;
    }
    enum { B = 256 };
    static uint8_t frames[B][256];
    struct mmsghdr mm[B];
    struct iovec iov[B];
    for (int i = 0; i < B; i++) {
        make_frame(frames[i], (uint32_t)i, b->len, ETH_TEST);
        iov[i] = (struct iovec){frames[i], b->len};
        memset(&mm[i], 0, sizeof mm[i]);
        mm[i].msg_hdr.msg_iov = &iov[i];
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    double t0 = now_s(), end = t0 + b->seconds;
    long sent = 0;
    while (b->seconds > 0 ? now_s() < end : sent < b->n) {
        int k = b->seconds > 0 ? B : (int)(b->n - sent < B ? b->n - sent : B);
        int r = sendmmsg(fd, mm, (unsigned)k, 0);
        if (r > 0)
            sent += r;
        else if (errno != EINTR && errno != ENOBUFS && errno != EAGAIN)
            break;
    }
    b->elapsed = now_s() - t0;
    b->sent = sent;
    b->cpu = cpu_s(CLOCK_THREAD_CPUTIME_ID);
    close(fd);
    return NULL;
}

/* A counter of an interface of our namespace (/proc/net/dev; /sys/class/net shows the
 * namespace sysfs was mounted in): "rx_packets" or "tx_packets". */
static uint64_t sysfs_stat(const char *ifname, const char *what)
{
    FILE *f = fopen("/proc/net/dev", "r");
    char line[512];
    unsigned long long v = 0;
    size_t l = strlen(ifname);
    while (f && fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ')
            p++;
        if (strncmp(p, ifname, l) != 0 || p[l] != ':')
            continue;
        unsigned long long c[16] = {0};
        if (sscanf(p + l + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &c[0], &c[1],
                   &c[2], &c[3], &c[4], &c[5], &c[6], &c[7], &c[8], &c[9]) == 10)
            v = strcmp(what, "rx_packets") == 0 ? c[1] : c[9];
    }
    if (f)
        fclose(f);
    return v;
}

typedef struct prober {
    struct ss_switch *sw;
    int stop;
    double worst;
    long calls;
} prober;

/* A control call every millisecond during the flood: do they go on, and how long do they wait? */
static void *probe(void *arg)
{
    prober *pr = arg;
    while (!__atomic_load_n(&pr->stop, __ATOMIC_RELAXED)) {
        ss_port_stats st;
        double t = now_s();
        ss_get_port_stats(pr->sw, 1, &st);
        t = now_s() - t;
        if (t > pr->worst)
            pr->worst = t;
        pr->calls++;
        sleep_ms(1);
    }
    return NULL;
}

static void t_flood(long n)
{
    struct ss_switch *sw = sw_bound();
    int a0 = raw_open("a0"), b0 = raw_open("b0");
    CHECK(ss_start(sw) == SS_OK, "start");
    close(b0);  /* nobody reads b0 during the flood: the kernel discards what arrives */
    uint64_t b0_rx = sysfs_stat("b0", "rx_packets"), a1_rx0 = sysfs_stat("a1", "rx_packets");
    ss_port_stats s01 = pstats(sw, 1);
    blast bl = {.ifname = "a0", .n = n, .len = 64};
    pthread_t th, pt;
    prober pr = {.sw = sw};
    pthread_create(&pt, NULL, probe, &pr);
    pthread_create(&th, NULL, blaster, &bl);
    pthread_join(th, NULL);
    __atomic_store_n(&pr.stop, 1, __ATOMIC_RELAXED);
    pthread_join(pt, NULL);
    printf("  control calls during the flood: %ld, the slowest %.2f ms\n", pr.calls, pr.worst * 1e3);
    /* The wait is a figure, not a check (tests assert no wall-clock times; the suite shares its
     * cores): the check is that control calls went on during the flood, so the data path does
     * not hold the switch's lock for a whole burst. */
    CHECK(pr.calls > 1, "no control call completed during the flood (%ld)", pr.calls);
    sleep_ms(300);
    ss_port_stats s1 = pstats(sw, 1), s2 = pstats(sw, 2);
    uint64_t arrived = sysfs_stat("b0", "rx_packets") - b0_rx;
    uint64_t a1_rx = sysfs_stat("a1", "rx_packets") - a1_rx0;
    s1.rx_packets -= s01.rx_packets;
    s1.rx_dropped -= s01.rx_dropped;
    printf("  flood: sent %ld x 64 B in %.2f s (%.0f/s); switch rx %lu, ring drops %lu "
           "(a1 saw %lu); tx %lu, tx_dropped %lu; b0 got %lu\n",
           bl.sent, bl.elapsed, bl.sent / bl.elapsed, (unsigned long)s1.rx_packets,
           (unsigned long)s1.rx_dropped, (unsigned long)a1_rx, (unsigned long)s2.tx_packets,
           (unsigned long)s2.tx_dropped, (unsigned long)arrived);
    CHECK(bl.sent == n, "sender sent %ld of %ld", bl.sent, n);
    CHECK(s1.rx_packets > 0 && s1.rx_packets + s1.rx_dropped <= a1_rx + 10,
          "rx + ring drops <= what reached a1");
    CHECK(s1.rx_packets + s1.rx_dropped >= a1_rx - 1000,
          "every frame that reached a1 is forwarded or counted: rx %lu + dropped %lu vs %lu",
          (unsigned long)s1.rx_packets, (unsigned long)s1.rx_dropped, (unsigned long)a1_rx);
    CHECK(s2.tx_packets + s2.tx_dropped == s1.rx_packets, "every received frame sent or counted");
    CHECK(arrived == s2.tx_packets, "b0 got what the switch sent");
    /* a valid frame afterwards is still forwarded */
    b0 = raw_open("b0");
    uint8_t f[100], g[200];
    make_frame(f, 424242, 100, ETH_TEST);
    raw_send(a0, f, 100);
    int m, found = 0;
    while ((m = raw_recv(b0, g, sizeof g, 1000)) > 0)
        if (m == 100 && frame_seq(g) == 424242) {
            found = 1;
            break;
        }
    CHECK(found, "a frame after the flood is forwarded");
    ss_switch_free(sw);
    close(a0);
    close(b0);
}

/* ------------------------------------------------------------------ bench */

#ifdef IO_BENCH_AGG
/* tests/agg_prog.c: 32 bit<32> values added into 32 registers (bench/p4/agg32.p4), out port 1 */
extern const ss_program agg_program;
#endif

static int bench(double seconds, const char *sender, size_t len)
{
    uint32_t in = 1, out = 2;
    struct ss_switch *sw;
#ifdef IO_BENCH_AGG
    sw = ss_switch_new(CPU_PORT, 1);
    for (uint32_t i = 0; i < 32; i++)
        ss_define_register(sw, i, 32, 1024);
    if (ss_switch_load(sw, &agg_program) != SS_OK || ss_port_add(sw, 2, "a1") != SS_OK ||
        ss_port_add(sw, 1, "b1") != SS_OK) {
        fprintf(stderr, "agg setup: %s\n", ss_last_error(sw));
        return 2;
    }
    in = 2, out = 1;
    len = 146;  /* Ethernet + slot + 32 x bit<32> */
    printf("program: agg_prog.c (32 registers), a0 -> 2@a1 -> 1@b1 -> b0\n");
#else
    sw = sw_bound();
    printf("program: io_prog.c (1 -> 2, no tables), a0 -> 1@a1 -> 2@b1 -> b0\n");
#endif
    if (getenv("SSIO_PIN"))  /* the data-path thread on CPU 1, the sender on CPU 0 */
        pin_to(1);
    if (ss_start(sw) != SS_OK)
        return 2;
    ss_port_stats s0 = pstats(sw, in), t0 = pstats(sw, out);
    uint64_t a1_0 = sysfs_stat("a1", "rx_packets"), b0_0 = sysfs_stat("b0", "rx_packets");
    double t = now_s(), c0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID), sender_cpu = 0;
    long sent = -1;
    if (strcmp(sender, "trafgen") == 0) {
        FILE *c = fopen("/tmp/ssio_trafgen.cfg", "w");
        if (!c)
            return 2;
        fprintf(c, "{ 0x02,0,0,0,0,0x02, 0x02,0,0,0,0,0x01, 0x88,0xb5, fill(0x11, %zu) }\n",
                len - 14);
        fclose(c);
        char cmd[256];
        snprintf(cmd, sizeof cmd,
                 "timeout -s INT %.0f taskset -c 0 trafgen --dev a0 --conf /tmp/ssio_trafgen.cfg -P 1 "
                 "--no-sock-mem > /tmp/ssio_trafgen.log 2>&1",
                 seconds);
        int r = system(cmd);
        (void)r;
    } else {
        blast bl = {.ifname = "a0", .len = len, .seconds = seconds};
        pthread_t th;
        pthread_create(&th, NULL, blaster, &bl);
        pthread_join(th, NULL);
        sent = bl.sent;
        sender_cpu = bl.cpu;
    }
    double el = now_s() - t, cpu = cpu_s(CLOCK_PROCESS_CPUTIME_ID) - c0 - sender_cpu;
    sleep_ms(200);
    ss_port_stats s1 = pstats(sw, in), t1 = pstats(sw, out);
    uint64_t a1 = sysfs_stat("a1", "rx_packets") - a1_0, b0 = sysfs_stat("b0", "rx_packets") - b0_0;
    uint64_t rx = s1.rx_packets - s0.rx_packets, tx = t1.tx_packets - t0.tx_packets;
    printf("bench %s %zu B, %.1f s: offered %lu (%.0f/s) at a1; switch rx %lu, ring drops %lu, "
           "tx %lu (%.0f/s forwarded), tx_dropped %lu; b0 got %lu%s",
           sender, len, el, (unsigned long)a1, a1 / el, (unsigned long)rx,
           (unsigned long)(s1.rx_dropped - s0.rx_dropped), (unsigned long)tx, tx / el,
           (unsigned long)(t1.tx_dropped - t0.tx_dropped), (unsigned long)b0,
           sent >= 0 ? "" : "\n");
    if (sent >= 0)
        printf("; sender sent %ld\n", sent);
    printf("switch CPU %.2f s (%.0f%% of one core): %.0f ns per forwarded frame -> capacity about "
           "%.0f frames/s on one core\n",
           cpu, 100 * cpu / el, tx ? cpu * 1e9 / (double)tx : 0.0,
           cpu > 0 ? (double)tx / cpu : 0.0);
    ss_switch_free(sw);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    setup_netns();
    if (argc > 1 && strcmp(argv[1], "bench") == 0) {
        double secs = argc > 2 ? atof(argv[2]) : 5.0;
        const char *sender = argc > 3 ? argv[3] : "mmsg";
        size_t len = argc > 4 ? (size_t)atoi(argv[4]) : 64;
        if (len < 60 || len > 256)
            len = 64;
        return bench(secs, sender, len);
    }
    long flood = argc > 2 ? atol(argv[2]) : 1000000;
    printf("errors\n");
    t_errors();
    printf("forward\n");
    t_forward();
    printf("sizes\n");
    t_sizes();
    printf("netem\n");
    t_netem();
    printf("flood\n");
    t_flood(flood);
    if (fails) {
        fprintf(stderr, "io_test: %d failures\n", fails);
        return 1;
    }
    printf("io_test: ok\n");
    return 0;
}
