// int<W> two's-complement arithmetic: + and - wrap, unary minus (including -(-128)),
// sign extension to int<16>, and signed comparison.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    int<8>  a;
    int<8>  b;
    int<8>  sum;
    int<8>  diff;
    int<8>  neg;
    int<16> wide;
    bit<8>  a_lt_b;
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
        hdr.d.sum  = hdr.d.a + hdr.d.b;
        hdr.d.diff = hdr.d.a - hdr.d.b;
        hdr.d.neg  = -hdr.d.a;
        hdr.d.wide = (int<16>)hdr.d.a;
        if (hdr.d.a < hdr.d.b) {
            hdr.d.a_lt_b = 8w1;
        } else {
            hdr.d.a_lt_b = 8w0;
        }
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
