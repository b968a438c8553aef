// Header stacks indexed by constants in controls, push_front/pop_front, copying headers
// between stack elements, setValid() then field writes, header unions, next/last in the parser.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header lbl_t { bit<7> v; bit<1> bos; }
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union ab_t { a_t a; b_t b; }
header ctl_t { bit<8> op; bit<8> kind; }

struct meta_t { }
struct headers_t { ethernet_t eth; ctl_t c; lbl_t[3] lbls; ab_t u; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.c);
        transition lbl;
    }
    state lbl {
        pkt.extract(hdr.lbls.next);
        transition select(hdr.lbls.last.bos) {
            1: union_sel;
            default: lbl;
        }
    }
    state union_sel {
        transition select(hdr.c.kind) {
            0xa: ua;
            0xb: ub;
            default: accept;
        }
    }
    state ua { pkt.extract(hdr.u.a); transition accept; }
    state ub { pkt.extract(hdr.u.b); transition accept; }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.c.op == 1) {
            // push_front(1): elements shift up, [0] becomes invalid, the last one falls off
            hdr.lbls.push_front(1);
            hdr.lbls[0].setValid();
            hdr.lbls[0].v = 0x55;
            hdr.lbls[0].bos = 0;
        } else if (hdr.c.op == 2) {
            hdr.lbls.pop_front(1);
        } else if (hdr.c.op == 3) {
            hdr.lbls[2] = hdr.lbls[0];      // copies validity too
            hdr.lbls[2].v = hdr.lbls[2].v + 1;
        }
        // Union: setting one member valid makes the others invalid.
        if (hdr.u.a.isValid()) {
            hdr.u.b.setValid();
            hdr.u.b.y = 0xbeef;
        }
        if (hdr.u.isValid()) {
            hdr.c.kind = hdr.c.kind | 0x80;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.c); pkt.emit(hdr.lbls); pkt.emit(hdr.u); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
