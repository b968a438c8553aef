// Generic structs, headers and functions (P4-16 v1.2.4 section 7.2.12 "Type specialization"
// of generic structs and headers, section 10 functions with type parameters): the front end
// makes one type per distinct specialization (H<bit<8>> and H<bit<16>> are different headers;
// Pair<bit<8>, bit<8>> inside Wrap<bit<8>> is the same type as written out) and one copy of a
// generic function per instantiation, with type arguments given (f<bit<8>>(...)) or inferred
// from the arguments (also through a generic struct parameter).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header H<T> {
    T a;
    T b;
}

struct Pair<A, B> {
    A first;
    B second;
}

struct Wrap<T> {
    Pair<T, T> p;
    bit<8>     tag;
}

struct headers_t {
    ethernet_t  eth;
    H<bit<8>>   h8;
    H<bit<16>>  h16;
}

struct meta_t {
    Pair<bit<8>, bit<16>> p;
    Wrap<bit<8>>          w;
}

T id<T>(in T x) {
    return x;
}

T pick<T>(in bool c, in T x, in T y) {
    if (c) {
        return x;
    }
    return y;
}

void swap<T>(inout T a, inout T b) {
    T t = a;
    a = b;
    b = t;
}

T first<T>(in Pair<T, T> p) {
    return p.first;
}

Pair<A, B> mk<A, B>(in A a, in B b) {
    Pair<A, B> r = { first = a, second = b };
    return r;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.h8);
        transition select(hdr.h8.a) {
            8w0xee: accept;
            default: parse_h16;
        }
    }
    state parse_h16 {
        pkt.extract(hdr.h16);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (!hdr.h16.isValid()) {
            sm.egress_spec = 9w3;
            return;
        }
        hdr.h8.a = id(hdr.h8.a) + 8w1;                 // T = bit<8>: wraps at 8 bits
        hdr.h16.a = id(hdr.h16.a) + 16w1;              // T = bit<16>: another instantiation
        hdr.h8.b = id<bit<8>>(hdr.h8.b) + 8w1;         // explicit type argument
        swap(hdr.h16.a, hdr.h16.b);                    // inout T, T = bit<16>
        meta.p = mk(hdr.h8.a, hdr.h16.b);              // A = bit<8>, B = bit<16>
        meta.w.p = mk<bit<8>, bit<8>>(3, 4);           // untyped arguments take the given types
        Pair<bit<8>, bit<8>> q = { first = 8w0x10, second = 8w0 };
        hdr.eth.etype = meta.p.second + (bit<16>)meta.p.first;
        hdr.h8.b = hdr.h8.b + first(meta.w.p) + first(q);   // T inferred through Pair<T, T>
        sm.egress_spec = (bit<9>)pick(hdr.h8.a == 8w0, 8w1, 8w2);
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.h8);
        pkt.emit(hdr.h16);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
