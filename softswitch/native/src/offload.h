/* offload.h — what a NIC's offloads do, for ports bound in offload mode (ss_set_port_offloads).
 *
 * In offload mode a port's AF_PACKET socket exchanges frames with the kernel behind a
 * virtio_net_hdr (PACKET_VNET_HDR), as a hypervisor's virtual NIC does, so hosts whose veths
 * have TSO/USO on hand the switch one TCP or UDP super-frame of up to 64 KiB (with a partial
 * checksum) instead of dozens of wire frames, and the switch can hand the kernel one
 * super-frame for a run of output frames that the kernel cuts again on its way to the host.
 * The per-frame kernel work on both sides (socket calls, skb allocation, the veth hop, the
 * receiver's route lookup) is paid once per super-frame, as it is with a real NIC.
 *
 * The P4 pipeline still sees every wire frame:
 * - ss_off_split cuts a received super-frame into the frames a NIC would have put on the wire
 *   (Linux's GSO rules: lengths, TCP sequence numbers, FIN/PSH on the last, CWR on the first,
 *   IPv4 IDs counting up, every checksum complete) and completes a partial checksum;
 * - ss_off_run_* decide which consecutive output frames to one port form one flow that the
 *   kernel's segmentation will give back byte for byte, except two fields a GSO NIC rewrites:
 *   the IPv4 IDs of a run count up from the first frame's (only frames with DF set, whose ID
 *   RFC 6864 leaves without meaning, are merged) and a zero UDP checksum ("none") comes out
 *   computed.  A frame whose checksum is wrong is never merged (merging would correct it), nor
 *   one whose wire frames would exceed the port's MTU (io.c: a merged frame skips that check).
 * Pure functions on buffers (unit-tested in tests/test_offload.c); io.c does the sockets. */
#ifndef SS_OFFLOAD_H
#define SS_OFFLOAD_H

#include <stdint.h>

#define SS_VNET_HDR_LEN 10u          /* struct virtio_net_hdr, little-endian fields */
#define SS_VNET_F_NEEDS_CSUM 1u
#define SS_VNET_GSO_NONE 0u
#define SS_VNET_GSO_TCPV4 1u
#define SS_VNET_GSO_TCPV6 4u
#define SS_VNET_GSO_UDP_L4 5u        /* USO (kernel 6.2+ for packet sockets) */
#define SS_VNET_GSO_ECN 0x80u
#define SS_OFF_MAX_SEGS 64u          /* frames per merged super-frame (the kernel allows 64+) */

typedef struct ss_vnet_hdr {
    uint8_t flags, gso_type;
    uint16_t hdr_len, gso_size, csum_start, csum_offset;  /* host order */
} ss_vnet_hdr;

void ss_vnet_load(ss_vnet_hdr *h, const uint8_t raw[SS_VNET_HDR_LEN]);
void ss_vnet_store(const ss_vnet_hdr *h, uint8_t raw[SS_VNET_HDR_LEN]);

/* Receives each wire frame of a split (valid only during the call). */
typedef void (*ss_seg_fn)(void *ctx, uint8_t *frame, uint32_t len);

/* A frame received with its virtio_net_hdr, as wire frames: a frame without GSO goes to fn
 * once (its partial checksum completed in place when NEEDS_CSUM); a GSO frame (TCP over IPv4 or
 * IPv6, UDP over IPv4 or IPv6; IPv4 options are copied into every frame, IPv6 extension
 * headers are refused) is cut into
 * frames of gso_size payload bytes built in scratch (scratch_cap >= the largest of them).
 * Returns the number of frames given to fn, or -1 for a frame that cannot be split as its
 * header says (nothing given to fn). */
int ss_off_split(const ss_vnet_hdr *vh, uint8_t *frame, uint32_t len, uint8_t *scratch,
                 uint32_t scratch_cap, ss_seg_fn fn, void *ctx);

/* A run of output frames that can go to the kernel as one super-frame. */
typedef struct ss_off_run {
    const uint8_t *first;
    uint32_t n;          /* frames in the run */
    uint32_t hdr_len;    /* Ethernet + IPv4 + L4 header bytes (equal in every frame) */
    uint32_t seg;        /* payload bytes of every frame but the last */
    uint32_t total;      /* payload bytes of all frames */
    uint32_t next_seq;   /* TCP: the sequence number the next frame must have */
    uint8_t proto;       /* 6 or 17 */
    uint8_t last_flags;  /* TCP flags of the last frame */
    uint8_t closed;      /* the last frame was short or pushed: nothing more joins */
} ss_off_run;

/* 1 when frame can start a run (IPv4 without options, DF, TCP with ACK (and PSH) only or UDP,
 * a payload, a correct or, for UDP, no checksum), 0 otherwise. */
int ss_off_run_begin(ss_off_run *r, const uint8_t *frame, uint32_t len);
/* 1 when frame continues the run (and is now part of it), 0 otherwise (the run is unchanged). */
int ss_off_run_add(ss_off_run *r, const uint8_t *frame, uint32_t len);
/* For a run of n >= 2 frames: rewrites the first frame's headers (first: the same bytes as
 * r->first, writable) into the super-frame's and fills the virtio_net_hdr.  The super-frame
 * is the first frame followed by the payload (bytes from hdr_len on) of every other one. */
void ss_off_run_finish(const ss_off_run *r, uint8_t *first, ss_vnet_hdr *vh);

#endif /* SS_OFFLOAD_H */
