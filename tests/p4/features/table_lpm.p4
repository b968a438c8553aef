// LPM table: the longest matching prefix wins whatever the insertion order; a miss runs the
// program's default action with its compile-time argument.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header addr_t {
    bit<32> dst;
    bit<8>  tag;
}

struct headers_t {
    ethernet_t eth;
    addr_t     a;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.a);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action route(bit<9> port, bit<8> tag) {
        sm.egress_spec = port;
        hdr.a.tag = tag;
    }
    table lpm {
        key = {
            hdr.a.dst : lpm;
        }
        actions = {
            route;
        }
        default_action = route(9w4, 8w0xdd);
    }
    apply {
        lpm.apply();
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.a);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
