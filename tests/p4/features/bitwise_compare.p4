// Bitwise & | ^ ~ on bit<8>, unsigned and signed comparisons, and the ternary operator ?: .
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
    bit<8> and_r;
    bit<8> or_r;
    bit<8> xor_r;
    bit<8> not_r;
    // one bit per comparison, most significant first
    bit<1> lt;
    bit<1> le;
    bit<1> gt;
    bit<1> ge;
    bit<1> eq;
    bit<1> ne;
    bit<1> slt;   // (int<8>)a < (int<8>)b
    bit<1> pad;
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
        bit<8> a = hdr.d.a;
        bit<8> b = hdr.d.b;
        hdr.d.and_r = a & b;
        hdr.d.or_r  = a | b;
        hdr.d.xor_r = a ^ b;
        hdr.d.not_r = ~a;
        hdr.d.lt  = (a <  b) ? 1w1 : 1w0;
        hdr.d.le  = (a <= b) ? 1w1 : 1w0;
        hdr.d.gt  = (a >  b) ? 1w1 : 1w0;
        hdr.d.ge  = (a >= b) ? 1w1 : 1w0;
        hdr.d.eq  = (a == b) ? 1w1 : 1w0;
        hdr.d.ne  = (a != b) ? 1w1 : 1w0;
        hdr.d.slt = ((int<8>)a < (int<8>)b) ? 1w1 : 1w0;
        hdr.d.pad = 1w0;
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
