// Arithmetic, bitwise, shift and comparison operators on bit<128> (values wider than one
// 64-bit machine word; P4-16 spec 8.6 "Operations on fixed-width bit types (unsigned integers)":
// results wrap modulo 2^128, shifts by an amount >= 128 give 0, |+| |-| saturate at 0 and
// 2^128-1). Division and modulo of unsigned values (8.6; the divisor here is never 0).
// Not portable: a / b and a % b by a run-time divisor; p4c-bm2-ss keeps no run-time division
// (the .stf's `# options: allow-nonportable` line).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header in_t {
    bit<128> a;
    bit<128> b;
    bit<8>   sh;
}

header out_t {
    bit<128> sum;     // a + b
    bit<128> diff;    // a - b
    bit<128> prod;    // a * b
    bit<128> andv;    // a & b
    bit<128> orv;     // a | b
    bit<128> xorv;    // a ^ b
    bit<128> notv;    // ~a
    bit<128> neg;     // -a
    bit<128> shl_c;   // a << 68
    bit<128> shr_c;   // a >> 4
    bit<128> shl_r;   // a << sh
    bit<128> shr_r;   // b >> sh
    bit<128> satadd;  // a |+| b
    bit<128> satsub;  // a |-| b
    bit<128> quot;    // a / b
    bit<128> rem;     // a % b
    bit<8>   cmp;     // 0x80 a==b, 0x40 a!=b, 0x20 a<b, 0x10 a<=b, 0x08 a>b, 0x04 a>=b, 0x02 a==const
}

struct headers_t {
    ethernet_t eth;
    in_t       i;
    out_t      o;
}

struct meta_t { }

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
        bit<128> b = hdr.i.b;
        hdr.o.setValid();
        hdr.o.sum = a + b;
        hdr.o.diff = a - b;
        hdr.o.prod = a * b;
        hdr.o.andv = a & b;
        hdr.o.orv = a | b;
        hdr.o.xorv = a ^ b;
        hdr.o.notv = ~a;
        hdr.o.neg = -a;
        hdr.o.shl_c = a << 68;
        hdr.o.shr_c = a >> 4;
        hdr.o.shl_r = a << hdr.i.sh;
        hdr.o.shr_r = b >> hdr.i.sh;
        hdr.o.satadd = a |+| b;
        hdr.o.satsub = a |-| b;
        hdr.o.quot = a / b;
        hdr.o.rem = a % b;
        bit<8> f = 0;
        if (a == b) { f = f | 0x80; }
        if (a != b) { f = f | 0x40; }
        if (a < b) { f = f | 0x20; }
        if (a <= b) { f = f | 0x10; }
        if (a > b) { f = f | 0x08; }
        if (a >= b) { f = f | 0x04; }
        if (a == 128w0x0123456789abcdeffedcba9876543210) { f = f | 0x02; }
        hdr.o.cmp = f;
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
