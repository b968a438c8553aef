// Saturating arithmetic |+| and |-| on bit<8> (clamps to 0..255) and int<8> (clamps to -128..127).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8> a;
    bit<8> b;
    int<8> sa;
    int<8> sb;
    bit<8> usum;
    bit<8> udiff;
    int<8> ssum;
    int<8> sdiff;
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
        hdr.d.usum  = hdr.d.a |+| hdr.d.b;
        hdr.d.udiff = hdr.d.a |-| hdr.d.b;
        hdr.d.ssum  = hdr.d.sa |+| hdr.d.sb;
        hdr.d.sdiff = hdr.d.sa |-| hdr.d.sb;
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
