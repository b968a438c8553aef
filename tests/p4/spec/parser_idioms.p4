// Parser idioms: lookahead of a header type and of bit<N> in a select, varbit extract with a
// length, serializable enum fields in headers, typedef of typedef, type newtypes, verify in a
// sub-state, and standard_metadata.parser_error checked in ingress.
// Not portable: a select on the enum field hdr.p.op; p4c-bm2-ss refuses enum-typed select keys
// (the .stf's `# options: allow-nonportable` line).
#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_t;
typedef mac_t   addr_t;          // typedef of typedef
type bit<16>    etype_t;         // newtype
enum bit<8> op_e { PLAIN = 1, OPTS = 2, CHECK = 3 }

const etype_t ETYPE_CUSTOM = (etype_t)16w0x88b5;

error { BadOptLen }

header ethernet_t { addr_t dst; addr_t src; etype_t etype; }
header probe_t { op_e op; bit<8> len; }
header opts_t { varbit<32> data; }
header tail_t { bit<8> t; }
header res_t { bit<8> peek_op; bit<8> err; bit<8> optlen; }

struct meta_t { }
struct headers_t { ethernet_t eth; probe_t p; opts_t o; tail_t t; res_t r; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            ETYPE_CUSTOM: probe;
            default: accept;
        }
    }
    state probe {
        probe_t peek = pkt.lookahead<probe_t>();
        hdr.r.setValid();
        hdr.r.peek_op = (bit<8>)peek.op;
        transition select(pkt.lookahead<bit<8>>()) {
            1: plain;
            2: opts;
            3: check;
            default: reject;
        }
    }
    state plain {
        pkt.extract(hdr.p);
        transition tail;
    }
    state opts {
        pkt.extract(hdr.p);
        transition check_len;
    }
    state check_len {
        verify(hdr.p.len <= 4, error.BadOptLen);
        pkt.extract(hdr.o, (bit<32>)hdr.p.len * 8);
        hdr.r.optlen = hdr.p.len;
        transition tail;
    }
    state check {
        pkt.extract(hdr.p);
        transition select(hdr.p.op) {
            op_e.CHECK: tail;
            default: reject;
        }
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
        if (sm.parser_error == error.BadOptLen) {
            hdr.r.err = 1;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.r.err = 2;
        } else if (sm.parser_error != error.NoError) {
            hdr.r.err = 3;
        }
        if (hdr.p.op == op_e.OPTS) {
            hdr.t.t = hdr.t.t + 1;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.p); pkt.emit(hdr.o); pkt.emit(hdr.t); pkt.emit(hdr.r); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
