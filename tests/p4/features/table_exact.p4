// Exact-match table with actions that take control-plane (directionless) parameters;
// apply().hit; a miss runs the default NoAction, leaving egress_spec at 0 (port 0).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8> k;
    bit<8> v;
    bit<8> hit;
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
    action set_port(bit<9> port) {
        sm.egress_spec = port;
    }
    action set_val(bit<8> v, bit<9> port) {
        hdr.d.v = v;
        sm.egress_spec = port;
    }
    table t {
        key = {
            hdr.d.k : exact;
        }
        actions = {
            set_port;
            set_val;
            NoAction;
        }
        default_action = NoAction();
        size = 16;
    }
    apply {
        if (t.apply().hit) {
            hdr.d.hit = 8w1;
        } else {
            hdr.d.hit = 8w0;
        }
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
