// Assorted operations: slices as l-values, dynamic header-stack indexes in a control,
// stack.size, header and struct equality, / and % on bit<W>, unary minus/complement on bit<W>,
// bool header fields, a struct of headers inside the headers struct (emitted as a whole),
// select on a serializable enum, @atomic blocks, return inside an action, minSizeInBytes(),
// log_msg and assert (no effect on the packet).
// Not portable: a select on the enum field hdr.d.kind; p4c-bm2-ss refuses enum-typed select keys,
// and x / 3, x % 3 of a field (its mid end turns only divisions by powers of two into shifts)
// (the .stf's `# options: allow-nonportable` line).
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

enum bit<8> kind_t { A = 1, B = 2 }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header v_t { bit<8> v; }
header d_t {
    kind_t  kind;
    bit<8>  idx;
    bit<8>  x;
    bool    flag;
    bit<7>  pad;
    bit<8>  q;        // x / 3
    bit<8>  m;        // x % 3
    bit<8>  neg;      // -x
    bit<8>  inv;      // ~x
    bit<8>  eq;       // bit 0: v[0] == v[1]; bit 1: meta pair equal; bit 2: flag
    bit<8>  sz;       // stack size + minSizeInBytes of d_t
    bit<8>  sl;       // slice assignments
}
struct l2_t { ethernet_t eth; }
struct pair_t { bit<8> a; bit<8> b; }
struct meta_t { pair_t p1; pair_t p2; }
struct headers_t { l2_t l2; d_t d; v_t[2] vs; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.l2.eth);
        pkt.extract(hdr.d);
        transition select(hdr.d.kind) {
            kind_t.A: one;
            kind_t.B: two;
            default: accept;
        }
    }
    state one { pkt.extract(hdr.vs[0]); transition accept; }
    state two { pkt.extract(hdr.vs.next); pkt.extract(hdr.vs.next); transition accept; }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action early(inout bit<8> s) {
        s = 0x0f;
        if (hdr.d.x == 0) {
            return;
        }
        s[7:4] = 0xa;
    }
    apply {
        sm.egress_spec = 1;
        @atomic {
            hdr.d.q = hdr.d.x / 3;
            hdr.d.m = hdr.d.x % 3;
        }
        hdr.d.neg = -hdr.d.x;
        hdr.d.inv = ~hdr.d.x;
        bit<8> e = 0;
        if (hdr.vs[0] == hdr.vs[1]) { e[0:0] = 1; }
        meta.p1 = { hdr.d.x, 1 };
        meta.p2 = { a = hdr.d.x, b = 1 };
        if (meta.p1 == meta.p2) { e[1:1] = 1; }
        if (hdr.d.flag) { e = e | 4; }
        hdr.d.eq = e;
        hdr.d.sz = (bit<8>)hdr.vs.size + (bit<8>)hdr.d.minSizeInBytes();
        early(hdr.d.sl);
        if (hdr.d.idx < 2) {
            hdr.vs[hdr.d.idx].v = hdr.vs[hdr.d.idx].v + 0x10;
        }
        log_msg("x = {}, idx = {}", { hdr.d.x, hdr.d.idx });
        assert(hdr.d.pad == 0 || hdr.d.pad != 0);
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
