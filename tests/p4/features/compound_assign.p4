// Compound assignments (P4-16 v1.2.4, "Assignment statement": `a op= b` is `a = a op b` with
// `a` evaluated once), every operator on bit<8> fields; compound_assign.stf has the results
// worked out by hand.
#include <core.p4>
#include <v1model.p4>

header ops_t {
    bit<8> add; bit<8> sub; bit<8> mul; bit<8> div; bit<8> mod; bit<8> band;
    bit<8> bor; bit<8> bxor; bit<8> shl; bit<8> shr; bit<8> satadd; bit<8> satsub;
}
struct headers_t { ops_t ops; }
struct meta_t { }

parser CParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ops); transition accept; }
}
control CVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control CIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.ops.add += 5;
        hdr.ops.sub -= 3;
        hdr.ops.mul *= 3;
        hdr.ops.div /= 4;
        hdr.ops.mod %= 8;  // by a power of two: p4c-bm2-ss divides no other run-time value
        hdr.ops.band &= 0x0F;
        hdr.ops.bor |= 0x80;
        hdr.ops.bxor ^= 0xFF;
        hdr.ops.shl <<= 2;
        hdr.ops.shr >>= 3;
        hdr.ops.satadd |+|= 200;
        hdr.ops.satsub |-|= 100;
        sm.egress_spec = 2;
    }
}
control CEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control CDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ops); } }

V1Switch(CParser(), CVerify(), CIngress(), CEgress(), CCompute(), CDeparser()) main;
