// When l-values are evaluated (P4-16 spec):
// - Assignment statement (12.1): the left-hand side is evaluated to an l-value first, then the
//   right-hand side, then the value is copied into the l-value; a stack index on the left is
//   read before a function call on the right changes it (op 1).
// - Calling convention (6.8, copy-in/copy-out): out/inout arguments are evaluated left to right
//   when the call starts; copy-out writes the l-values found then, even when the callee changed
//   the index they used (op 2, and op 4 with a slice argument).
// - L-values: a slice of an l-value is an l-value, also sliced again (op 3: `v[7:4][2:1]` is
//   bits 6..5 of v) and as an out argument.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header ctl_t {
    bit<8> i;   // index into s
    bit<8> op;
}

header val_t {
    bit<8> v;
}

struct headers_t {
    ethernet_t eth;
    ctl_t      x;
    val_t[3]   s;
}

struct meta_t { }

bit<8> bump(inout bit<8> n) {
    n = n + 1;
    return 0xAA;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.x);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action next_and_set(inout bit<8> n, out bit<8> dst) {
        n = n + 1;
        dst = 0xBB;
    }
    action set_two(out bit<2> o) {
        o = 2;
    }
    action next_and_inc(inout bit<8> n, inout bit<4> nibble) {
        n = n + 1;
        nibble = nibble + 1;
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.x.op == 1) {
            hdr.s[hdr.x.i].v = bump(hdr.x.i);
        } else if (hdr.x.op == 2) {
            next_and_set(hdr.x.i, hdr.s[hdr.x.i].v);
        } else if (hdr.x.op == 3) {
            hdr.s[2].v[7:4][2:1] = 2w3;
            set_two(hdr.s[1].v[3:0][1:0]);
        } else if (hdr.x.op == 4) {
            next_and_inc(hdr.x.i, hdr.s[hdr.x.i].v[3:0]);
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
