// Shifts by a run-time amount: << and >> on bit<8> (0 once the amount reaches the width),
// arithmetic >> on int<8> (sign fill), and << on a widened value.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8>  x;
    int<8>  sx;
    bit<8>  n;
    bit<8>  shl;
    bit<8>  shr;
    int<8>  sshr;
    bit<16> wide;
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
        hdr.d.shl  = hdr.d.x << hdr.d.n;
        hdr.d.shr  = hdr.d.x >> hdr.d.n;
        hdr.d.sshr = hdr.d.sx >> hdr.d.n;
        hdr.d.wide = ((bit<16>)hdr.d.x) << 4;
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
