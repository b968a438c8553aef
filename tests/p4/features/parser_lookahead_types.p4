// packet_in.lookahead<T>() for the fixed-width types T that P4-16 v1.2.4 section 12.8.3
// ("Lookahead") allows and p4c's bmv2 back end reads: a typedef of bit<12> (not a multiple of
// 8 bits), int<7> (sign), bool, a struct with a nested struct (fields across byte boundaries)
// and a nested header (valid, filled), a header used in a select and assigned to a header, and
// a 72-bit struct. A lookahead never moves the cursor; one that reads past the end of the
// packet fails with error.PacketTooShort.
#include <core.p4>
#include <v1model.p4>

typedef bit<12> twelve_t;

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header tag_t {           // 24 bits
    bit<4>  ver;
    bit<12> id;          // spans bytes 0 and 1
    bit<8>  len;
}

struct pair_t {          // 8 bits, starting at bit 4: spans a byte boundary
    bit<3> a;
    int<5> b;
}

struct look_t {          // 4 + 8 + 1 + 11 + 24 = 48 bits
    bit<4>  hi;
    pair_t  p;
    bool    flag;
    bit<11> rest;
    tag_t   tag;
}

struct big_t {           // 72 bits (wider than 64)
    tag_t   t1;
    bit<48> x;
}

header res_t {           // what the parser saw, written by ingress after Ethernet (19 bytes)
    bit<16> b12;
    bit<8>  i7;
    bit<8>  flag;
    bit<8>  hi;
    bit<8>  a;
    bit<8>  b;
    bit<8>  sflag;
    bit<16> rest;
    bit<8>  tvalid;
    bit<8>  tver;
    bit<16> tid;
    bit<8>  tlen;
    bit<16> bid;
    bit<8>  bx;
    bit<8>  perr;
}

struct headers_t {
    ethernet_t eth;
    res_t      res;
    tag_t      peek;
    tag_t      tag;
}

struct meta_t {
    twelve_t b12;
    int<7>   i7;
    bool     flag;
    bit<4>   hi;
    bit<3>   a;
    int<5>   b;
    bool     sflag;
    bit<11>  rest;
    bool     tvalid;
    bit<4>   tver;
    bit<12>  tid;
    bit<8>   tlen;
    bit<12>  bid;
    bit<8>   bx;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    look_t s;
    big_t big;
    state start {
        pkt.extract(hdr.eth);
        meta.b12 = pkt.lookahead<twelve_t>();
        meta.i7 = pkt.lookahead<int<7>>();
        meta.flag = pkt.lookahead<bool>();
        s = pkt.lookahead<look_t>();
        meta.hi = s.hi;
        meta.a = s.p.a;
        meta.b = s.p.b;
        meta.sflag = s.flag;
        meta.rest = s.rest;
        meta.tvalid = s.tag.isValid();
        meta.tver = s.tag.ver;
        meta.tid = s.tag.id;
        meta.tlen = s.tag.len;
        transition select(pkt.lookahead<tag_t>().ver, s.flag) {
            (4w0xf, false): wide;
            default: parse_tag;
        }
    }
    state parse_tag {
        hdr.peek = pkt.lookahead<tag_t>();
        pkt.extract(hdr.tag);    // the same bytes again: the lookaheads did not consume them
        transition accept;
    }
    state wide {
        big = pkt.lookahead<big_t>();
        meta.bid = big.t1.id;
        meta.bx = big.x[7:0];
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.res.setValid();
        hdr.res.b12 = (bit<16>)meta.b12;
        hdr.res.i7 = (bit<8>)(int<8>)meta.i7;
        hdr.res.flag = meta.flag ? 8w1 : 8w0;
        hdr.res.hi = (bit<8>)meta.hi;
        hdr.res.a = (bit<8>)meta.a;
        hdr.res.b = (bit<8>)(int<8>)meta.b;
        hdr.res.sflag = meta.sflag ? 8w1 : 8w0;
        hdr.res.rest = (bit<16>)meta.rest;
        hdr.res.tvalid = meta.tvalid ? 8w1 : 8w0;
        hdr.res.tver = (bit<8>)meta.tver;
        hdr.res.tid = (bit<16>)meta.tid;
        hdr.res.tlen = meta.tlen;
        hdr.res.bid = (bit<16>)meta.bid;
        hdr.res.bx = meta.bx;
        hdr.res.perr = sm.parser_error == error.PacketTooShort ? 8w1 : 8w0;
        sm.egress_spec = 9w1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.res);
        pkt.emit(hdr.peek);
        pkt.emit(hdr.tag);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
