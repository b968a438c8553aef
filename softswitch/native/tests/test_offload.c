/* test_offload.c — offload.c under ASan + UBSan: splitting super-frames as a NIC would, and
 * merging output runs so that splitting them again gives the frames back (up to the fields a
 * GSO NIC rewrites: IPv4 IDs and a zero UDP checksum), checksums against a byte-wise reference,
 * and random headers that must be refused without reading out of bounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "offload.h"

static int failures;
#define CHECK(c)                                                                 \
    do {                                                                         \
        if (!(c)) {                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                          \
        }                                                                        \
    } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* reference: big-endian 16-bit words, one at a time */
static uint16_t ref_csum(const uint8_t *pseudo, uint32_t plen, const uint8_t *p, uint32_t n)
{
    uint32_t acc = 0;
    for (uint32_t i = 0; i < plen; i += 2)
        acc += (uint32_t)(pseudo[i] << 8 | pseudo[i + 1]);
    for (uint32_t i = 0; i < n; i += 2)
        acc += (uint32_t)(p[i] << 8 | (i + 1 < n ? p[i + 1] : 0));
    while (acc >> 16)
        acc = (acc & 0xffff) + (acc >> 16);
    return (uint16_t)~acc;
}

static uint16_t g16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void s16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void s32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static uint16_t ref_l4(const uint8_t *f, uint32_t len)  /* IPv4 frame without options */
{
    uint8_t ps[12];
    memcpy(ps, f + 26, 8);
    ps[8] = 0;
    ps[9] = f[23];
    s16(ps + 10, len - 34);
    return ref_csum(ps, 12, f + 34, len - 34);
}

static int ip_ok(const uint8_t *f) { return ref_csum(NULL, 0, f + 14, 20) == 0; }
static int l4_ok(const uint8_t *f, uint32_t len) { return ref_l4(f, len) == 0; }

/* An IPv4 frame (DF) of one flow with `payload` random bytes; UDP or TCP (timestamps option). */
static uint32_t make(uint8_t *f, int tcp, uint32_t payload, uint16_t id, uint32_t seq, uint8_t tcp_flags,
                     int udp_zero_csum)
{
    static const uint8_t eth[14] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00};
    uint32_t l4h = tcp ? 32u : 8u, len = 34u + l4h + payload;
    memcpy(f, eth, 14);
    uint8_t *ip = f + 14, *l4 = f + 34;
    memset(ip, 0, 20);
    ip[0] = 0x45;
    s16(ip + 2, len - 14);
    s16(ip + 4, id);
    s16(ip + 6, 0x4000);
    ip[8] = 64;
    ip[9] = tcp ? 6 : 17;
    s32(ip + 12, 0x0a000101);
    s32(ip + 16, 0x0a000201);
    s16(ip + 10, ref_csum(NULL, 0, ip, 20));
    memset(l4, 0, l4h);
    s16(l4, 40000);
    s16(l4 + 2, 5201);
    if (tcp) {
        s32(l4 + 4, seq);
        s32(l4 + 8, 0x01020304);
        l4[12] = (uint8_t)((l4h / 4) << 4);
        l4[13] = tcp_flags;
        s16(l4 + 14, 502);
        const uint8_t opt[12] = {1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9};  /* NOP NOP timestamps */
        memcpy(l4 + 20, opt, 12);
    } else {
        s16(l4 + 4, 8 + payload);
    }
    for (uint32_t i = 0; i < payload; i++)
        f[34 + l4h + i] = (uint8_t)rnd();
    uint32_t co = tcp ? 16 : 6;
    if (!(!tcp && udp_zero_csum)) {
        uint16_t c = ref_l4(f, len);
        s16(l4 + co, !tcp && c == 0 ? 0xffff : c);
    }
    return len;
}

typedef struct collect {
    uint8_t buf[80][1600];
    uint32_t len[80];
    int n;
} collect;

static void grab(void *ctx, uint8_t *frame, uint32_t len)
{
    collect *c = ctx;
    if (c->n < 80 && len <= sizeof c->buf[0]) {
        memcpy(c->buf[c->n], frame, len);
        c->len[c->n] = len;
    }
    c->n++;
}

static uint8_t frames[70][1600];
static uint32_t lens[70];
static uint8_t super[70 * 1600];
static uint8_t scratch[65600];

/* Merge frames[0..n) (all must join), build the super-frame, split it, compare. */
static void roundtrip(int n, int tcp, int zero)
{
    ss_off_run r;
    CHECK(ss_off_run_begin(&r, frames[0], lens[0]) == 1);
    for (int i = 1; i < n; i++)
        CHECK(ss_off_run_add(&r, frames[i], lens[i]) == 1);
    CHECK((int)r.n == n);
    uint8_t first[1600];
    memcpy(first, frames[0], lens[0]);
    ss_vnet_hdr vh;
    ss_off_run_finish(&r, first, &vh);
    uint32_t sl = lens[0];
    memcpy(super, first, lens[0]);
    for (int i = 1; i < n; i++) {
        memcpy(super + sl, frames[i] + r.hdr_len, lens[i] - r.hdr_len);
        sl += lens[i] - r.hdr_len;
    }
    CHECK(g16(super + 16) == sl - 14);
    CHECK(ip_ok(super));
    CHECK(vh.gso_type == (tcp ? SS_VNET_GSO_TCPV4 : SS_VNET_GSO_UDP_L4) && vh.gso_size == r.seg);
    uint8_t raw[SS_VNET_HDR_LEN];
    ss_vnet_hdr back;
    ss_vnet_store(&vh, raw);
    ss_vnet_load(&back, raw);
    CHECK(memcmp(&back, &vh, sizeof vh) == 0);
    collect *c = calloc(1, sizeof *c);
    CHECK(ss_off_split(&vh, super, sl, scratch, sizeof scratch, grab, c) == n);
    CHECK(c->n == n);
    uint16_t id0 = g16(frames[0] + 18);
    for (int i = 0; i < n && i < c->n; i++) {
        const uint8_t *a = frames[i], *b = c->buf[i];
        CHECK(c->len[i] == lens[i]);
        CHECK(ip_ok(b) && l4_ok(b, c->len[i]));
        CHECK(g16(b + 18) == (uint16_t)(id0 + i));  /* IDs count up from the first's */
        uint32_t csum_at = tcp ? 50 : 40;
        int same = 1;
        for (uint32_t k = 0; k < lens[i] && k < c->len[i]; k++) {
            if (k == 18 || k == 19 || k == 24 || k == 25)
                continue;
            if (!tcp && zero && (k == csum_at || k == csum_at + 1))
                continue;
            if (a[k] != b[k])
                same = 0;
        }
        CHECK(same);
    }
    free(c);
}

static void test_checksums(void)
{
    uint8_t buf[3001];
    for (int t = 0; t < 200; t++) {
        uint32_t payload = rnd() % 1400 + 1;
        int tcp = (int)(rnd() & 1);
        uint32_t len = make(buf, tcp, payload, (uint16_t)rnd(), rnd(), 0x10, 0);
        CHECK(l4_ok(buf, len) && ip_ok(buf));
        ss_off_run r;
        CHECK(ss_off_run_begin(&r, buf, len) == 1);  /* its checksum verifies */
        buf[len - 1] ^= 0x40;
        CHECK(ss_off_run_begin(&r, buf, len) == 0);  /* a wrong one does not */
    }
}

static void test_udp_runs(void)
{
    for (int zero = 0; zero < 2; zero++) {
        int n = 40;
        for (int i = 0; i < n; i++)
            lens[i] = make(frames[i], 0, i == n - 1 ? 300 : 1100, (uint16_t)rnd(), 0, 0, zero);
        roundtrip(n, 0, zero);
    }
    /* a single odd-length tail */
    for (int i = 0; i < 3; i++)
        lens[i] = make(frames[i], 0, i == 2 ? 7 : 1001, (uint16_t)(65534 + i), 0, 0, 0);
    roundtrip(3, 0, 0);
}

static void test_tcp_runs(void)
{
    uint32_t seq = 0xfffff000u;  /* wraps */
    int n = 30;
    for (int i = 0; i < n; i++) {
        uint32_t p = i == n - 1 ? 500 : 1448;
        lens[i] = make(frames[i], 1, p, (uint16_t)(100 + i), seq, i == n - 1 ? 0x18 : 0x10, 0);
        seq += p;
    }
    roundtrip(n, 1, 0);
}

static void test_refusals(void)
{
    ss_off_run r;
    uint8_t f[1600];
    uint32_t len;
    /* no DF */
    len = make(f, 0, 100, 1, 0, 0, 1);
    s16(f + 20, 0);
    s16(f + 24, 0);
    s16(f + 24, ref_csum(NULL, 0, f + 14, 20));
    CHECK(ss_off_run_begin(&r, f, len) == 0);
    /* TCP SYN, FIN, URG */
    CHECK(ss_off_run_begin(&r, frames[0], make(frames[0], 1, 100, 1, 5, 0x12, 0)) == 0);
    CHECK(ss_off_run_begin(&r, frames[0], make(frames[0], 1, 100, 1, 5, 0x11, 0)) == 0);
    CHECK(ss_off_run_begin(&r, frames[0], make(frames[0], 1, 100, 1, 5, 0x30, 0)) == 0);
    /* TCP without payload (a pure ACK) */
    CHECK(ss_off_run_begin(&r, frames[0], make(frames[0], 1, 0, 1, 5, 0x10, 0)) == 0);
    /* a PSH first frame starts a run that nothing joins */
    lens[0] = make(frames[0], 1, 100, 1, 5, 0x18, 0);
    lens[1] = make(frames[1], 1, 100, 2, 105, 0x10, 0);
    CHECK(ss_off_run_begin(&r, frames[0], lens[0]) == 1);
    CHECK(ss_off_run_add(&r, frames[1], lens[1]) == 0);
    /* a sequence gap, a longer frame, other ports, a wrong checksum, after a short frame */
    lens[0] = make(frames[0], 1, 100, 1, 5, 0x10, 0);
    CHECK(ss_off_run_begin(&r, frames[0], lens[0]) == 1);
    CHECK(ss_off_run_add(&r, frames[1], make(frames[1], 1, 100, 2, 106, 0x10, 0)) == 0);
    CHECK(ss_off_run_add(&r, frames[1], make(frames[1], 1, 101, 2, 105, 0x10, 0)) == 0);
    lens[1] = make(frames[1], 1, 100, 2, 105, 0x10, 0);
    frames[1][35] ^= 1;
    CHECK(ss_off_run_add(&r, frames[1], lens[1]) == 0);
    frames[1][35] ^= 1;
    frames[1][lens[1] - 1] ^= 1;
    CHECK(ss_off_run_add(&r, frames[1], lens[1]) == 0);
    frames[1][lens[1] - 1] ^= 1;
    lens[1] = make(frames[1], 1, 60, 2, 105, 0x10, 0);
    CHECK(ss_off_run_add(&r, frames[1], lens[1]) == 1);
    CHECK(ss_off_run_add(&r, frames[2], make(frames[2], 1, 60, 3, 165, 0x10, 0)) == 0);
    /* at most SS_OFF_MAX_SEGS frames, and 65535 bytes of IPv4 */
    lens[0] = make(frames[0], 0, 200, 1, 0, 0, 1);
    CHECK(ss_off_run_begin(&r, frames[0], lens[0]) == 1);
    int added = 0;
    for (int i = 1; i < 70; i++)
        added += ss_off_run_add(&r, frames[0], lens[0]);  /* the same frame again: same flow */
    CHECK(added == (int)SS_OFF_MAX_SEGS - 1);
    lens[0] = make(frames[0], 0, 1472, 1, 0, 0, 1);
    CHECK(ss_off_run_begin(&r, frames[0], lens[0]) == 1);
    added = 0;
    for (int i = 1; i < 70; i++)
        added += ss_off_run_add(&r, frames[0], lens[0]);
    CHECK(added == 65535 / 1480 - 1);
    /* a wrong IPv4 header checksum (segmentation would write a right one) */
    len = make(f, 0, 100, 1, 0, 0, 1);
    f[24] ^= 0x10;
    CHECK(ss_off_run_begin(&r, f, len) == 0);
    /* a TCP checksum of -0 (0xffff) where segmentation would write +0 (0x0000) */
    len = make(f, 1, 64, 1, 5, 0x10, 0);
    s16(f + 50, 0);
    uint32_t w = g16(f + 66) + ref_l4(f, len);  /* the sum becomes 0xffff: checksum +0 */
    s16(f + 66, (w & 0xffff) + (w >> 16));
    CHECK(ref_l4(f, len) == 0);
    CHECK(ss_off_run_begin(&r, f, len) == 1);   /* +0 merges */
    s16(f + 50, 0xffff);
    CHECK(l4_ok(f, len));                        /* -0 is a valid checksum too */
    CHECK(ss_off_run_begin(&r, f, len) == 0);   /* but does not merge */
    /* not IPv4, IPv4 options, a fragment */
    len = make(f, 0, 100, 1, 0, 0, 1);
    f[12] = 0x86;
    f[13] = 0xdd;
    CHECK(ss_off_run_begin(&r, f, len) == 0);
    len = make(f, 0, 100, 1, 0, 0, 1);
    f[14] = 0x46;
    CHECK(ss_off_run_begin(&r, f, len) == 0);
    CHECK(ss_off_run_begin(&r, f, 20) == 0);
}

static void test_split_partial_and_refusals(void)
{
    uint8_t f[1600];
    collect *c = calloc(1, sizeof *c);
    /* a UDP frame with a partial checksum (the pseudo-header's sum), completed in place */
    uint32_t len = make(f, 0, 333, 9, 0, 0, 0);
    uint16_t want = g16(f + 40);
    uint8_t ps[12];
    memcpy(ps, f + 26, 8);
    ps[8] = 0;
    ps[9] = 17;
    s16(ps + 10, len - 34);
    uint16_t partial = (uint16_t)~ref_csum(ps, 12, NULL, 0);
    s16(f + 40, partial);
    ss_vnet_hdr vh = {SS_VNET_F_NEEDS_CSUM, SS_VNET_GSO_NONE, 42, 0, 34, 6};
    CHECK(ss_off_split(&vh, f, len, scratch, sizeof scratch, grab, c) == 1);
    CHECK(c->n == 1 && g16(c->buf[0] + 40) == want);
    /* a UDP segment whose checksum computes to zero carries 0xffff (zero means "none") */
    len = make(f, 0, 64, 9, 0, 0, 1);
    uint32_t w = g16(f + 42) + ref_l4(f, len);  /* raises the sum to 0xffff: complement 0 */
    s16(f + 42, (w & 0xffff) + (w >> 16));
    CHECK(ref_l4(f, len) == 0);
    ss_vnet_hdr uso = {SS_VNET_F_NEEDS_CSUM, SS_VNET_GSO_UDP_L4, 42, 64, 34, 6};
    c->n = 0;
    CHECK(ss_off_split(&uso, f, len, scratch, sizeof scratch, grab, c) == 1);
    CHECK(c->n == 1 && g16(c->buf[0] + 40) == 0xffff && l4_ok(c->buf[0], len));
    /* refusals: unknown GSO type, TCP GSO over UDP, no payload, csum offsets past the end,
     * scratch too small, truncated headers */
    len = make(f, 0, 1400, 9, 0, 0, 0);
    ss_vnet_hdr bad[] = {
        {1, 3, 42, 100, 34, 6},
        {1, SS_VNET_GSO_TCPV4, 42, 100, 34, 16},
        {1, SS_VNET_GSO_UDP_L4, 42, 0, 34, 6},
        {1, SS_VNET_GSO_NONE, 0, 0, (uint16_t)len, 6},
        {1, SS_VNET_GSO_NONE, 0, 0, 34, (uint16_t)(len - 35)},
    };
    c->n = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(ss_off_split(&bad[i], f, len, scratch, sizeof scratch, grab, c) == -1);
    ss_vnet_hdr ok = {1, SS_VNET_GSO_UDP_L4, 42, 100, 34, 6};
    CHECK(ss_off_split(&ok, f, len, scratch, 141, grab, c) == -1);  /* scratch < one segment */
    CHECK(ss_off_split(&ok, f, 42, scratch, sizeof scratch, grab, c) == -1);  /* no payload */
    CHECK(ss_off_split(&ok, f, 30, scratch, sizeof scratch, grab, c) == -1);
    CHECK(c->n == 0);
    CHECK(ss_off_split(&ok, f, len, scratch, sizeof scratch, grab, c) == 14);
    for (int i = 0; i < 14; i++)
        CHECK(c->len[i] == 142u && l4_ok(c->buf[i], c->len[i]) && ip_ok(c->buf[i]));
    free(c);
}

/* Random headers and bytes: no crash, no out-of-bounds read (ASan), and every frame handed out
 * lies within the scratch bound. */
static uint32_t fuzz_max;
static void fuzz_grab(void *ctx, uint8_t *frame, uint32_t len)
{
    (void)ctx;
    (void)frame;
    if (len > fuzz_max)
        fuzz_max = len;
}

static void test_fuzz(void)
{
    for (int t = 0; t < 200000; t++) {
        uint32_t len = rnd() % 300;
        uint8_t *f = malloc(len ? len : 1);
        uint32_t base = len >= 74 ? make(frames[0], (int)(rnd() & 1), len - 74 + 10, 1, 1, 0x10, 0) : 0;
        for (uint32_t i = 0; i < len; i++)
            f[i] = i < base && (rnd() % 16) ? frames[0][i] : (uint8_t)rnd();
        ss_vnet_hdr vh = {(uint8_t)(rnd() & 3), (uint8_t)(rnd() % 8), (uint16_t)(rnd() % 100),
                          (uint16_t)(rnd() % 200), (uint16_t)(rnd() % 320), (uint16_t)(rnd() % 40)};
        uint32_t cap = rnd() % 400;
        uint8_t *s = malloc(cap ? cap : 1);
        fuzz_max = 0;
        (void)ss_off_split(&vh, f, len, s, cap, fuzz_grab, NULL);
        CHECK(fuzz_max <= (vh.gso_type ? cap : len));
        ss_off_run r;
        if (ss_off_run_begin(&r, f, len))
            (void)ss_off_run_add(&r, f, len);
        free(s);
        free(f);
    }
}

int main(void)
{
    test_checksums();
    test_udp_runs();
    test_tcp_runs();
    test_refusals();
    test_split_partial_and_refusals();
    test_fuzz();
    if (failures) {
        fprintf(stderr, "test_offload: %d failures\n", failures);
        return 1;
    }
    printf("test_offload: ok\n");
    return 0;
}
