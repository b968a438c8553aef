/* offload.c — segmentation of received super-frames and merging of output runs (offload.h).
 *
 * Checksums: the Internet checksum is a ones'-complement sum of 16-bit words, which RFC 1071
 * shows does not depend on the byte order it is computed in; so words are loaded in host order
 * (memcpy: no unaligned access), summed in 64 bits and folded, and the result stored back the
 * same way.  Every sum starts at an even offset of the bytes it covers. */
#include "offload.h"

#include <string.h>

#define ETH_HLEN_ 14u
#define ET_IPV4 0x0800u
#define ET_IPV6 0x86ddu
#define P_TCP 6u
#define P_UDP 17u
#define TCP_FIN 0x01u
#define TCP_PSH 0x08u
#define TCP_ACK 0x10u
#define TCP_CWR 0x80u

static inline uint16_t be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline void put16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline void putle16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

void ss_vnet_load(ss_vnet_hdr *h, const uint8_t raw[SS_VNET_HDR_LEN])
{
    h->flags = raw[0];
    h->gso_type = raw[1];
    h->hdr_len = le16(raw + 2);
    h->gso_size = le16(raw + 4);
    h->csum_start = le16(raw + 6);
    h->csum_offset = le16(raw + 8);
}

void ss_vnet_store(const ss_vnet_hdr *h, uint8_t raw[SS_VNET_HDR_LEN])
{
    raw[0] = h->flags;
    raw[1] = h->gso_type;
    putle16(raw + 2, h->hdr_len);
    putle16(raw + 4, h->gso_size);
    putle16(raw + 6, h->csum_start);
    putle16(raw + 8, h->csum_offset);
}

/* ------------------------------------------------------------------ checksums */

static uint64_t sum_add(uint64_t acc, const uint8_t *p, uint32_t n)
{
    while (n >= 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        acc += w;
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        uint16_t w;
        memcpy(&w, p, 2);
        acc += w;
        p += 2;
        n -= 2;
    }
    if (n) {  /* an odd last byte is the high byte of a word padded with zero */
        uint8_t pad[2] = {p[0], 0};
        uint16_t w;
        memcpy(&w, pad, 2);
        acc += w;
    }
    return acc;
}

static uint16_t sum_fold(uint64_t acc)
{
    while (acc >> 16)
        acc = (acc & 0xffffu) + (acc >> 16);
    return (uint16_t)acc;
}

/* The pseudo-header's sum for an L4 segment of l4_len bytes (ip: the IP header). */
static uint64_t pseudo_sum(const uint8_t *ip, int v6, uint8_t proto, uint32_t l4_len)
{
    uint8_t tail[8] = {0};
    uint64_t acc;
    if (v6) {
        acc = sum_add(0, ip + 8, 32);  /* source and destination */
        put32(tail, l4_len);
        tail[7] = proto;
        return sum_add(acc, tail, 8);
    }
    acc = sum_add(0, ip + 12, 8);
    tail[1] = proto;
    put16(tail + 2, l4_len);
    return sum_add(acc, tail, 4);
}

static void store_sum(uint8_t *field, uint16_t v)
{
    memcpy(field, &v, 2);
}

static void ipv4_fix_csum(uint8_t *ip, uint32_t ihl_bytes)
{
    ip[10] = ip[11] = 0;
    store_sum(ip + 10, (uint16_t)~sum_fold(sum_add(0, ip, ihl_bytes)));
}

/* The full L4 checksum of l4[0..l4_len), its field at csum_off, written in place. */
static void l4_fill_csum(const uint8_t *ip, int v6, uint8_t proto, uint8_t *l4, uint32_t l4_len,
                         uint32_t csum_off)
{
    l4[csum_off] = l4[csum_off + 1] = 0;
    uint16_t c = (uint16_t)~sum_fold(sum_add(pseudo_sum(ip, v6, proto, l4_len), l4, l4_len));
    if (c == 0 && proto == P_UDP)
        c = 0xffffu;  /* UDP sends a computed zero as all ones (zero means "no checksum") */
    store_sum(l4 + csum_off, c);
}

static int l4_csum_ok(const uint8_t *ip, uint8_t proto, const uint8_t *l4, uint32_t l4_len)
{
    return sum_fold(sum_add(pseudo_sum(ip, 0, proto, l4_len), l4, l4_len)) == 0xffffu;
}

/* ------------------------------------------------------------------ split */

int ss_off_split(const ss_vnet_hdr *vh, uint8_t *frame, uint32_t len, uint8_t *scratch,
                 uint32_t scratch_cap, ss_seg_fn fn, void *ctx)
{
    unsigned gso = vh->gso_type & ~SS_VNET_GSO_ECN;
    if (gso == SS_VNET_GSO_NONE) {
        if (vh->flags & SS_VNET_F_NEEDS_CSUM) {  /* the rest of the sum from csum_start on */
            uint32_t start = vh->csum_start, field = start + vh->csum_offset;
            if (start >= len || field + 2u > len || (vh->csum_offset & 1u))
                return -1;
            uint16_t c = (uint16_t)~sum_fold(sum_add(0, frame + start, len - start));
            store_sum(frame + field, c ? c : 0xffffu);
        }
        fn(ctx, frame, len);
        return 1;
    }
    if ((gso != SS_VNET_GSO_TCPV4 && gso != SS_VNET_GSO_TCPV6 && gso != SS_VNET_GSO_UDP_L4) ||
        vh->gso_size == 0 || len < ETH_HLEN_ + 20u)
        return -1;
    uint16_t et = be16(frame + 12);
    uint8_t *ip = frame + ETH_HLEN_;
    int v6;
    uint32_t l4_off;
    uint8_t proto;
    if (et == ET_IPV4) {
        uint32_t ihl = (ip[0] & 0x0fu) * 4u;
        if ((ip[0] >> 4) != 4 || ihl < 20u || ETH_HLEN_ + ihl > len || (be16(ip + 6) & 0x3fffu))
            return -1;  /* not IPv4, header past the end, or a fragment */
        v6 = 0;
        l4_off = ETH_HLEN_ + ihl;
        proto = ip[9];
    } else if (et == ET_IPV6) {
        if ((ip[0] >> 4) != 6 || len < ETH_HLEN_ + 40u)
            return -1;
        v6 = 1;
        l4_off = ETH_HLEN_ + 40u;
        proto = ip[6];
    } else {
        return -1;
    }
    if (gso == SS_VNET_GSO_UDP_L4 ? proto != P_UDP
                                  : (proto != P_TCP || v6 != (gso == SS_VNET_GSO_TCPV6)))
        return -1;
    uint32_t l4_hlen = 8u;
    if (proto == P_TCP) {
        if (l4_off + 20u > len)
            return -1;
        l4_hlen = (uint32_t)(frame[l4_off + 12] >> 4) * 4u;
        if (l4_hlen < 20u)
            return -1;
    }
    uint32_t hdr = l4_off + l4_hlen;
    if (hdr >= len)
        return -1;
    uint32_t payload = len - hdr, mss = vh->gso_size;
    uint32_t nseg = (payload + mss - 1u) / mss;
    uint32_t seg_max = hdr + (payload < mss ? payload : mss);
    if (seg_max > scratch_cap || seg_max - ETH_HLEN_ > 65535u)
        return -1;
    uint32_t csum_off = proto == P_TCP ? 16u : 6u;
    uint16_t id0 = v6 ? 0 : be16(ip + 4);
    uint32_t seq0 = proto == P_TCP ? be32(frame + l4_off + 4) : 0;
    uint8_t flags0 = proto == P_TCP ? frame[l4_off + 13] : 0;
    for (uint32_t k = 0; k < nseg; k++) {
        uint32_t off = k * mss, n = payload - off < mss ? payload - off : mss;
        memcpy(scratch, frame, hdr);
        memcpy(scratch + hdr, frame + hdr + off, n);
        uint8_t *sip = scratch + ETH_HLEN_, *l4 = scratch + l4_off;
        uint32_t l4_len = l4_hlen + n;
        if (v6) {
            put16(sip + 4, l4_len);
        } else {
            put16(sip + 2, l4_off - ETH_HLEN_ + l4_len);
            put16(sip + 4, (uint16_t)(id0 + k));
            ipv4_fix_csum(sip, l4_off - ETH_HLEN_);
        }
        if (proto == P_UDP) {
            put16(l4 + 4, l4_len);
        } else {
            put32(l4 + 4, seq0 + off);
            uint8_t f = flags0;
            if (k + 1u < nseg)
                f = (uint8_t)(f & ~(TCP_FIN | TCP_PSH));
            if (k)
                f = (uint8_t)(f & ~TCP_CWR);
            l4[13] = f;
        }
        l4_fill_csum(sip, v6, proto, l4, l4_len, csum_off);
        fn(ctx, scratch, hdr + n);
    }
    return (int)nseg;
}

/* ------------------------------------------------------------------ merge */

/* Ethernet II + IPv4 without options, not a fragment, DF set, total length = the frame's, a
 * correct header checksum (segmentation writes a correct one: merging would repair it). */
static int plain_ipv4_df(const uint8_t *f, uint32_t len)
{
    return len >= ETH_HLEN_ + 20u && be16(f + 12) == ET_IPV4 && f[14] == 0x45 &&
           be16(f + 16) == len - ETH_HLEN_ && (be16(f + 20) & 0xbfffu) == 0 &&
           (be16(f + 20) & 0x4000u) && sum_fold(sum_add(0, f + ETH_HLEN_, 20)) == 0xffffu;
}

/* The L4 header length of a mergeable frame, 0 if it is not one. */
static uint32_t mergeable_l4(const uint8_t *f, uint32_t len, uint8_t *flags)
{
    const uint8_t *ip = f + ETH_HLEN_, *l4 = f + ETH_HLEN_ + 20u;
    uint32_t l4_len = len - ETH_HLEN_ - 20u;
    if (ip[9] == P_UDP) {
        if (l4_len <= 8u || be16(l4 + 4) != l4_len)
            return 0;
        if ((l4[6] | l4[7]) && !l4_csum_ok(ip, P_UDP, l4, l4_len))
            return 0;
        *flags = 0;
        return 8u;
    }
    if (ip[9] != P_TCP || l4_len < 20u)
        return 0;
    uint32_t hl = (uint32_t)(l4[12] >> 4) * 4u;
    if (hl < 20u || hl >= l4_len || (l4[12] & 0x0fu))
        return 0;
    if ((l4[13] & ~TCP_PSH) != TCP_ACK || be16(l4 + 18) != 0)  /* ACK [PSH] only, no URG */
        return 0;
    if (l4[16] == 0xff && l4[17] == 0xff)  /* -0: valid, but segmentation would write +0 */
        return 0;
    if (!l4_csum_ok(ip, P_TCP, l4, l4_len))
        return 0;
    *flags = l4[13];
    return hl;
}

int ss_off_run_begin(ss_off_run *r, const uint8_t *frame, uint32_t len)
{
    uint8_t flags;
    uint32_t hl;
    if (!plain_ipv4_df(frame, len) || !(hl = mergeable_l4(frame, len, &flags)))
        return 0;
    r->first = frame;
    r->n = 1;
    r->proto = frame[23];
    r->hdr_len = ETH_HLEN_ + 20u + hl;
    r->seg = r->total = len - r->hdr_len;
    r->last_flags = flags;
    r->closed = (uint8_t)((flags & TCP_PSH) != 0);
    r->next_seq = r->proto == P_TCP ? be32(frame + 38) + r->seg : 0;
    return 1;
}

int ss_off_run_add(ss_off_run *r, const uint8_t *f, uint32_t len)
{
    const uint8_t *a = r->first;
    if (r->closed || r->n >= SS_OFF_MAX_SEGS || len <= r->hdr_len)
        return 0;
    uint32_t p = len - r->hdr_len;
    if (p > r->seg || r->hdr_len - ETH_HLEN_ + r->total + p > 65535u)
        return 0;
    /* Ethernet header; IPv4 version/IHL and TOS; flags/fragment, TTL, protocol; addresses */
    if (memcmp(f, a, 16) != 0 || memcmp(f + 20, a + 20, 4) != 0 || memcmp(f + 26, a + 26, 8) != 0)
        return 0;
    if (!plain_ipv4_df(f, len))
        return 0;
    const uint8_t *l4 = f + 34, *l4a = a + 34;
    if (memcmp(l4, l4a, 4) != 0)  /* ports */
        return 0;
    if (r->proto == P_TCP) {
        uint32_t hl = r->hdr_len - 34u;
        if (be32(l4 + 4) != r->next_seq || memcmp(l4 + 8, l4a + 8, 5) != 0 ||  /* ack, offset */
            memcmp(l4 + 14, l4a + 14, 2) != 0 ||                              /* window */
            memcmp(l4 + 20, l4a + 20, hl - 20u) != 0)                         /* options */
            return 0;
    }
    uint8_t flags;
    if (mergeable_l4(f, len, &flags) != r->hdr_len - 34u)
        return 0;
    r->n++;
    r->total += p;
    r->last_flags = flags;
    r->next_seq += p;
    if (p < r->seg || (flags & TCP_PSH))
        r->closed = 1;
    return 1;
}

void ss_off_run_finish(const ss_off_run *r, uint8_t *first, ss_vnet_hdr *vh)
{
    uint8_t *ip = first + ETH_HLEN_, *l4 = first + 34;
    uint32_t l4_len = r->hdr_len - 34u + r->total;
    put16(ip + 2, 20u + l4_len);
    ipv4_fix_csum(ip, 20u);
    uint32_t csum_off = 16u;
    if (r->proto == P_UDP) {
        put16(l4 + 4, l4_len);
        csum_off = 6u;
    } else {
        l4[13] = r->last_flags;
    }
    /* partial checksum: the pseudo-header's sum, not complemented, for the kernel to finish */
    store_sum(l4 + csum_off, sum_fold(pseudo_sum(ip, 0, r->proto, l4_len)));
    vh->flags = SS_VNET_F_NEEDS_CSUM;
    vh->gso_type = r->proto == P_UDP ? SS_VNET_GSO_UDP_L4 : SS_VNET_GSO_TCPV4;
    vh->hdr_len = (uint16_t)r->hdr_len;
    vh->gso_size = (uint16_t)r->seg;
    vh->csum_start = 34;
    vh->csum_offset = (uint16_t)csum_off;
}
