// Header stacks and unions indexed and assigned at run time (P4-16 v1.2.4):
// - 8.18 "Operations on header stacks": hs[i] with a run-time i as r-value and l-value, in a
//   control and in a parser state; hs.next / hs.last in a parser raise error.StackOutOfBounds
//   when the element does not exist (next at a full stack, last at an empty one); lastIndex
//   (of a copy: assigning a stack copies its nextIndex too, as bmv2's assign_header_stack).
// - 8.25 "Reading uninitialized values and writing fields of invalid headers": an index out of
//   range reads an invalid header (its fields unspecified: only its validity is looked at here),
//   and a write through it (a field, setValid, a whole header) changes no state.
//   bmv2 (simple_switch) aborts the process on such an index (std::out_of_range from its stack's
//   at(), behavioral-model#976, p4c#3423); this switch follows the spec (softswitch/README.md).
// - 8.17/8.18: assigning a header copies its validity (an invalid source makes the target
//   invalid); assigning a stack copies every element.
// - 8.19 "Operations on header unions": `u.h = e` with e valid makes u's other members invalid;
//   assigning a whole union copies which member is valid; push_front/pop_front on a stack of
//   unions shift whole unions and leave the new elements with no valid member.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header ctl_t { bit<8> op; bit<8> i; bit<8> j; bit<8> r; }
header v_t { bit<8> v; }
header w_t { bit<16> w; }
header_union u_t { v_t a; w_t b; }

struct meta_t { bit<8> li; }
struct headers_t {
    ethernet_t eth;
    ctl_t      c;
    v_t[3]     s;
    v_t[3]     t;
    v_t        x;
    v_t        y;      // never made valid
    u_t        u;
    u_t        u2;
    u_t[2]     us;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.c);
        transition select(hdr.c.op) {
            0x10: by_index;
            0x20: last_of_empty;
            0x30: full;
            default: two;
        }
    }
    state two {
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        v_t[3] copy = hdr.s;                // a stack's value includes its nextIndex
        meta.li = (bit<8>)copy.lastIndex;
        transition select(hdr.s.last.v) {
            default: accept;
        }
    }
    state by_index {
        // a run-time index as an l-value in a parser; out of range: nothing happens
        hdr.s[hdr.c.i].setValid();
        hdr.s[hdr.c.i].v = 0x42;
        hdr.c.j = hdr.s[hdr.c.i].isValid() ? 8w1 : 8w2;
        transition accept;
    }
    state last_of_empty {
        transition select(hdr.s.last.v) {   // nextIndex 0: StackOutOfBounds
            default: accept;
        }
    }
    state full {
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        hdr.s.next.setValid();               // nextIndex 3 = size: StackOutOfBounds
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.StackOutOfBounds) {
            hdr.c.r = 0xee;
        } else {
            hdr.c.r = meta.li;
        }
        if (hdr.c.op == 1) {
            hdr.c.j = hdr.s[hdr.c.i].isValid() ? 8w1 : 8w2;
            hdr.s[hdr.c.i].v = 0xee;
        } else if (hdr.c.op == 2) {
            hdr.s[hdr.c.i].setValid();
            hdr.s[hdr.c.i].v = 0x77;
        } else if (hdr.c.op == 3) {
            hdr.x.setValid();
            hdr.x.v = 0x66;
            hdr.x = hdr.s[hdr.c.i];
        } else if (hdr.c.op == 4) {
            hdr.t = hdr.s;
            hdr.t[1].v = 0x11;
        } else if (hdr.c.op == 5) {
            hdr.u.b.setValid();
            hdr.u.b.w = 0x1234;
            hdr.x.setValid();
            hdr.x.v = 0x66;
            hdr.u.a = hdr.x;
        } else if (hdr.c.op == 6) {
            hdr.u.a.setValid();
            hdr.u.a.v = 0x55;
            hdr.u2 = hdr.u;
            hdr.u2.a.v = 0x56;
        } else if (hdr.c.op == 7) {
            hdr.u.a.setValid();
            hdr.u.a.v = 0x55;
            hdr.u.a = hdr.y;
            hdr.u2.b.setValid();
            hdr.u2.b.w = 0xbeef;
            hdr.u2.a.setInvalid();
        } else if (hdr.c.op == 8) {
            hdr.x.setValid();
            hdr.x.v = 0x66;
            hdr.x = hdr.y;
        } else if (hdr.c.op == 9) {
            hdr.us[hdr.c.i].b.setValid();
            hdr.us[hdr.c.i].b.w = 0xabcd;
            hdr.us[hdr.c.j].a = hdr.s[0];
        } else if (hdr.c.op == 10) {
            hdr.us[0].b.setValid();
            hdr.us[0].b.w = 0xabcd;
            hdr.us.push_front(1);
        } else if (hdr.c.op == 11) {
            hdr.us[1].a = hdr.s[1];
            hdr.us.pop_front(1);
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
