// A packet shorter than the header being extracted: extract fails with
// error.PacketTooShort; in bmv2/v1model the packet continues into ingress with parser_error
// set, the failed header invalid and the unparsed bytes kept as payload.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header h_t {
    bit<32> v;
}

struct headers_t {
    ethernet_t eth;
    h_t        h;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.PacketTooShort) {
            hdr.eth.etype = 16w0xdead;
            sm.egress_spec = 9w2;
        } else if (hdr.h.isValid()) {
            hdr.h.v = hdr.h.v + 32w1;
            sm.egress_spec = 9w1;
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
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
