// Slices of signed values and slice l-values (P4-16 v1.2.4):
// - 8.7 "Operations on fixed-width signed integers": a bit-slice e[m:l] of an int<W> value is
//   a bit<m-l+1> (unsigned) holding those bits of the two's complement representation; a slice
//   of an int<W> l-value is an l-value, and writing it changes only those bits (the value then
//   reads back as a signed number again: writing 1 into bit 7 of an int<8> makes it negative).
// - 6.7 "L-values": a slice of an l-value is an l-value, also sliced again (x[7:0][5:2] is
//   x[5:2]), and as an out argument.
// - Wide values (more than 64 bits): an int<72> read and written by slices across the 64-bit
//   boundary of the native backend's representation.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header in_t {
    int<8>  a;
    int<16> b;
    int<72> w;
}
header out_t {
    bit<4>  a_hi;     // a[7:4]
    bit<4>  a_lo;     // a[3:0]
    bit<8>  b_mid;    // b[11:4]
    bit<8>  a_ss;     // a[7:0][6:3] zero-extended
    int<8>  a2;       // a with a[7:7] = 1, a[3:0] = 0xf
    int<16> b2;       // b with b[15:12] = 0 and b[7:0][3:0] = 5
    bit<16> w_mid;    // w[71:56] ++ ... : w[67:52] across the 64-bit boundary
    int<72> w2;       // w with w[71:71] = 0 and w[70:60] = 0x7ff
    bit<8>  neg;      // (bit<8>)(-a)[7:0]
}

struct meta_t { }
struct headers_t { ethernet_t eth; in_t i; out_t o; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.i);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_nibble(out bit<4> n) {
        n = 4w5;
    }
    apply {
        sm.egress_spec = 1;
        hdr.o.setValid();
        int<8> a = hdr.i.a;
        hdr.o.a_hi = a[7:4];
        hdr.o.a_lo = a[3:0];
        hdr.o.b_mid = hdr.i.b[11:4];
        hdr.o.a_ss = (bit<8>)a[7:0][6:3];
        a[7:7] = 1w1;
        a[3:0] = 4w0xf;
        hdr.o.a2 = a;
        int<16> b = hdr.i.b;
        b[15:12] = 4w0;
        set_nibble(b[7:0][3:0]);
        hdr.o.b2 = b;
        hdr.o.w_mid = hdr.i.w[67:52];
        int<72> w = hdr.i.w;
        w[71:71] = 1w0;
        w[70:60] = 11w0x7ff;
        hdr.o.w2 = w;
        hdr.o.neg = (-hdr.i.a)[7:0];
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
