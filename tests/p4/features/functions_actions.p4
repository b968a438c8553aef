// Functions with return (early return too) and with inout parameters; actions called
// directly from control code with in / out / inout parameters (copy-in/copy-out).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8> a;
    bit<8> b;
    bit<8> mx;    // max8(a, b)
    bit<8> cls;   // classify(b)
    bit<8> acc;   // acc + a (action with inout)
    bit<8> o;     // set by an action's out parameter
    bit<8> x;     // x and y swapped by a function with inout parameters
    bit<8> y;
    bit<8> dbl;   // add_to(dbl, dbl): copy-in happens before the body runs
}

struct headers_t {
    ethernet_t eth;
    data_t     d;
}

struct meta_t { }

bit<8> max8(in bit<8> p, in bit<8> q) {
    return p > q ? p : q;
}

bit<8> classify(in bit<8> v) {
    if (v == 8w0) {
        return 8w0xee;
    }
    return v + 8w1;
}

void swap8(inout bit<8> p, inout bit<8> q) {
    bit<8> t = p;
    p = q;
    q = t;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action add_to(inout bit<8> acc, in bit<8> v) {
        acc = acc + v;
    }
    action make(out bit<8> r) {
        r = 8w0x42;
    }
    apply {
        hdr.d.mx  = max8(hdr.d.a, hdr.d.b);
        hdr.d.cls = classify(hdr.d.b);
        add_to(hdr.d.acc, hdr.d.a);
        make(hdr.d.o);
        swap8(hdr.d.x, hdr.d.y);
        add_to(hdr.d.dbl, hdr.d.dbl);
        sm.egress_spec = 9w1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.d);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
