// hash() with crc16, crc32, identity and csum16 over the same two-field tuple
// {bit<32> x, bit<16> y} (packed big-endian, 6 bytes), and the base + (H % max) formula.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<32> x;
    bit<16> y;
    bit<16> h_crc16;
    bit<32> h_crc32;
    bit<64> h_ident;
    bit<16> h_csum;
    bit<16> h_mod;
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
        hash(hdr.d.h_crc16, HashAlgorithm.crc16, 16w0, { hdr.d.x, hdr.d.y }, 32w65536);
        hash(hdr.d.h_crc32, HashAlgorithm.crc32, 32w0, { hdr.d.x, hdr.d.y }, 32w0xffffffff);
        hash(hdr.d.h_ident, HashAlgorithm.identity, 64w0, { hdr.d.x, hdr.d.y }, 64w0xffffffffffffffff);
        hash(hdr.d.h_csum, HashAlgorithm.csum16, 16w0, { hdr.d.x, hdr.d.y }, 32w65536);
        hash(hdr.d.h_mod, HashAlgorithm.crc16, 16w10, { hdr.d.x, hdr.d.y }, 32w100);
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
