// Nested structs in metadata, functions with out params and early return, actions calling
// actions, exit inside an action and inside nested blocks.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header data_t { bit<8> a; bit<8> b; bit<8> r1; bit<8> r2; bit<8> r3; }

struct inner_t { bit<8> x; bit<8> y; }
struct mid_t { inner_t in1; bit<4> w; }
struct meta_t { mid_t m; inner_t other; }
struct headers_t { ethernet_t eth; data_t d; }

// Early return: the second assignment to out param must not happen when a > 10.
bit<8> clamp(in bit<8> a, out bool clamped) {
    clamped = false;
    if (a > 10) {
        clamped = true;
        return 10;
    }
    return a;
}

void twice(inout bit<8> v) {
    v = v + v;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action inc_r3() { hdr.d.r3 = hdr.d.r3 + 1; }
    action inc_twice() { inc_r3(); inc_r3(); }
    action stop() {
        hdr.d.r3 = 0xee;
        sm.egress_spec = 3;
        exit;
        hdr.d.r3 = 0x11;   // never runs
    }
    apply {
        sm.egress_spec = 1;
        bool c;
        meta.m.in1.x = clamp(hdr.d.a, c);
        meta.m.w = c ? 4w1 : 4w0;
        hdr.d.r1 = meta.m.in1.x;
        meta.other = meta.m.in1;
        twice(meta.other.x);
        hdr.d.r2 = meta.other.x ++ meta.m.w == 12w0 ? 8w0 : (bit<8>)meta.m.w;
        inc_twice();
        if (hdr.d.b == 0xff) {
            if (hdr.d.a == 0) {
                stop();
            }
            hdr.d.r3 = 0x22;
        }
        if (hdr.d.b == 0xfe) {
            {
                sm.egress_spec = 2;
                exit;
            }
        }
        hdr.d.r3 = hdr.d.r3 + meta.m.in1.x;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.d); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
