// A select with no matching case and no default. The P4-16 spec (v1.2.4 section 12.6, select
// expressions) says the parser rejects with error.NoMatch; bmv2 as p4c-bm2-ss drives it does
// not: p4c's bmv2 mid end has no HandleNoMatch pass, so the JSON state has no default
// transition, and bmv2's ParseState::find_next_state then returns the missing default (null),
// which ends the parse like accept, parser_error NoError (as for an explicit `transition
// reject`). The switch does what bmv2 does: ingress sees NoError, the header extracted in the
// state stays valid, and the bytes after it are payload.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header t_t {
    bit<8> kind;
    bit<8> status;
}

header x_t {
    bit<8> x;
}

struct headers_t {
    ethernet_t eth;
    t_t        t;
    x_t        x;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.t);
        transition select(hdr.t.kind) {
            8w1: parse_x;
            8w2: accept;
        }
    }
    state parse_x {
        pkt.extract(hdr.x);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.NoMatch) {
            hdr.t.status = 8w0xee;
            sm.egress_spec = 9w2;
        } else {
            hdr.t.status = 8w0x01;
            if (hdr.x.isValid()) {
                hdr.x.x = hdr.x.x + 8w1;
            }
            sm.egress_spec = 9w1;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.t);
        pkt.emit(hdr.x);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
