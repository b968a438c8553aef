// Parser value sets written at run time (tests/test_value_set.py, tests/test_p4runtime.py).
//
// etypes: value_set<bit<16>>, the whole key of a select (the P4Runtime spec's TRILL example).
// pairs:  value_set of a struct with an exact and a ternary field, the key a tuple of two fields.
// wides:  value_set<bit<72>> as one element of a tuple keyset (a key wider than 64 bits).
//
// A frame whose etherType is in etypes gets its tag header parsed, and ingress writes what the
// parser saw into tag.res (1: tag parsed, | 2: (a, b) in pairs, | 4: w in wides and a == 0x77)
// and sends it to port 1; any other frame goes to port 2 unchanged.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header tag_t {
    bit<8>  a;
    bit<16> b;
    bit<72> w;
    bit<8>  res;
}

struct headers_t {
    ethernet_t eth;
    tag_t      tag;
}

struct pair_t {
    bit<8> a;
    @match(ternary) bit<16> b;
}

struct meta_t {
    bit<8> flags;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    value_set<bit<16>>(4) etypes;
    value_set<pair_t>(2) pairs;
    value_set<bit<72>>(2) wides;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            etypes: parse_tag;
            default: accept;
        }
    }
    state parse_tag {
        pkt.extract(hdr.tag);
        meta.flags = 1;
        transition select(hdr.tag.a, hdr.tag.b) {
            pairs: in_pairs;
            default: check_wide;
        }
    }
    state in_pairs {
        meta.flags = meta.flags | 2;
        transition check_wide;
    }
    state check_wide {
        transition select(hdr.tag.w, hdr.tag.a) {
            (wides, 8w0x77): in_wides;
            default: accept;
        }
    }
    state in_wides {
        meta.flags = meta.flags | 4;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.tag.isValid()) {
            hdr.tag.res = meta.flags;
            sm.egress_spec = 9w1;
        } else {
            sm.egress_spec = 9w2;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.tag);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
