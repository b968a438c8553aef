// STF conventions of p4c's bmv2stf: `packet` data as HexToByte reads it (an empty `packet` line
// is a 0-byte packet, a lone last hex digit d is the byte 0x0d), and a bare `expect <port>`
// (no data) leaves that port unchecked: any number of packets, none included (expectedAny).
// One 8-bit header: a byte >= 0xF0 leaves unchanged on port 3; a smaller one leaves on port 1
// incremented; a packet too short for the header (PacketTooShort: v1model continues into
// ingress with the header invalid) leaves on port 2 carrying 0xEE.
#include <core.p4>
#include <v1model.p4>

header byte_t {
    bit<8> b;
}

struct headers_t {
    byte_t h;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.isValid() && hdr.h.b >= 0xF0) {
            sm.egress_spec = 3;
        } else if (hdr.h.isValid()) {
            hdr.h.b = hdr.h.b + 1;
            sm.egress_spec = 1;
        } else {
            hdr.h.setValid();
            hdr.h.b = 0xEE;
            sm.egress_spec = 2;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
