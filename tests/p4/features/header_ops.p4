// Header validity and assignment: setInvalid removes a header from the output, setValid
// inserts one (at its position in the deparser's emit order), header-to-header copy (copies
// validity too, so copying an invalid header invalidates the target), struct initializers and
// struct assignment.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header pair_t {
    bit<8> op;
    bit<8> v;
}

struct headers_t {
    ethernet_t eth;
    pair_t     a;
    pair_t     b;
    pair_t     c;   // never extracted
}

struct two_t {
    bit<8> p;
    bit<8> q;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.a);
        pkt.extract(hdr.b);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.a.op == 8w1) {
            hdr.b.setInvalid();
        } else if (hdr.a.op == 8w2) {
            hdr.c.setValid();
            hdr.c.op = 8w0xc0;
            hdr.c.v = 8w0xc1;
        } else if (hdr.a.op == 8w3) {
            hdr.c = hdr.a;                           // c becomes a valid copy of a
            hdr.a.v = hdr.b.isValid() ? 8w1 : 8w0;   // a changes after the copy
        } else if (hdr.a.op == 8w4) {
            hdr.b = hdr.c;                           // c is invalid, so b becomes invalid
        } else if (hdr.a.op == 8w5) {
            two_t t = { hdr.a.v, hdr.b.v };
            two_t u = t;
            hdr.a.v = u.q;
            hdr.b.v = u.p;
        }
        sm.egress_spec = 9w1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.a);
        pkt.emit(hdr.c);
        pkt.emit(hdr.b);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
