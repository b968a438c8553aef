/* One I/O path of the replay server: kernel UDP sockets (io_sockets.c) or DPDK poll-mode
 * ethdev bursts (io_dpdk.c). The server core (server.c) sees only datagrams: UDP payloads with
 * the address they came from / go to. */
#ifndef RS_IO_H
#define RS_IO_H

#include <stddef.h>
#include <stdint.h>

/* Largest UDP payload in a 1500-byte IPv4 frame; the protocol's datagrams are at most 1432. */
#define RS_MAX_DATAGRAM 1472

struct rs_peer {
    uint32_t ip;    /* IPv4 address, network byte order */
    uint16_t port;  /* UDP port, network byte order */
    uint8_t mac[6]; /* DPDK path: the Ethernet source of the request, where the reply goes.
                       Unused (zero) on the sockets path. */
};

struct rs_datagram {
    struct rs_peer peer; /* received: where it came from; to send: where it goes */
    uint16_t len;        /* UDP payload bytes in data */
    uint8_t data[RS_MAX_DATAGRAM];
};

struct rs_io {
    const char *name; /* "sockets" or "dpdk", for logs and INFO */
    /* Receive up to max datagrams. Waits at most timeout_ms (0: do not wait) when none is
     * ready. Returns how many were stored in out (>= 0), or -1 on a fatal error (logged). */
    int (*recv_burst)(struct rs_io *io, struct rs_datagram *out, int max, int timeout_ms);
    /* Send n datagrams. Returns how many were handed to the kernel / NIC (the rest were not
     * sent: the caller may retry them). */
    int (*send_burst)(struct rs_io *io, const struct rs_datagram *dgs, int n);
    void (*close)(struct rs_io *io); /* frees io */
    void *priv;
};

struct rs_io_config {
    const char *bind_ip;   /* sockets: address to bind (default "0.0.0.0") */
    uint16_t port;         /* UDP port to serve, host byte order (default 47100) */
    const char *dpdk_args; /* DPDK: EAL arguments, space separated, e.g.
                              "--no-huge -m 256 --no-pci -l 0 --vdev=net_af_packet0,iface=veth0" */
    const char *dpdk_ip;   /* DPDK: the server's IPv4 address on that port (it answers ARP for it) */
};

/* Open an I/O path. On failure return NULL and write a one-line reason into err. */
struct rs_io *rs_io_sockets_open(const struct rs_io_config *cfg, char *err, size_t errlen);
/* Built without DPDK (no libdpdk at build time), this fails with a message saying so. */
struct rs_io *rs_io_dpdk_open(const struct rs_io_config *cfg, char *err, size_t errlen);

#endif
