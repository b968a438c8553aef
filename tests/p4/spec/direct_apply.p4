// Direct type invocation (P4-16 v1.2.4, "Direct type invocation"): `T.apply(...)` on a control
// or parser type without constructor parameters applies an instance of T of its own, one per
// call site, as if `T() t;` were declared in the enclosing block. The first call site's instance
// takes the type's name (MyIngress.Classify, as p4c names it), further ones T_1, T_2, ...
// Each instance has its own tables and registers.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header sub_t { bit<8> tag; }
header data_t { bit<8> k; bit<8> a; bit<8> cls; bit<8> c1; bit<8> c2; bit<8> c3; bit<8> e; }
struct headers_t { ethernet_t eth; sub_t s; data_t d; }
struct meta_t { }

parser SubParser(packet_in pkt, out sub_t s) {
    state start { pkt.extract(s); transition accept; }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        SubParser.apply(pkt, hdr.s);   // a parser applied directly
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control AddOne(inout bit<8> v) { apply { v = v + 1; } }

control Classify(inout data_t d) {
    action set(bit<8> c) { d.cls = c; }
    table t {
        key = { d.k : exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); }
}

control Counted(inout bit<8> v) {
    register<bit<8>>(1) seen;
    apply {
        bit<8> x;
        seen.read(x, 0);
        x = x + 1;
        seen.write(0, x);
        v = x;
    }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        AddOne.apply(hdr.d.a);
        AddOne.apply(hdr.d.a);
        Classify.apply(hdr.d);       // its table is MyIngress.Classify.t
        Counted.apply(hdr.d.c1);     // three call sites, three registers
        Counted.apply(hdr.d.c2);
        if (hdr.d.k == 9) {
            Counted.apply(hdr.d.c3);
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { AddOne.apply(hdr.d.e); }   // MyEgress.AddOne
}

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.s); pkt.emit(hdr.d); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
