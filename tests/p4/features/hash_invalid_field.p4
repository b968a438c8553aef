// hash(), a checksum and update_checksum over field lists naming single fields of a header
// that is valid in some packets and invalid in others: bmv2 leaves out each field whose
// header is invalid (not just a whole invalid header), so the hashed bytes shrink.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header opt_t {
    bit<16> a;
}

header data_t {
    bit<16> x;
    bit<16> y;
    bit<64> h_ident;
    bit<16> h_csum;
    bit<32> ck;
}

struct headers_t {
    ethernet_t eth;
    opt_t      o;
    data_t     d;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            16w0x88b6: opt;
            default: data;
        }
    }
    state opt {
        pkt.extract(hdr.o);
        transition data;
    }
    state data {
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hash(hdr.d.h_ident, HashAlgorithm.identity, 64w0, { hdr.d.x, hdr.o.a, hdr.d.y },
             64w0xffffffffffffffff);
        hash(hdr.d.h_csum, HashAlgorithm.csum16, 16w0, { hdr.o.a, hdr.d.x }, 32w65536);
        sm.egress_spec = 9w1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(true, { hdr.o.a, hdr.d.y }, hdr.d.ck, HashAlgorithm.crc32);
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.o);
        pkt.emit(hdr.d);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
