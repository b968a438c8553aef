// Slices, concatenation, casts and signed arithmetic on values wider than 64 bits: bit<128>,
// int<72> and an unaligned bit<68> field (P4-16 spec: "Operations on fixed-width bit types",
// "Operations on fixed-width signed integers", "Concatenation", "Bit-slices" and "Casts").
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header in_t {
    bit<128> a;
    int<72>  s;
    bit<4>   n4;
    bit<68>  u68;     // starts 4 bits into a byte
}

header out_t {
    bit<64>  lo64;    // a[63:0]
    bit<32>  mid;     // a[95:64]
    bit<16>  cross;   // a[71:56]  (both limbs)
    bit<80>  hi80;    // a[127:48] (a wide slice)
    bit<136> cat;     // a ++ 8w0xab
    bit<72>  cat2;    // a[63:0] ++ 8w0xcd (narrow operands, wide result)
    bit<32>  trunc;   // (bit<32>)a
    bit<128> zext;    // (bit<128>)a[63:0]
    bit<128> sx;      // (bit<128>)((int<128>)s)
    bit<72>  s_shr;   // (bit<72>)(s >> 4)
    bit<72>  s_neg;   // (bit<72>)(-s)
    bit<128> wset;    // a, then [99:36] = 64w0xffff_0000_ffff_0000
    bit<8>   flags;   // 0x80 s < 0, 0x40 s > 5, 0x20 s >= -5, 0x10 s < 100, 0x08 (int<72>)a[71:0] < s
    bit<4>   pad;
    bit<68>  u68_inc; // u68 + 1 (wraps at 68 bits)
    bit<128> mux;     // s < 0 ? a : ~a
    bit<128> loc;     // meta.m = a; t = meta.m >> 8; loc = t ^ (a << 8)
    bit<72>  sadd;    // (bit<72>)(s |+| (int<72>)u68), signed saturating add
}

struct headers_t {
    ethernet_t eth;
    in_t       i;
    out_t      o;
}

struct meta_t {
    bit<128> m;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.i);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<128> a = hdr.i.a;
        int<72> s = hdr.i.s;
        hdr.o.setValid();
        hdr.o.lo64 = a[63:0];
        hdr.o.mid = a[95:64];
        hdr.o.cross = a[71:56];
        hdr.o.hi80 = a[127:48];
        hdr.o.cat = a ++ 8w0xab;
        hdr.o.cat2 = a[63:0] ++ 8w0xcd;
        hdr.o.trunc = (bit<32>)a;
        hdr.o.zext = (bit<128>)a[63:0];
        hdr.o.sx = (bit<128>)((int<128>)s);
        hdr.o.s_shr = (bit<72>)(s >> 4);
        hdr.o.s_neg = (bit<72>)(-s);
        hdr.o.wset = a;
        hdr.o.wset[99:36] = 64w0xffff0000ffff0000;
        bit<8> f = 0;
        if (s < 0) { f = f | 0x80; }
        if (s > 5) { f = f | 0x40; }
        if (s >= -72s5) { f = f | 0x20; }
        if (s < 72s100) { f = f | 0x10; }
        if ((int<72>)a[71:0] < s) { f = f | 0x08; }
        hdr.o.flags = f;
        hdr.o.pad = 0;
        hdr.o.u68_inc = hdr.i.u68 + 1;
        hdr.o.mux = s < 0 ? a : ~a;
        meta.m = a;
        bit<128> t = meta.m >> 8;
        hdr.o.loc = t ^ (a << 8);
        hdr.o.sadd = (bit<72>)(s |+| (int<72>)(bit<72>)hdr.i.u68);
        sm.egress_spec = 9w1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.i);
        pkt.emit(hdr.o);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
