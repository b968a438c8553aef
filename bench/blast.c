/* blast: a batched AF_PACKET sender for the switch benchmarks (bench/softswitch_pps.py), so that
 * the sender is not the bottleneck and the aggregation workers stay in step.
 *
 *   blast SECONDS SLOTS SLOT_OFF ROUND_OFF IFNAME HEXFRAME [IFNAME HEXFRAME ...]
 *
 * Each interface is one worker with its own template frame. Packet i of every worker carries
 * slot i % SLOTS and round 1 + i / SLOTS (big-endian 16-bit fields at SLOT_OFF and ROUND_OFF), so
 * that the workers contribute to the same (slot, round) in the same order, as allreduce hosts
 * do. Frames go out in batches of BATCH per interface (one sendmmsg), interfaces in turn.
 * Prints "sent N" (frames the kernel took) at the end. Stops after SECONDS or on SIGTERM/SIGINT.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define MAX_IFS 16
#define MAX_FRAME 9000

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes hex into out; returns the byte count or -1. */
static long unhex(const char *hex, uint8_t *out, size_t cap) {
    size_t n = strlen(hex);
    if (n % 2 != 0 || n / 2 > cap) return -1;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval((unsigned char)hex[2 * i]), lo = hexval((unsigned char)hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return (long)(n / 2);
}

static void put16(uint8_t *p, unsigned v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

struct worker {
    int fd;
    size_t len;
    uint8_t frames[BATCH][MAX_FRAME];
    struct iovec iov[BATCH];
    struct mmsghdr msgs[BATCH];
};

int main(int argc, char **argv) {
    if (argc < 7 || (argc - 5) % 2 != 0) {
        fprintf(stderr, "usage: %s SECONDS SLOTS SLOT_OFF ROUND_OFF IFNAME HEXFRAME [IFNAME HEXFRAME ...]\n",
                argv[0]);
        return 2;
    }
    double seconds = atof(argv[1]);
    unsigned long slots = strtoul(argv[2], NULL, 10);
    unsigned long slot_off = strtoul(argv[3], NULL, 10), round_off = strtoul(argv[4], NULL, 10);
    int nifs = (argc - 5) / 2;
    if (slots == 0 || slots > 65535 || nifs > MAX_IFS || seconds <= 0) {
        fprintf(stderr, "blast: bad SECONDS, SLOTS (1..65535) or too many interfaces (max %d)\n", MAX_IFS);
        return 2;
    }
    static struct worker w[MAX_IFS];
    for (int j = 0; j < nifs; j++) {
        const char *ifname = argv[5 + 2 * j];
        long len = unhex(argv[6 + 2 * j], w[j].frames[0], MAX_FRAME);
        if (len < 0 || (unsigned long)len < slot_off + 2 || (unsigned long)len < round_off + 2) {
            fprintf(stderr, "blast: frame for %s is not hex, too long, or too short for the offsets\n", ifname);
            return 2;
        }
        w[j].len = (size_t)len;
        for (int b = 1; b < BATCH; b++) memcpy(w[j].frames[b], w[j].frames[0], w[j].len);
        unsigned ifindex = if_nametoindex(ifname);
        if (ifindex == 0) {
            fprintf(stderr, "blast: no interface %s\n", ifname);
            return 2;
        }
        w[j].fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
        if (w[j].fd < 0) {
            perror("blast: socket");
            return 1;
        }
        struct sockaddr_ll sll = {0};
        sll.sll_family = AF_PACKET;
        sll.sll_protocol = htons(ETH_P_ALL);
        sll.sll_ifindex = (int)ifindex;
        if (bind(w[j].fd, (struct sockaddr *)&sll, sizeof sll) < 0) {
            perror("blast: bind");
            return 1;
        }
        /* nobody reads this socket: receive nothing */
        int zero = 0;
        setsockopt(w[j].fd, SOL_SOCKET, SO_RCVBUF, &zero, sizeof zero);
        for (int b = 0; b < BATCH; b++) {
            w[j].iov[b].iov_base = w[j].frames[b];
            w[j].iov[b].iov_len = w[j].len;
            memset(&w[j].msgs[b], 0, sizeof w[j].msgs[b]);
            w[j].msgs[b].msg_hdr.msg_iov = &w[j].iov[b];
            w[j].msgs[b].msg_hdr.msg_iovlen = 1;
        }
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    unsigned long long sent = 0, failed = 0, i = 0;
    double end = now_s() + seconds;
    while (!stop) {
        for (int j = 0; j < nifs; j++) {
            for (int b = 0; b < BATCH; b++) {
                unsigned long long k = i + (unsigned long long)b;
                put16(w[j].frames[b] + slot_off, (unsigned)(k % slots));
                put16(w[j].frames[b] + round_off, (unsigned)((1 + k / slots) & 0xFFFF));
            }
            int off = 0;
            while (off < BATCH && !stop) {
                int r = sendmmsg(w[j].fd, w[j].msgs + off, (unsigned)(BATCH - off), 0);
                if (r < 0) {
                    if (errno == EINTR) continue;
                    if (errno == ENOBUFS || errno == EAGAIN) { /* the qdisc is full: yield, retry */
                        failed++;
                        usleep(50);
                        continue;
                    }
                    perror("blast: sendmmsg");
                    return 1;
                }
                off += r;
                sent += (unsigned long long)r;
            }
        }
        i += BATCH;
        if ((i / BATCH) % 16 == 0 && now_s() >= end) break;
    }
    printf("sent %llu retries %llu\n", sent, failed);
    return 0;
}
