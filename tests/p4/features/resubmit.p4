// resubmit_preserving_field_list: ingress runs again on the ORIGINAL packet (ingress changes of
// the first pass are lost) with instance_type RESUBMIT (6 in bmv2); only user metadata fields
// annotated @field_list(1) keep their first-pass values, others are reset to 0.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8> mark;
    bit<8> itype;
    bit<8> kept;
    bit<8> lost;
}

struct headers_t {
    ethernet_t eth;
    data_t     d;
}

struct meta_t {
    @field_list(1)
    bit<8> kept;
    bit<8> lost;
}

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
    apply {
        if (sm.instance_type == 32w0) {
            meta.kept = 8w0x5a;
            meta.lost = 8w0xa5;
            hdr.d.mark = 8w0xff;          // must not survive the resubmit
            resubmit_preserving_field_list(8w1);
        } else {
            hdr.d.itype = (bit<8>)sm.instance_type;
            hdr.d.kept = meta.kept;
            hdr.d.lost = meta.lost;
            sm.egress_spec = 9w1;
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
