// A table applied inside && / || / ?: runs only when the operator evaluates that operand
// (P4-16 8.5: short-circuit), and its hit result feeds the expression.
// Not portable: t is applied up to three times on one path; p4c-bm2-ss applies a table at most
// once per path (the .stf's `# options: allow-nonportable` line).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8> op;
    bit<8> k;
    bit<8> runs;   // how many times t's action ran (one bit per operator)
    bit<8> res;    // results: bit 0 &&, bit 1 ||, bit 2 ?:
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
    action mark() { hdr.d.runs = hdr.d.runs + 1; }
    table t {
        key = { hdr.d.k : exact; }
        actions = { mark; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 9w1;
        hdr.d.runs = 0;
        hdr.d.res = 0;
        // op bit 0: left operand of && ; op bit 1: left operand of || ; op bit 2: condition of ?:
        if (hdr.d.op[0:0] == 1 && t.apply().hit) {
            hdr.d.res = hdr.d.res | 8w1;
        }
        if (hdr.d.op[1:1] == 1 || t.apply().hit) {
            hdr.d.res = hdr.d.res | 8w2;
        }
        bit<8> r = hdr.d.op[2:2] == 1 ? (t.apply().hit ? 8w4 : 8w0) : 8w0;
        hdr.d.res = hdr.d.res | r;
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

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser())
main;
