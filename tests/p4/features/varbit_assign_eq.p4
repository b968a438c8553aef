// varbit fields: assignment copies the value and its length, == compares both (P4-16 spec,
// "Operations on variable-size bit types": assignment and == / != are the operations a varbit
// value has); a value_set as one element of a tuple keyset ("Select expressions": a value_set
// matches when the key is in the set; the control plane writes no members here, so it matches
// nothing and the next case decides).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header len_t {
    bit<8> a;      // bytes of option a
    bit<8> b;      // bytes of option b
    bit<8> res;    // result flags, written in ingress
}

header opt_t {
    varbit<32> v;
}

struct headers_t {
    ethernet_t eth;
    len_t      l;
    opt_t      oa;
    opt_t      ob;
    opt_t      oc;     // a copy of oa, made in ingress
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    value_set<bit<8>>(4) vs;
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.l);
        transition select(hdr.l.a, hdr.l.b) {
            (vs, 8w1): never;            // vs is empty: never taken
            (8w0 &&& 8w0xf8, _): opts;   // lengths 0..7
            default: accept;
        }
    }
    state never {
        hdr.l.res = 0xee;
        transition accept;
    }
    state opts {
        pkt.extract(hdr.oa, (bit<32>)hdr.l.a * 8);
        pkt.extract(hdr.ob, (bit<32>)hdr.l.b * 8);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> r = 0;
        if (hdr.oa.isValid()) {
            if (hdr.oa.v == hdr.ob.v) { r = r | 0x01; }
            if (hdr.oa.v != hdr.ob.v) { r = r | 0x02; }
            hdr.oc.setValid();
            hdr.oc.v = hdr.oa.v;
            if (hdr.oc.v == hdr.oa.v) { r = r | 0x04; }
            hdr.ob.v = hdr.oa.v;          // overwrite ob too (same type)
            if (hdr.ob.v == hdr.oa.v) { r = r | 0x08; }
        }
        hdr.l.res = hdr.l.res | r;
        sm.egress_spec = 9w1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.l);
        pkt.emit(hdr.oa);
        pkt.emit(hdr.ob);
        pkt.emit(hdr.oc);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
