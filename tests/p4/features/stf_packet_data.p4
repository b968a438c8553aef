// STF `packet` data the way p4c's bmv2stf sends it (HexToByte): an empty `packet` line is a
// 0-byte packet, and a lone last hex digit d is the byte 0x0d. One 8-bit header: a packet that
// has it leaves on port 1 with the byte incremented; one too short for it (PacketTooShort:
// v1model continues into ingress with the header invalid) leaves on port 2 carrying 0xEE.
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
        if (hdr.h.isValid()) {
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
