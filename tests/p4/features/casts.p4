// Casts: bit<8> -> bit<16> (zero extension), bit<16> -> bit<8> (truncation), int<8> -> bit<8>
// (same bits), int<8> -> int<16> (sign extension), bool -> bit<1>, bit<1> -> bool,
// bit<8> -> int<8> (same bits, then signed arithmetic).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8>  b8;
    bit<16> b16;
    int<8>  s8;
    bit<1>  flag;
    bit<7>  pad;
    bit<16> widen;     // (bit<16>)b8
    bit<8>  narrow;    // (bit<8>)b16
    bit<8>  s2u;       // (bit<8>)s8
    bit<16> sext;      // (bit<16>)(int<16>)s8
    bit<8>  boolbit;   // (bit<8>)(bit<1>)(b8 == 0x81)
    bit<8>  fromflag;  // 0xaa if (bool)flag else 0x55
    bit<8>  half;      // (bit<8>)((int<8>)b8 >> 1)
}

struct headers_t {
    ethernet_t eth;
    data_t     d;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.d.widen   = (bit<16>)hdr.d.b8;
        hdr.d.narrow  = (bit<8>)hdr.d.b16;
        hdr.d.s2u     = (bit<8>)hdr.d.s8;
        hdr.d.sext    = (bit<16>)((int<16>)hdr.d.s8);
        hdr.d.boolbit = (bit<8>)((bit<1>)(hdr.d.b8 == 8w0x81));
        if ((bool)hdr.d.flag) {
            hdr.d.fromflag = 8w0xaa;
        } else {
            hdr.d.fromflag = 8w0x55;
        }
        hdr.d.half = (bit<8>)(((int<8>)hdr.d.b8) >> 1);
        sm.egress_spec = 9w1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.d);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
