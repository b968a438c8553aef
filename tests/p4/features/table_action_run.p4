// switch (t.apply().action_run) with per-action cases and default; a keyless table that only
// runs its default action; changing that default action from the control plane (setdefault).
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
    bit<8> tag;
    bit<8> kl;
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
    action a1() {
        sm.egress_spec = 9w1;
    }
    action a2(bit<8> v) {
        hdr.d.v = v;
        sm.egress_spec = 9w2;
    }
    action set_kl(bit<8> v) {
        hdr.d.kl = v;
    }
    table t {
        key = {
            hdr.d.k : exact;
        }
        actions = {
            a1;
            a2;
            NoAction;
        }
        default_action = NoAction();
    }
    table t_keyless {
        actions = {
            set_kl;
        }
        default_action = set_kl(8w0x5a);
    }
    apply {
        switch (t.apply().action_run) {
            a1: {
                hdr.d.tag = 8w0xa1;
            }
            a2: {
                hdr.d.tag = 8w0xa2;
            }
            default: {
                hdr.d.tag = 8w0x00;
                sm.egress_spec = 9w3;
            }
        }
        t_keyless.apply();
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
