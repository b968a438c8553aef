// const entries: a range table (overlapping ranges: the entry listed first wins; _ matches
// anything), an optional-match table (optional keys are exact or wildcard), and a const
// default action with an argument.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8> k;
    bit<8> k2;
    bit<8> k3;
    bit<8> r1;
    bit<8> r2;
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
    action set_r1(bit<8> v) {
        hdr.d.r1 = v;
    }
    action set_r2(bit<8> v) {
        hdr.d.r2 = v;
    }
    table t_range {
        key = {
            hdr.d.k : range;
        }
        actions = {
            set_r1;
        }
        const entries = {
            8w0x00 .. 8w0x0f : set_r1(8w1);
            8w0x08 .. 8w0x1f : set_r1(8w2);
            8w0x30           : set_r1(8w3);
            _                : set_r1(8w4);
        }
        default_action = set_r1(8w0);
    }
    table t_opt {
        key = {
            hdr.d.k2 : optional;
            hdr.d.k3 : optional;
        }
        actions = {
            set_r2;
        }
        const entries = {
            (8w1, 8w2) : set_r2(8w0x11);
            (_,   8w2) : set_r2(8w0x22);
            (8w1, _)   : set_r2(8w0x33);
        }
        const default_action = set_r2(8w0xff);
    }
    apply {
        t_range.apply();
        t_opt.apply();
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
