// Action profiles and action selectors (v1model `implementation = action_profile(N)` /
// `action_selector(algo, N, W)`): entries of such a table refer to a member (an action and its
// arguments, shared by the tables of the profile) or, with a selector, to a group of members of
// which the hash of the `selector` keys picks one. The STF file checks what needs no control
// plane (misses run the default action; selector keys are not matched); tests/test_action_profiles.py
// writes members and groups through the switch API and P4Runtime.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8>  which;  // 0: table t_ap (action profile), else t_sel (action selector)
    bit<8>  k;
    bit<16> f1;     // selector keys of t_sel
    bit<16> f2;
    bit<8>  res;    // written by the actions
    bit<8>  hit;    // 1 when the table applied hit
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
    action set_out(bit<8> v, bit<9> port) {
        hdr.d.res = v;
        sm.egress_spec = port;
    }
    action miss() {
        hdr.d.res = 0xee;
        sm.egress_spec = 3;
    }
    action_profile(32w8) ap;
    action_selector(HashAlgorithm.crc16, 32w16, 32w14) sel;
    table t_ap {
        key = {
            hdr.d.k : exact;
        }
        actions = {
            set_out;
            miss;
        }
        default_action = miss();
        implementation = ap;
    }
    table t_sel {
        key = {
            hdr.d.k  : exact;
            hdr.d.f1 : selector;
            hdr.d.f2 : selector;
        }
        actions = {
            set_out;
            miss;
        }
        default_action = miss();
        implementation = sel;
    }
    apply {
        if (hdr.d.which == 0) {
            if (t_ap.apply().hit) {
                hdr.d.hit = 1;
            }
        } else {
            if (t_sel.apply().hit) {
                hdr.d.hit = 1;
            }
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
