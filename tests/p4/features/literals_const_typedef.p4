// Literals (width-prefixed 8w255, negated signed literals -4s1 / -8s100, hex, binary, octal,
// underscores),
// constants, typedefs, and compile-time arithmetic that wraps at the declared width.
#include <core.p4>
#include <v1model.p4>

typedef bit<8>  byte_t;
typedef bit<16> word_t;

const byte_t K_MAX   = 8w255;
const bit<4> K_NIB   = 4w0b1010;
const word_t K_WORD  = 16w0xBE_EF;
const byte_t K_OCT   = 8w0o17;
const int<8> K_NEG   = -8s100;
const bit<9> OUT_PORT = 9w1;

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    byte_t o_max;    // 8w255
    byte_t o_nib;    // 4w0b1010 ++ (bit<4>)(-4s1)
    word_t o_word;   // 16w0xBE_EF
    byte_t o_oct;    // 8w0o17
    byte_t o_neg;    // (bit<8>)(-8s100)
    byte_t o_fold;   // 8w3 * 8w100 folds to 300 mod 256
    byte_t o_dec;    // 42 (untyped decimal literal assigned to bit<8>)
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
        hdr.d.o_max  = K_MAX;
        hdr.d.o_nib  = K_NIB ++ (bit<4>)(-4s1);
        hdr.d.o_word = K_WORD;
        hdr.d.o_oct  = K_OCT;
        hdr.d.o_neg  = (bit<8>)K_NEG;
        hdr.d.o_fold = 8w3 * 8w100;
        hdr.d.o_dec  = 42;
        sm.egress_spec = OUT_PORT;
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
