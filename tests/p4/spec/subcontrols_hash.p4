/* Sub-controls instantiated inside another control and applied with inout arguments, control
   constructor parameters, nested if with return in apply, @hidden/@noWarn annotations, hash over
   a list containing a header (fields of an invalid header are left out, as bmv2 does), the newer
   v1model (register<T, I>), comments in odd places and #define macros used as constants. */
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#define REG_SIZE 16
#define ADD(a, b) ((a) + (b))

header ethernet_t { bit<48> dst; bit<48> src; bit<16> /* type */ etype; }
header opt_t { bit<8> o1; bit<8> o2; }
header data_t { bit<8> k; bit<8> r1; bit<8> r2; bit<16> h; bit<32> reg; }

struct meta_t { bit<8> scratch; }
struct headers_t { ethernet_t eth; opt_t opt; data_t d; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            0x88b6: opt;   // with the option
            default: data;
        }
    }
    state opt { pkt.extract(hdr.opt); transition data; }
    state data { pkt.extract(hdr.d); transition accept; }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

// Adds its constructor parameter to v; returns early when v is already large.
control Adder(inout bit<8> v, in bit<8> limit)(bit<8> amount) {
    apply {
        if (v >= limit) {
            if (v == 0xff) {
                v = 0;
            }
            return;
        }
        v = v + amount;
    }
}

control Stage(inout data_t d, inout meta_t meta) {
    Adder(8w1) add1;
    Adder(8w16) add16;
    apply {
        add1.apply(d.r1, 8w0x80);
        add16.apply(d.r2, 8w0x80);
        add1.apply(d.r2, 8w0x80);
        meta.scratch = d.r1;
    }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Stage() stage;
    register<bit<32>, bit<4>>(REG_SIZE) acc;

    @hidden action fwd(/* port */ bit<9> p) { sm.egress_spec = p; }
    apply {
        fwd(ADD(9w1, 9w1));
        stage.apply(hdr.d, meta);
        @noWarn("unused") bit<32> old;
        acc.read(old, (bit<4>)hdr.d.k);
        acc.write((bit<4>)hdr.d.k, old + (bit<32>)meta.scratch);
        acc.read(hdr.d.reg, (bit<4>)hdr.d.k);
        // identity hash over {opt, k}: with opt invalid only k is hashed
        hash(hdr.d.h, HashAlgorithm.identity, 16w0, { hdr.opt, hdr.d.k }, 32w0x10000);
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.opt); pkt.emit(hdr.d); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
