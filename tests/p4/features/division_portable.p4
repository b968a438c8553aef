// The / and % that p4c-bm2-ss (v1model) accepts, run as P4-16 v1.2.4 section 8.6 defines them on
// bit<W> (unsigned): its mid end folds constants and turns a division or modulo by a power of
// two into a shift or a mask (1 included) and 0 / y into 0; any other / or % of a run-time value
// is refused (see p4compiler/python_backend/portability.py), so this is what stays portable.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header d_t {
    bit<8>  x;
    bit<8>  y;
    bit<16> w;
    bit<8>  q4;    // x / 4
    bit<8>  r8;    // x % 8
    bit<8>  q1;    // x / 1
    bit<8>  r1;    // x % 1
    bit<8>  zq;    // 0 / y
    bit<8>  q128;  // x / 128
    bit<16> w256;  // w / 256
    bit<16> wr;    // w % 1024
    bit<8>  cq;    // 200 / 7 (constants)
    bit<8>  cr;    // 200 % 7 (constants)
}

struct headers_t {
    ethernet_t eth;
    d_t        d;
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
    const bit<8> EIGHT = 8;
    apply {
        hdr.d.q4   = hdr.d.x / 4;
        hdr.d.r8   = hdr.d.x % EIGHT;
        hdr.d.q1   = hdr.d.x / 1;
        hdr.d.r1   = hdr.d.x % 1;
        hdr.d.zq   = 0 / hdr.d.y;
        hdr.d.q128 = hdr.d.x / 8w128;
        hdr.d.w256 = hdr.d.w / 256;
        hdr.d.wr   = hdr.d.w;
        hdr.d.wr   %= 1024;
        hdr.d.cq   = 8w200 / 8w7;
        hdr.d.cr   = 8w200 % 8w7;
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
