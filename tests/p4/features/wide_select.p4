// Parser select and control switch on values wider than 64 bits: select on a bit<128> field with
// single values, a mask and a range, on lookahead<bit<128>>() (P4-16 spec "Select expressions",
// "Lookahead": the bits are not consumed), and a switch statement on a bit<72> slice
// ("Switch statement": its cases are compile-time values of the expression's type).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header key_t {
    bit<128> k;
}

header out_t {
    bit<8> path;     // which select case the parser took
    bit<8> sw;       // which switch case ran
}

struct headers_t {
    ethernet_t eth;
    key_t      key;
    out_t      o;
}

struct meta_t {
    bit<8> path;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(pkt.lookahead<bit<128>>()) {
            128w0xffffffffffffffffffffffffffffffff: all_ones;   // peeked, not extracted
            default: parse_key;
        }
    }
    state all_ones {
        meta.path = 0x0f;
        pkt.extract(hdr.key);
        transition accept;
    }
    state parse_key {
        pkt.extract(hdr.key);
        transition select(hdr.key.k) {
            128w0x20010db8000000000000000000000001: one;
            128w0x20010db8000000000000000000000000 &&& 128w0xffffffff000000000000000000000000: db8;
            128w0x00000000000000010000000000000000 .. 128w0x0000000000000002ffffffffffffffff: mid;
            default: accept;
        }
    }
    state one { meta.path = 0x01; transition accept; }
    state db8 { meta.path = 0x02; transition accept; }
    state mid { meta.path = 0x03; transition accept; }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.o.setValid();
        hdr.o.path = meta.path;
        switch (hdr.key.k[71:0]) {
            72w0x000000000000000001: { hdr.o.sw = 0x01; }
            72w0x000000000000000000:
            72w0xff0000000000000000: { hdr.o.sw = 0x02; }
            default: { hdr.o.sw = 0x03; }
        }
        sm.egress_spec = 9w1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.key);
        pkt.emit(hdr.o);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
