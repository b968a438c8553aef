/* Batched UDP I/O for the aggregation client (host_agents/aggio.py builds and binds it with cffi).
 *
 * One sendmmsg/recvmmsg moves a whole window of aggregation packets, so that Python pays one
 * call per batch instead of one per packet. Packets live in rows of a caller-owned
 * table (`stride` bytes per row); nothing here keeps state between calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#define AGGIO_BATCH 256 /* messages per system call: bounded so the arrays fit on the stack */

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
 * full_wait_ns per wait. Returns how many were sent, or -errno when the first one failed. */
int aggio_send(int fd, const uint8_t *table, uint32_t stride, const int32_t *rows, const uint32_t *lens,
               int n, uint32_t ip_be, uint16_t port_be, int64_t full_wait_ns)
{
    struct sockaddr_in dst;
    memset(&dst, 0, sizeof dst);
    dst.sin_family = AF_INET;
    dst.sin_port = port_be;
    dst.sin_addr.s_addr = ip_be;
    struct mmsghdr msgs[AGGIO_BATCH];
    struct iovec iov[AGGIO_BATCH];
    int sent = 0;
    while (sent < n) {
        int m = n - sent < AGGIO_BATCH ? n - sent : AGGIO_BATCH;
        for (int k = 0; k < m; k++) {
            size_t row = (size_t)rows[sent + k];
            /* the iovec's base is not const in POSIX; sendmmsg only reads it */
            iov[k].iov_base = (void *)(uintptr_t)(table + row * stride);
            iov[k].iov_len = lens[row];
            memset(&msgs[k], 0, sizeof msgs[k]);
            msgs[k].msg_hdr.msg_name = &dst;
            msgs[k].msg_hdr.msg_namelen = sizeof dst;
            msgs[k].msg_hdr.msg_iov = &iov[k];
            msgs[k].msg_hdr.msg_iovlen = 1;
        }
        int r = sendmmsg(fd, msgs, (unsigned)m, MSG_DONTWAIT);
        if (r > 0) {
            sent += r;
            continue;
        }
        int err = r < 0 ? errno : EAGAIN;
        if (err == EINTR)
            continue;
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
