// lookahead<T>() peeks without consuming; advance(n) skips n bits (the skipped bytes are not
// part of any header, so they disappear from the deparsed packet).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header h_t {
    bit<8> a;
    bit<8> b;
}

struct headers_t {
    ethernet_t eth;
    h_t        h;
}

struct meta_t {
    bit<8> peeked;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        meta.peeked = pkt.lookahead<bit<8>>();
        transition select(pkt.lookahead<bit<8>>()) {
            8w0xff: skip;
            default: parse_h;
        }
    }
    state skip {
        pkt.advance(32w16);   // the 0xff marker and one more byte
        transition parse_h;
    }
    state parse_h {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.b = meta.peeked;
        sm.egress_spec = 9w1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
