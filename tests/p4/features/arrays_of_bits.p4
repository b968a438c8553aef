// Arrays of non-header element types (`bit<8>[4]`): p4-spec PR 1360 ("Add arrays of non-header
// types", merged in 2025, after v1.2.5) generalizes the header stacks of P4-16 v1.2.4 section
// 7.2.3 (`T[N]` for a header or header union T) to arrays of other types, with indexing by
// constants and run-time values (section 8.18's rules for stacks) and `.size`, but none of the
// stack operations (next, last, push_front, ...); p4c accepts them since 2025 (testdata
// array1.p4 has `bit<8>[16]` as a header field). p4c-bm2-ss v1.2.4 refuses the syntax.
// arrays_of_bits.stf has the results worked out by hand.
#include <core.p4>
#include <v1model.p4>

header a_t {
    bit<8>[4] b;   // serialized element 0 first
    int<4>[2] s;   // one byte: s[0] high nibble, s[1] low nibble
    bit<8> i;      // run-time indexes
    bit<8> j;
    bit<8> r0;     // results
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
}
struct headers_t { a_t a; }
struct meta_t { bit<16>[3] m; bool[2] f; }

parser CParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.a); transition accept; }
}
control CVerify(inout headers_t hdr, inout meta_t meta) { apply { } }
control CIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_port(bit<9> p) { sm.egress_spec = p; }
    action bump(inout bit<8> x) { x = x + 0x10; }
    table by_elem {
        key = { hdr.a.b[1] : exact; }
        actions = { set_port; NoAction; }
        default_action = NoAction();
    }
    apply {
        bit<8>[4] orig = hdr.a.b;              // a whole array copied into a local
        hdr.a.r0 = hdr.a.b[3];                 // constant index read
        hdr.a.r1 = hdr.a.b[hdr.a.i];           // run-time index read (out of range: 0 here)
        hdr.a.b[0] = hdr.a.b[0] + 1;           // constant index write
        hdr.a.b[hdr.a.j] = 0xEE;               // run-time index write (out of range: no write)
        hdr.a.b[2][3:0] = 4w0xA;               // a slice of an element as an l-value
        bump(hdr.a.b[hdr.a.i]);                // an element as an inout argument
        int<8> wide = (int<8>)hdr.a.s[1];      // int<4> element, sign-extended
        hdr.a.s[0] = -1;
        meta.m[2] = 0x1234;                    // an array field of a struct
        meta.f[1] = true;
        bit<8> flags = 0;
        if (orig == hdr.a.b) { flags = flags | 1; }                   // whole-array ==
        if (orig != hdr.a.b) { flags = flags | 2; }
        orig = hdr.a.b;                                               // whole-array assignment
        if (orig == hdr.a.b) { flags = flags | 4; }
        if (meta.f[1] && !meta.f[0]) { flags = flags | 8; }
        hdr.a.r2 = (bit<8>)wide;
        hdr.a.r3 = flags | ((bit<8>)orig.size << 4);                 // .size is 4
        hdr.a.r4 = meta.m[2][15:8] ^ meta.m[2][7:0];
        sm.egress_spec = 1;
        by_elem.apply();
    }
}
control CEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control CDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.a); } }

V1Switch(CParser(), CVerify(), CIngress(), CEgress(), CCompute(), CDeparser()) main;
