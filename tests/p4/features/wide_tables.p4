// Tables, action parameters, hashes and a register on 128-bit (IPv6-like) addresses and a
// 72-bit key: values wider than one 64-bit machine word (P4-16 spec "Match kinds" / "Table
// properties": exact, ternary, lpm and range keys of any bit<W>; v1model's hash and register).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header ip6_t {
    bit<128> src;
    bit<128> dst;
    bit<8>   e;     // by_src (exact on src)
    bit<8>   t;     // tern (ternary on dst)
    bit<8>   l;     // route (lpm on dst)
    bit<8>   x;     // lpm72 (lpm on dst[71:0])
    bit<8>   rg;    // by_range (range on dst)
    bit<16>  h16;   // crc16 over dst
    bit<32>  h32;   // crc32 over src, dst (src as route left it)
    bit<128> old;   // r[0] before this packet; r[0] = dst afterwards
}

struct headers_t {
    ethernet_t eth;
    ip6_t      ip6;
}

struct meta_t {
    bit<72> k72;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.ip6);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<128>>(4) r;

    action mark_e(bit<8> v) { hdr.ip6.e = v; }
    action mark_t(bit<8> v) { hdr.ip6.t = v; }
    action mark_x(bit<8> v) { hdr.ip6.x = v; }
    action mark_r(bit<8> v) { hdr.ip6.rg = v; }
    action route_to(bit<9> port, bit<8> tag, bit<128> new_src) {
        sm.egress_spec = port;
        hdr.ip6.l = tag;
        hdr.ip6.src = new_src;
    }
    action no_route() {
        sm.egress_spec = 9w3;
        hdr.ip6.l = 0xee;
    }

    table by_src {
        key = { hdr.ip6.src: exact; }
        actions = { mark_e; NoAction; }
        default_action = NoAction();
    }
    table tern {
        key = { hdr.ip6.dst: ternary; }
        actions = { mark_t; NoAction; }
        default_action = NoAction();
    }
    table route {
        key = { hdr.ip6.dst: lpm; }
        actions = { route_to; no_route; }
        default_action = no_route();
    }
    table by_range {
        key = { hdr.ip6.dst: range; }
        actions = { mark_r; NoAction; }
        default_action = NoAction();
    }
    table lpm72 {
        key = { meta.k72: lpm; }
        actions = { mark_x; NoAction; }
        default_action = NoAction();
    }

    apply {
        meta.k72 = hdr.ip6.dst[71:0];
        by_src.apply();
        tern.apply();
        route.apply();
        lpm72.apply();
        by_range.apply();
        hash(hdr.ip6.h16, HashAlgorithm.crc16, 16w0, { hdr.ip6.dst }, 32w65536);
        hash(hdr.ip6.h32, HashAlgorithm.crc32, 32w0, { hdr.ip6.src, hdr.ip6.dst }, 33w0x100000000);
        r.read(hdr.ip6.old, 0);
        r.write(0, hdr.ip6.dst);
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ip6);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
