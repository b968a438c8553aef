// Checks of parser reads happen only when the read is evaluated (P4-16 v1.2.4):
// - 8.5 "Operations on the bool type": `&&` and `||` evaluate their right operand only when
//   needed; 8.6.x / 8.8 "?:" evaluates only the chosen arm ("short-circuit evaluation").
// - 8.18 "Operations on header stacks": in a parser, hs.last on an empty stack (and hs.next on
//   a full one) signals error.StackOutOfBounds; 12.8.3 "Lookahead": reading past the end of the
//   packet signals error.PacketTooShort. An operand that is not evaluated reads nothing, so it
//   signals nothing, even when it sits in a select key or the right side of an assignment.
// - A statement whose expression signals an error does not complete (its assignment is not made).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header ctl_t { bit<8> flag; bit<8> r1; bit<8> r2; bit<8> r3; }
header v_t { bit<8> v; }

struct meta_t { }
struct headers_t {
    ethernet_t eth;
    ctl_t      c;
    v_t[2]     s;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.c);
        transition select(hdr.c.flag[7:4]) {
            1: one;
            default: go;
        }
    }
    state one {
        pkt.extract(hdr.s.next);
        transition go;
    }
    state go {
        hdr.c.r1 = (hdr.c.flag[0:0] == 1) ? hdr.s.last.v : 8w0x42;
        hdr.c.r2 = (hdr.c.flag[1:1] == 1 && pkt.lookahead<bit<16>>() == 16w0x7f7f) ? 8w1 : 8w2;
        transition select(hdr.c.flag[2:2] == 0 || hdr.s.last.v == 8w0x99) {
            true: yes;
            false: no;
        }
    }
    state yes {
        hdr.c.r3 = 0x11;
        transition accept;
    }
    state no {
        hdr.c.r3 = 0x22;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.StackOutOfBounds) {
            hdr.c.r3 = 0xee;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.c.r3 = 0xdd;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.c);
        pkt.emit(hdr.s);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
