/* Kernel UDP socket I/O path: one non-blocking socket, recvmmsg/sendmmsg bursts, poll() for
 * the receive timeout. Large socket buffers so bursts of reply fragments are not dropped. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io.h"

#define BURST 64
#define SOCK_BUF_BYTES (32 << 20)

struct sock_io {
    struct rs_io io;
    int fd;
    struct mmsghdr msgs[BURST];
    struct iovec iov[BURST];
    struct sockaddr_in addr[BURST];
};

static int sock_recv(struct rs_io *io, struct rs_datagram *out, int max, int timeout_ms)
{
    struct sock_io *s = io->priv;
    if (max > BURST)
        max = BURST;
    for (int attempt = 0; attempt < 2; attempt++) {
        for (int i = 0; i < max; i++) {
            s->iov[i] = (struct iovec){out[i].data, RS_MAX_DATAGRAM};
            memset(&s->msgs[i].msg_hdr, 0, sizeof s->msgs[i].msg_hdr);
            s->msgs[i].msg_hdr.msg_iov = &s->iov[i];
            s->msgs[i].msg_hdr.msg_iovlen = 1;
            s->msgs[i].msg_hdr.msg_name = &s->addr[i];
            s->msgs[i].msg_hdr.msg_namelen = sizeof s->addr[i];
        }
        int n = recvmmsg(s->fd, s->msgs, (unsigned)max, MSG_DONTWAIT, NULL);
        if (n > 0) {
            for (int i = 0; i < n; i++) {
                memset(&out[i].peer, 0, sizeof out[i].peer);
                out[i].peer.ip = s->addr[i].sin_addr.s_addr;
                out[i].peer.port = s->addr[i].sin_port;
                /* a truncated datagram was longer than any the protocol allows: keep it at
                 * the maximum so the server rejects it as malformed */
                unsigned len = s->msgs[i].msg_len;
                if ((s->msgs[i].msg_hdr.msg_flags & MSG_TRUNC) || len > RS_MAX_DATAGRAM)
                    len = RS_MAX_DATAGRAM;
                out[i].len = (uint16_t)len;
            }
            return n;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            fprintf(stderr, "replay_server: recvmmsg: %s\n", strerror(errno));
            return -1;
        }
        if (n < 0 && errno == EINTR)
            return 0; /* a signal: let the loop look at its flags */
        if (attempt || timeout_ms <= 0)
            return 0;
        struct pollfd p = {s->fd, POLLIN, 0};
        if (poll(&p, 1, timeout_ms) <= 0)
            return 0;
    }
    return 0;
}

static int sock_send(struct rs_io *io, const struct rs_datagram *dgs, int n)
{
    struct sock_io *s = io->priv;
    if (n > BURST)
        n = BURST;
    for (int i = 0; i < n; i++) {
        s->addr[i] = (struct sockaddr_in){.sin_family = AF_INET,
                                          .sin_port = dgs[i].peer.port,
                                          .sin_addr.s_addr = dgs[i].peer.ip};
        s->iov[i] = (struct iovec){(void *)dgs[i].data, dgs[i].len};
        memset(&s->msgs[i].msg_hdr, 0, sizeof s->msgs[i].msg_hdr);
        s->msgs[i].msg_hdr.msg_iov = &s->iov[i];
        s->msgs[i].msg_hdr.msg_iovlen = 1;
        s->msgs[i].msg_hdr.msg_name = &s->addr[i];
        s->msgs[i].msg_hdr.msg_namelen = sizeof s->addr[i];
    }
    int sent = sendmmsg(s->fd, s->msgs, (unsigned)n, MSG_DONTWAIT);
    if (sent >= 0)
        return sent;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS || errno == EINTR)
        return 0; /* buffers full: the caller retries */
    /* this datagram cannot go (e.g. unreachable destination): count it as handed over so one
     * bad peer does not stall the queue */
    return 1;
}

static void sock_close(struct rs_io *io)
{
    struct sock_io *s = io->priv;
    close(s->fd);
    free(s);
}

static void set_buf(int fd, int force_opt, int opt)
{
    int v = SOCK_BUF_BYTES;
    /* as root, FORCE passes net.core.{r,w}mem_max; otherwise take what the kernel allows */
    if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof v) != 0)
        setsockopt(fd, SOL_SOCKET, opt, &v, sizeof v);
}

struct rs_io *rs_io_sockets_open(const struct rs_io_config *cfg, char *err, size_t errlen)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(cfg->port)};
    const char *ip = cfg->bind_ip ? cfg->bind_ip : "0.0.0.0";
    if (inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
        snprintf(err, errlen, "--bind %s is not an IPv4 address", ip);
        return NULL;
    }
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return NULL;
    }
    set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF);
    set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        snprintf(err, errlen, "cannot bind UDP %s:%u: %s", ip, cfg->port, strerror(errno));
        close(fd);
        return NULL;
    }
    struct sock_io *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        close(fd);
        return NULL;
    }
    s->fd = fd;
    s->io = (struct rs_io){"sockets", sock_recv, sock_send, sock_close, s};
    return &s->io;
}
