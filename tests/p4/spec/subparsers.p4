// Sub-parsers (P4-16 13.8.1): parser instances applied from parser states, arguments passed by
// copy-in/copy-out. The calling state is split at the call: the sub-parser's accept continues
// the caller's state (the statements after the call run), its reject and its errors are the
// caller's (parsing ends there; v1model goes on to ingress with parser_error set). Also: a loop
// inside a sub-parser, a sub-parser applied from another one, the same instance applied twice in
// one state, and an `out` header argument that starts invalid on each call.
#include <core.p4>
#include <v1model.p4>

error { BadOpt, BadInner }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header ctl_t { bit<8> mode; }
header opt_t { bit<8> kind; bit<8> val; }
header x_t { bit<8> x; }
header tail_t { bit<8> t; }
header res_t { bit<8> err; bit<8> count; bit<8> count2; bit<8> after; bit<8> valid; }

struct meta_t { bit<8> count; bit<8> count2; bit<8> after; }
struct headers_t { ethernet_t eth; res_t res; ctl_t ctl; opt_t[3] opts; x_t x; tail_t t; }

parser InnerParser(packet_in pkt, out x_t x) {
    state start {
        pkt.extract(x);
        verify(x.x != 0xff, error.BadInner);
        transition accept;
    }
}

parser OptParser(packet_in pkt, inout opt_t[3] opts, out x_t x, out bit<8> count) {
    InnerParser() inner;
    state start {
        count = 0;
        transition next_opt;
    }
    state next_opt {
        pkt.extract(opts.next);
        count = count + 1;
        transition select(opts.last.kind) {
            0: accept;
            1: next_opt;
            2: parse_inner;
            0xee: reject;
            0xf0 &&& 0xf0: bad;
        }
    }
    state parse_inner {
        inner.apply(pkt, x);
        count = count + 0x10;
        transition accept;
    }
    state bad {
        verify(false, error.BadOpt);
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    OptParser() optp;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            0x88b5: ctl;
            default: accept;
        }
    }
    state ctl {
        pkt.extract(hdr.ctl);
        transition select(hdr.ctl.mode) {
            1: once;
            2: twice;
            default: accept;
        }
    }
    state once {
        optp.apply(pkt, hdr.opts, hdr.x, meta.count);
        meta.after = 1;  // the bottom half of the state: only when the sub-parser accepts
        transition select(meta.count) {
            0x10 .. 0x1f: accept;
            default: tail;
        }
    }
    state twice {
        optp.apply(pkt, hdr.opts, hdr.x, meta.count);
        optp.apply(pkt, hdr.opts, hdr.x, meta.count2);
        meta.after = 2;
        transition tail;
    }
    state tail {
        pkt.extract(hdr.t);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        if (sm.parser_error == error.NoError) {
            hdr.res.err = 0;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.res.err = 1;
        } else if (sm.parser_error == error.NoMatch) {
            hdr.res.err = 2;
        } else if (sm.parser_error == error.StackOutOfBounds) {
            hdr.res.err = 3;
        } else if (sm.parser_error == error.BadOpt) {
            hdr.res.err = 4;
        } else if (sm.parser_error == error.BadInner) {
            hdr.res.err = 5;
        } else {
            hdr.res.err = 0xff;
        }
        hdr.res.count = meta.count;
        hdr.res.count2 = meta.count2;
        hdr.res.after = meta.after;
        hdr.res.valid = 0;
        if (hdr.opts[0].isValid()) { hdr.res.valid = hdr.res.valid | 0x01; }
        if (hdr.opts[1].isValid()) { hdr.res.valid = hdr.res.valid | 0x02; }
        if (hdr.opts[2].isValid()) { hdr.res.valid = hdr.res.valid | 0x04; }
        if (hdr.x.isValid()) { hdr.res.valid = hdr.res.valid | 0x08; }
        if (hdr.t.isValid()) { hdr.res.valid = hdr.res.valid | 0x10; }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.res);
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.opts);
        pkt.emit(hdr.x);
        pkt.emit(hdr.t);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
