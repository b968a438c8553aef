// Header stacks: extract into .next in a parser loop, select on .last, .lastIndex in the
// parser, [i] indexing, push_front / pop_front in ingress, emitting a stack (valid elements in
// index order), and error.StackOutOfBounds when the loop overruns the stack.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header info_t {
    bit<8> n;      // lastIndex after parsing, or 0xee on StackOutOfBounds
    bit<8> second; // (bit<8>)lbl[1].v as parsed
}

header lbl_t {
    bit<7> v;
    bit<1> bos;    // bottom of stack
}

struct headers_t {
    ethernet_t eth;
    info_t     info;
    lbl_t[4]   lbl;
}

struct meta_t {
    bit<8> n;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition parse_lbl;
    }
    state parse_lbl {
        pkt.extract(hdr.lbl.next);
        transition select(hdr.lbl.last.bos) {
            1w1: done;
            default: parse_lbl;
        }
    }
    state done {
        meta.n = (bit<8>)hdr.lbl.lastIndex;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.info.setValid();
        hdr.info.second = (bit<8>)hdr.lbl[1].v;
        if (sm.parser_error == error.StackOutOfBounds) {
            hdr.info.n = 8w0xee;
            sm.egress_spec = 9w2;
        } else {
            hdr.info.n = meta.n;
            if (meta.n == 8w1) {
                hdr.lbl.push_front(1);
                hdr.lbl[0].setValid();
                hdr.lbl[0].v = 7w0x55;
                hdr.lbl[0].bos = 1w0;
            } else {
                hdr.lbl.pop_front(1);
            }
            sm.egress_spec = 9w1;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.info);
        pkt.emit(hdr.lbl);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
