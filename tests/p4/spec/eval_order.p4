// P4-16 8.x (expressions, order of evaluation): `&&` and `||` evaluate their right operand only
// when the left one does not decide, and `?:` only the branch its condition picks, also when that
// operand has side effects (a table apply and the action it runs, a register read/write inside
// that action, a function that writes through an inout argument, a parser lookahead that would
// fail past the end of the packet). Every other expression evaluates its operands left to right,
// each once: the left operand of `+` is read before the call on the right changes it, likewise
// the first item of a struct initializer (as written, also with field names), the left side of
// a compound assignment and the first key of a `select`; call arguments go left to right (an
// inout argument is copied in at its turn, before a later argument's call changes it), extern
// calls' too (register.write's index before its value).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header e_t { bit<8> op; bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
header tail_t { bit<8> t; }

struct pair_t { bit<8> x; bit<8> y; }
struct Meta { }
struct Headers { ethernet_t eth; e_t e; tail_t tail; }

bool setf(inout bit<8> x) {
    x = 0x55;
    return true;
}

bit<8> bump(inout bit<8> x) {
    x = x + 1;
    return x;
}

bit<8> minus(in bit<8> p, in bit<8> q) {
    return p - q;
}

bit<8> first_of(in bit<8> p, in bit<8> q) {
    return p;
}

bit<8> add_to(inout bit<8> x, in bit<8> y) {
    x = x + y;
    return x;
}

parser MyParser(packet_in pkt, out Headers hdr, inout Meta meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.e);
        // the lookahead runs only for op 9: other packets end here (no PacketTooShort)
        transition select((bit<1>)(hdr.e.op == 9 && pkt.lookahead<bit<8>>() == 0x99)) {
            1: parse_tail;
            default: check_ternary;
        }
    }
    state check_ternary {
        // the lookahead is the branch for op 10 only
        transition select(hdr.e.op == 10 ? pkt.lookahead<bit<8>>() : 8w0) {
            0x99: parse_tail;
            default: check_op;
        }
    }
    state check_op {
        transition select(hdr.e.op) {
            13: keys;
            default: accept;
        }
    }
    state keys {
        // select keys left to right: a is read before bump changes it
        transition select(hdr.e.a, bump(hdr.e.a)) {
            (0xa0, 0xa1): keys_in_order;
            default: accept;
        }
    }
    state keys_in_order {
        hdr.e.d = 0x77;
        transition accept;
    }
    state parse_tail {
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control MyVerifyChecksum(inout Headers h, inout Meta m) { apply { } }

control MyIngress(inout Headers h, inout Meta meta, inout standard_metadata_t sm) {
    register<bit<8>>(1) r;
    register<bit<8>>(4) r2;

    action mark() { h.e.c = 0xaa; }
    action count_it() {
        bit<8> v;
        r.read(v, 0);
        v = v + 1;
        r.write(0, v);
        h.e.d = v;
    }
    table t_key {
        key = { h.e.b: exact; }
        actions = { mark; NoAction; }
        const entries = { 0x01: mark(); }
        default_action = NoAction();
    }
    table t_count {
        actions = { count_it; }
        const default_action = count_it();
    }
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error != error.NoError) {
            h.e.op = 0xee;      // (a lookahead that should not have run failed)
        }
        if (h.tail.isValid()) {
            h.tail.t = h.tail.t + 1;    // parsed as a header, not left as payload
        }
        if (h.e.op == 1) {
            if (h.e.a == 1 && t_key.apply().hit) {
                h.e.d = 0x11;
            }
        } else if (h.e.op == 2) {
            if (h.e.a == 2 || setf(h.e.b)) {
                h.e.d = 0x22;
            }
        } else if (h.e.op == 3) {
            h.e.c = (h.e.a == 3) ? bump(h.e.b) : bump(h.e.d);
        } else if (h.e.op == 4) {
            h.e.c = h.e.b + bump(h.e.b);
        } else if (h.e.op == 5) {
            h.e.c = minus(bump(h.e.b), bump(h.e.b));
        } else if (h.e.op == 6) {
            pair_t p = { h.e.b, bump(h.e.b) };
            h.e.c = p.x;
            h.e.d = p.y;
        } else if (h.e.op == 7) {
            if (h.e.a == 7 || t_count.apply().miss) {
                h.e.c = 0x77;
            }
        } else if (h.e.op == 8) {
            h.e.c += bump(h.e.c);
        } else if (h.e.op == 11) {
            h.e.c = first_of(h.e.b, bump(h.e.b));
        } else if (h.e.op == 12) {
            h.e.c = add_to(h.e.b, bump(h.e.b));
        } else if (h.e.op == 14) {
            r2.write((bit<32>)h.e.b, bump(h.e.b));
            bit<8> v;
            r2.read(v, 1);
            h.e.c = v;
        } else if (h.e.op == 15) {
            pair_t p = { y = h.e.b, x = bump(h.e.b) };
            h.e.c = p.x;
            h.e.d = p.y;
        }
    }
}

control MyEgress(inout Headers h, inout Meta m, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout Headers h, inout Meta m) { apply { } }
control MyDeparser(packet_out pkt, in Headers h) { apply { pkt.emit(h); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
