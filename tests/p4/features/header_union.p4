// Header unions: at most one member valid; the parser extracts one member; isValid() on the
// union and on members; setValid() on one member invalidates the others; emit writes only the
// valid member.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header short_t {
    bit<16> x;
}

header long_t {
    bit<32> y;
}

header_union u_t {
    short_t s;
    long_t  l;
}

struct headers_t {
    ethernet_t eth;
    u_t        u;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            16w0xaaaa: parse_s;
            16w0xbbbb: parse_l;
            default: accept;
        }
    }
    state parse_s {
        pkt.extract(hdr.u.s);
        transition accept;
    }
    state parse_l {
        pkt.extract(hdr.u.l);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (!hdr.u.isValid()) {
            sm.egress_spec = 9w3;
        } else if (hdr.u.s.isValid()) {
            hdr.u.s.x = hdr.u.s.x + 16w1;
            sm.egress_spec = 9w1;
        } else {
            // l is valid: switch the union over to s; l becomes invalid
            hdr.u.s.setValid();
            hdr.u.s.x = 16w0x1234;
            sm.egress_spec = 9w2;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.u);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
