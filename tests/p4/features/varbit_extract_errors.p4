// extract(hdr, n) of a header with a varbit field, and the parser error it raises. bmv2's
// extract_VL checks, in this order: whole bytes (ParserInvalidArgument), enough packet left
// (PacketTooShort, the first check of P4-16's variable-size extract pseudo-code), then n within
// the varbit's maximum (HeaderTooShort). v1model continues into ingress with parser_error set
// and the header invalid; the bytes the parser did not consume stay payload.
#include <core.p4>
#include <v1model.p4>

header len_t {
    bit<8> len;   // varbit length in bytes
}

header opt_t {
    bit<8>     kind;
    varbit<32> data;
}

header res_t {
    bit<8> err;   // 0 none, 1 PacketTooShort, 2 HeaderTooShort, 3 ParserInvalidArgument
    bit<8> opt_valid;
}

struct headers_t {
    res_t r;
    len_t l;
    opt_t o;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.l);
        pkt.extract(hdr.o, (bit<32>)hdr.l.len * 8);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.r.setValid();
        hdr.r.err = 0;
        if (sm.parser_error == error.PacketTooShort) {
            hdr.r.err = 1;
        } else if (sm.parser_error == error.HeaderTooShort) {
            hdr.r.err = 2;
        } else if (sm.parser_error == error.ParserInvalidArgument) {
            hdr.r.err = 3;
        }
        hdr.r.opt_valid = hdr.o.isValid() ? 8w1 : 8w0;
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
