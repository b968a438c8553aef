// Serializable enum (enum bit<8>) as a header field type, compared with its members and cast
// to bits; values that name no member are still carried; a plain enum in comparisons.
#include <core.p4>
#include <v1model.p4>

enum bit<8> Op_t {
    ADD = 1,
    SUB = 2,
    XOR = 0x10
}

enum Mode_t {
    FAST,
    SLOW
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    Op_t   op;
    bit<8> a;
    bit<8> b;
    bit<8> r;
    bit<8> xor_code;   // (bit<8>)Op_t.XOR
    bit<8> mode;       // 1 for FAST, 2 for SLOW
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
        if (hdr.d.op == Op_t.ADD) {
            hdr.d.r = hdr.d.a + hdr.d.b;
        } else if (hdr.d.op == Op_t.SUB) {
            hdr.d.r = hdr.d.a - hdr.d.b;
        } else if (hdr.d.op == Op_t.XOR) {
            hdr.d.r = hdr.d.a ^ hdr.d.b;
        } else {
            hdr.d.r = 8w0xee;
        }
        hdr.d.xor_code = (bit<8>)Op_t.XOR;

        Mode_t m = Mode_t.SLOW;
        if (hdr.d.a > hdr.d.b) {
            m = Mode_t.FAST;
        }
        if (m == Mode_t.FAST) {
            hdr.d.mode = 8w1;
        } else {
            hdr.d.mode = 8w2;
        }
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
