// Every error a v1model parser can end with reaches standard_metadata.parser_error with the
// number p4c gives bmv2: the merged `error` declarations numbered in declaration order from 0,
// core.p4's first (NoError 0, PacketTooShort 1, NoMatch 2, StackOutOfBounds 3, HeaderTooShort 4,
// ParserTimeout 5, ParserInvalidArgument 6), then this program's (BadThing 7, Other 8): p4c's
// bmv2 back end (ErrorCodesVisitor) writes that map into the JSON's "errors", bmv2 raises its
// own errors by name through it, and a table key of type error matches that number (STF
// entries give it). Each error here is raised the way bmv2 raises it: extract past the end,
// a full stack, a varbit longer than its maximum, advance by a non-multiple of 8, verify.
#include <core.p4>
#include <v1model.p4>

error {
    BadThing,
    Other
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header mode_t {
    bit<8> mode;
    bit<8> arg;
}

header w_t {
    bit<32> w;
}

header s_t {
    bit<8> s;
}

header v_t {
    varbit<16> data;
}

struct headers_t {
    ethernet_t eth;
    mode_t     m;
    w_t        w;
    s_t[1]     st;
    v_t        v;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.m);
        transition select(hdr.m.mode) {
            1: too_short;
            3: overflow;
            4: varbit_long;
            6: bad_advance;
            0: accept;
            default: verifies;
        }
    }
    state too_short {
        pkt.extract(hdr.w);             // PacketTooShort when fewer than 4 bytes follow
        transition accept;
    }
    state overflow {
        pkt.extract(hdr.st.next);
        pkt.extract(hdr.st.next);       // StackOutOfBounds: the stack holds one
        transition accept;
    }
    state varbit_long {
        pkt.extract(hdr.v, (bit<32>)hdr.m.arg);   // HeaderTooShort when arg > 16
        transition accept;
    }
    state bad_advance {
        pkt.advance((bit<32>)hdr.m.arg);          // ParserInvalidArgument when not whole bytes
        transition accept;
    }
    state verifies {
        verify(hdr.m.mode != 2, error.NoMatch);
        verify(hdr.m.mode != 5, error.ParserTimeout);
        verify(hdr.m.mode != 7, error.BadThing);
        verify(hdr.m.mode != 8, error.Other);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_code(bit<8> code) {
        hdr.m.arg = code;
        sm.egress_spec = 9w1;
    }
    action unknown() {
        hdr.m.arg = 8w0xff;
        sm.egress_spec = 9w2;
    }
    table errs {
        key = { sm.parser_error: exact; }
        actions = { set_code; unknown; }
        default_action = unknown();
    }
    apply {
        errs.apply();
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.m);
        pkt.emit(hdr.w);
        pkt.emit(hdr.st);
        pkt.emit(hdr.v);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
