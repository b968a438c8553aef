// Bit slices [h:l] as r-values and as l-values, and concatenation ++ (left operand is the
// more significant part).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<16> x;
    bit<8>  y;
    bit<4>  z;
    bit<4>  w;
    bit<8>  mid;   // x[11:4] (read before x is modified)
    bit<16> cat;   // w ++ z ++ y
    bit<8>  top;   // x[15:15] ++ y[6:0]
}

struct headers_t {
    ethernet_t eth;
    data_t     d;
}

struct meta_t { }

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
        hdr.d.mid = hdr.d.x[11:4];
        hdr.d.cat = hdr.d.w ++ hdr.d.z ++ hdr.d.y;
        hdr.d.top = hdr.d.x[15:15] ++ hdr.d.y[6:0];
        hdr.d.x[15:12] = 4w0x9;   // write the top nibble only
        hdr.d.y[0:0] = 1w1;       // set the lowest bit only
        sm.egress_spec = 9w1;
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
