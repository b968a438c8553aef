// Expressions: casts between int/bit widths, shifts by amounts wider than the operand,
// |+| and |-| on int<W>, struct initializers, list and struct-expression assignment to headers,
// setValid() then field writes, concatenation of signed values, compile-time int arithmetic.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header in_t { bit<8> a; int<8> s; bit<8> sh; }
header out_t {
    bit<8>  shl;      // a << sh
    bit<8>  shr;      // a >> sh
    bit<8>  sar;      // (bit<8>)(s >> sh)  arithmetic
    bit<8>  satadd;   // (bit<8>)(s |+| 100)
    bit<8>  satsub;   // (bit<8>)(s |-| 100)
    bit<16> sext;     // (bit<16>)(int<16>)s
    bit<4>  trunc;    // (bit<4>)(int<4>)s   (int -> narrower int keeps the low bits)
    bit<4>  lo;       // s[3:0]
    bit<16> cat;      // s ++ a
    bit<8>  cst;      // compile-time arithmetic
}
struct pair_t { bit<8> x; bit<8> y; }
struct meta_t { pair_t p; }
header pair_hdr_t { bit<8> x; bit<8> y; }
struct headers_t { ethernet_t eth; in_t i; out_t o; pair_hdr_t ph; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.i); transition accept; }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.o.setValid();
        hdr.o.shl = hdr.i.a << hdr.i.sh;
        hdr.o.shr = hdr.i.a >> hdr.i.sh;
        hdr.o.sar = (bit<8>)(hdr.i.s >> hdr.i.sh);
        hdr.o.satadd = (bit<8>)(hdr.i.s |+| 100);
        hdr.o.satsub = (bit<8>)(hdr.i.s |-| 100);
        hdr.o.sext = (bit<16>)(int<16>)hdr.i.s;
        hdr.o.trunc = (bit<4>)(int<4>)hdr.i.s;
        hdr.o.lo = hdr.i.s[3:0];
        hdr.o.cat = (bit<16>)(hdr.i.s ++ (int<8>)hdr.i.a);
        hdr.o.cst = (bit<8>)((1 << 9) / 4 - 3 * 5);
        meta.p = { hdr.i.a, 8w0x22 };
        meta.p = { y = meta.p.y + 1, x = meta.p.x };
        hdr.ph = { meta.p.x, meta.p.y };     // list assignment makes the header valid
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.i); pkt.emit(hdr.o); pkt.emit(hdr.ph); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
