// mark_to_drop in ingress and in egress; a later egress_spec assignment overrides an ingress
// mark_to_drop; a packet whose egress_spec is never written leaves on port 0.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8> op;
    bit<8> seq;
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
        if (hdr.d.op == 8w1) {
            mark_to_drop(sm);               // dropped at the end of ingress
        } else if (hdr.d.op == 8w2) {
            mark_to_drop(sm);
            sm.egress_spec = 9w1;           // overrides the drop
        } else if (hdr.d.op == 8w4) {
            // egress_spec never written: port 0
        } else {
            sm.egress_spec = 9w1;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.d.op == 8w3) {
            mark_to_drop(sm);               // dropped at the end of egress
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.d);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
