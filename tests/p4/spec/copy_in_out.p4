// P4-16 6.8 (calling convention: call by copy-in/copy-out) for arguments of every type: headers,
// structs, header stacks and header unions as well as bit<W>, through actions (called directly
// and by a table), functions, sub-controls and sub-parsers. A callee works on copies: what it
// writes directly to the data an argument names (or through another argument that names the
// same data) is overwritten when the copies go back at return (or at `exit`), left to right in
// parameter order. An `out` argument starts uninitialized (its headers invalid), and an `in`
// argument is a copy taken before the callee runs. What a rejecting sub-parser leaves behind is
// the architecture's (p4-spec#880): this switch copies its composite arguments out (what it
// extracted stays) and not its bit<W> ones (softswitch/README.md, "the choices made").
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header ctl_t { bit<8> op; }
header H { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
header val_t { bit<8> v; }
header X { bit<8> x; }
header ua_t { bit<8> x; }
header ub_t { bit<8> y; }
header_union U { ua_t a; ub_t b; }

struct M2 { bit<8> x; bit<8> y; }
struct Meta { M2 m; }
struct Headers { ethernet_t eth; ctl_t c; H h; val_t[2] s; X x; U u; }

bit<8> bump(inout bit<8> n) {
    n = n + 1;
    return n;
}

// op 0x0d: two inout arguments naming the same header
bit<8> f2(inout H x, inout H y) {
    x.a = 0x01;
    y.a = 0x02;
    return x.a;
}

// op 0x12: the copy of x is taken before the next argument's call changes h.h.a
bit<8> hsum(inout H x, in bit<8> y) {
    x.b = y;
    return x.a;
}

// op 0x10: the copy-outs go left to right: hdr (whose x was invalid at copy-in) comes last
parser SP(packet_in pkt, out X xo, inout Headers hh) {
    state start {
        pkt.extract(xo);
        hh.h.b = 0x07;
        transition accept;
    }
}

// op 0x11: rejects; the composite arguments are still copied out, left to right
parser SPR(packet_in pkt, inout H hx, inout Headers hh) {
    state start {
        hx.a = 0x61;
        hh.h.b = 0x62;
        pkt.extract(hh.x);
        transition reject;
    }
}

parser MyParser(packet_in pkt, out Headers hdr, inout Meta meta, inout standard_metadata_t sm) {
    SP() sp;
    SPR() spr;
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.c);
        pkt.extract(hdr.h);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition select(hdr.c.op) {
            0x10: p_sp;
            0x11: p_spr;
            default: accept;
        }
    }
    state p_sp {
        sp.apply(pkt, hdr.x, hdr);
        transition accept;
    }
    state p_spr {
        spr.apply(pkt, hdr.h, hdr);
        transition accept;
    }
}

control MyVerifyChecksum(inout Headers h, inout Meta m) { apply { } }

// op 0x06: the bit<8> copy goes out first, then the header's
control Sub2(inout bit<8> y, inout H x) {
    apply {
        y = 0x50;
        x.a = 0x60;
        x.b = y;
    }
}

// op 0x07: two copies of one header; the second one's copy-out wins
control Sub3(inout H x, inout H y) {
    apply {
        x.a = 0x01;
        y.b = y.a;
        x.c = 0x03;
    }
}

control MyIngress(inout Headers h, inout Meta meta, inout standard_metadata_t sm) {
    Sub2() sub2;
    Sub3() sub3;

    action act_alias(inout H p) {
        p.a = 0x01;
        h.h.a = 0x02;       // direct writes: lost at copy-out
        h.h.b = 0x03;
        p.c = p.b;          // the copy's b: the old value
    }
    action two(inout H x, inout H y) {
        x.a = 0x05;
        y.b = 0x06;
        x.c = y.a;
        y.d = x.b;
    }
    action mix(inout bit<8> s, inout H x) {
        s = 0x11;
        x.a = 0x22;
        x.b = s;
    }
    action mix2(inout H x, inout bit<8> s) {
        x.a = 0x22;
        s = 0x11;
        x.b = s;
    }
    action fo(out H o, in H i) {
        if (!o.isValid()) {     // out: starts invalid; i is the copy taken at the call
            o = i;
            o.b = 0x77;
        }
    }
    action stk(inout val_t[2] s) {
        s[0].v = 0x01;
        h.s[0].v = 0x02;
        s[1].v = h.s[0].v;
    }
    action un(inout U u) {
        u.a.setValid();
        u.a.x = 0x09;
        h.u.b.setValid();       // direct: makes h.u.a invalid, but the copy-out restores it
        h.u.b.y = 0x08;
    }
    action ex(inout H p) {
        p.a = 0x31;
        h.h.b = 0x32;
        exit;                   // copy-out still happens: b is the copy's
    }
    action ms(inout M2 m2) {
        m2.x = 0x01;
        meta.m.x = 0x02;
        m2.y = meta.m.x;
    }
    action tact(inout H p, bit<8> v) {
        p.a = v;
        h.h.b = v;
        p.c = p.b;
    }
    action act_noalias(inout H p, out X q) {
        p.a = p.b;
        q.setValid();
        q.x = 0xee;
    }
    action so(out val_t[2] o, in val_t[2] i) {
        o[1] = i[0];            // o[0] stays invalid
    }
    action setp(inout standard_metadata_t s) {
        s.egress_spec = 2;
        sm.egress_spec = 3;     // direct: lost at copy-out
        h.h.d = (bit<8>)s.egress_spec;
    }
    table t_alias {
        actions = { tact(h.h); }
        default_action = tact(h.h, 0x05);
    }
    apply {
        sm.egress_spec = 1;
        if (h.c.op == 0x01) {
            act_alias(h.h);
        } else if (h.c.op == 0x02) {
            two(h.h, h.h);
        } else if (h.c.op == 0x03) {
            mix(h.h.a, h.h);
        } else if (h.c.op == 0x04) {
            mix2(h.h, h.h.a);
        } else if (h.c.op == 0x05) {
            fo(h.h, h.h);
        } else if (h.c.op == 0x06) {
            sub2.apply(h.h.a, h.h);
        } else if (h.c.op == 0x07) {
            sub3.apply(h.h, h.h);
        } else if (h.c.op == 0x08) {
            stk(h.s);
        } else if (h.c.op == 0x09) {
            un(h.u);
        } else if (h.c.op == 0x0a) {
            ex(h.h);
        } else if (h.c.op == 0x0b) {
            ms(meta.m);
            h.h.c = meta.m.x;
            h.h.d = meta.m.y;
        } else if (h.c.op == 0x0c) {
            t_alias.apply();
        } else if (h.c.op == 0x0d) {
            h.h.d = f2(h.h, h.h);
        } else if (h.c.op == 0x0e) {
            act_noalias(h.h, h.x);
        } else if (h.c.op == 0x0f) {
            so(h.s, h.s);
        } else if (h.c.op == 0x12) {
            h.h.d = hsum(h.h, bump(h.h.a));
        } else if (h.c.op == 0x13) {
            setp(sm);
        }
    }
}

control MyEgress(inout Headers h, inout Meta m, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout Headers h, inout Meta m) { apply { } }
control MyDeparser(packet_out pkt, in Headers h) { apply { pkt.emit(h); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
