// The P4-16 calling convention: copy-out still happens after `exit` (up the whole call stack),
// copy-out goes left to right when one l-value is passed twice, an `out` header argument starts
// invalid, `in` composite arguments are copies, and a sub-parser applied from a parser state.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header H { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
header X { bit<8> x; }
struct Headers { ethernet_t eth; H h; X x; }
struct Meta { }

parser SubParser(packet_in pkt, out X x, in bit<8> marker) {
    state start {
        transition select(marker) {
            0xff: accept;
            default: parse_x;
        }
    }
    state parse_x { pkt.extract(x); transition accept; }
}

parser MyParser(packet_in pkt, out Headers hdr, inout Meta m, inout standard_metadata_t sm) {
    SubParser() sub;
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.h);
        sub.apply(pkt, hdr.x, hdr.h.d);
        transition accept;
    }
}

control Inner(inout bit<8> v) {
    action set_and_exit(inout bit<8> w) {
        w = 0x33;
        exit;
    }
    apply {
        v = 0x22;
        set_and_exit(v);
        v = 0x44;           // not reached
    }
}

void clear_x(out X x) { }

control MyIngress(inout Headers h, inout Meta m, inout standard_metadata_t sm) {
    Inner() inner;
    action two(inout bit<8> first, inout bit<8> second) {
        first = 1;
        second = 2;
    }
    action read_in(in H copy) {
        h.h.b = 0x55;
        h.h.c = copy.b;      // the copy was taken before the write above
    }
    apply {
        sm.egress_spec = 1;
        if (h.h.a == 1) {
            two(h.h.b, h.h.b);           // copy-out left to right: b = 2
        } else if (h.h.a == 2) {
            read_in(h.h);
        } else if (h.h.a == 3) {
            clear_x(h.x);                // h.x becomes invalid: not emitted
        } else if (h.h.a == 4) {
            inner.apply(h.h.c);          // exit inside: c = 0x33 is still copied out
            h.h.d = 0x99;                // not reached
        }
    }
}

control MyVerifyChecksum(inout Headers h, inout Meta m) { apply { } }
control MyComputeChecksum(inout Headers h, inout Meta m) { apply { } }
control MyEgress(inout Headers h, inout Meta m, inout standard_metadata_t sm) { apply { } }
control MyDeparser(packet_out pkt, in Headers h) { apply { pkt.emit(h); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
