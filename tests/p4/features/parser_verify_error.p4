// verify() with a user-defined error: in v1model the packet is NOT dropped; it enters ingress
// with standard_metadata.parser_error set. Headers extracted before the failure stay valid;
// later ones are not extracted and their bytes stay in the payload.
#include <core.p4>
#include <v1model.p4>

error {
    BadVersion
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header h_t {
    bit<8> version;
    bit<8> status;
}

header g_t {
    bit<8> y;
}

struct headers_t {
    ethernet_t eth;
    h_t        h;
    g_t        g;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.h);
        verify(hdr.h.version == 8w4, error.BadVersion);
        pkt.extract(hdr.g);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.BadVersion) {
            hdr.h.status = 8w0xee;
            sm.egress_spec = 9w2;
        } else if (sm.parser_error == error.NoError) {
            hdr.h.status = 8w0x01;
            hdr.g.y = hdr.g.y + 8w1;
            sm.egress_spec = 9w1;
        } else {
            hdr.h.status = 8w0xff;
            sm.egress_spec = 9w3;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.h);
        pkt.emit(hdr.g);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
