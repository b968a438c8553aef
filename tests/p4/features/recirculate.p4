// recirculate_preserving_field_list in egress: the deparsed packet (with all changes of the
// first pass) is parsed and goes through ingress again with instance_type RECIRC (4 in bmv2);
// @field_list(1) metadata set in egress survives.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8> cnt;
    bit<8> itype;
    bit<8> token;
}

struct headers_t {
    ethernet_t eth;
    data_t     d;
}

struct meta_t {
    @field_list(1)
    bit<8> token;
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
        hdr.d.cnt = hdr.d.cnt + 8w1;
        hdr.d.itype = (bit<8>)sm.instance_type;
        hdr.d.token = meta.token;
        sm.egress_spec = 9w1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.d.cnt == 8w1) {
            meta.token = 8w0x77;
            recirculate_preserving_field_list(8w1);
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.d);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
