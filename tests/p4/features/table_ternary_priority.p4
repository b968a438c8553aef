// Ternary table with control-plane priorities (in STF the larger priority number wins) and a
// second key field (exact) to make a multi-field key.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8> sel;
    bit<8> k;
    bit<8> r;
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
    action set(bit<8> r, bit<9> port) {
        hdr.d.r = r;
        sm.egress_spec = port;
    }
    action miss() {
        hdr.d.r = 8w0xff;
        sm.egress_spec = 9w5;
    }
    table tern {
        key = {
            hdr.d.sel : exact;
            hdr.d.k   : ternary;
        }
        actions = {
            set;
            miss;
        }
        default_action = miss();
    }
    apply {
        tern.apply();
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
