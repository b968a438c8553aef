// Parser select on one field with a default; headers that are not extracted stay invalid and
// their bytes stay in the payload, which follows the emitted headers unchanged.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header a_t {
    bit<16> v;
}

header b_t {
    bit<32> v;
}

struct headers_t {
    ethernet_t eth;
    a_t        a;
    b_t        b;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            16w0x0800: parse_a;
            16w0x86dd: parse_b;
            default: accept;
        }
    }
    state parse_a {
        pkt.extract(hdr.a);
        transition accept;
    }
    state parse_b {
        pkt.extract(hdr.b);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.a.isValid()) {
            hdr.a.v = hdr.a.v + 16w1;
            sm.egress_spec = 9w1;
        } else if (hdr.b.isValid()) {
            hdr.b.v = ~hdr.b.v;
            sm.egress_spec = 9w2;
        } else {
            sm.egress_spec = 9w3;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
