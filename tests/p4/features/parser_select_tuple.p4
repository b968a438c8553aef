// select on a tuple of two fields with exact values, masks (&&&), ranges (..), the
// don't-care _ and default; the first matching case wins. Parser states assign metadata.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header key_t {
    bit<8> k1;
    bit<8> k2;
    bit<8> path;
}

struct headers_t {
    ethernet_t eth;
    key_t      k;
}

struct meta_t {
    bit<8> path;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.k);
        meta.path = 8w0;
        transition select(hdr.k.k1, hdr.k.k2) {
            (8w1, 8w2): s_exact;
            (8w0x20 &&& 8w0xf8, _): s_mask;
            (8w0x20 .. 8w0x2f, 8w0x00 .. 8w0x0f): s_range;
            default: accept;
        }
    }
    state s_exact {
        meta.path = 8w1;
        transition accept;
    }
    state s_mask {
        meta.path = 8w2;
        transition accept;
    }
    state s_range {
        meta.path = 8w3;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.k.path = meta.path;
        sm.egress_spec = 9w1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.k);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
