/* STF runner test program: one table per match kind, for the translation of `add` lines.
 *   MyIngress.fwd       exact hdr.ethernet.dstAddr + exact standard_metadata.ingress_port
 *   MyIngress.tern      ternary hdr.data.f1, exact hdr.h.isValid(), ternary hdr.extra[0].h;
 *                       direct counter MyIngress.tern_ctr
 *   MyIngress.ipv4_lpm  lpm hdr.ipv4.dstAddr
 *   MyIngress.rng       range meta.port (= hdr.extra[0].h) + optional meta.opt (= hdr.data.b1)
 *   MyEgress.fwd        exact hdr.ethernet.dstAddr (makes the plain name "fwd" ambiguous)
 * Actions: set_port(port) sets egress_spec; setb1(val, port) also writes hdr.data.b1.
 * Externs for the STF commands: register MyIngress.reg, counter MyIngress.pkts, meter MyIngress.m.
 * Packets: Ethernet, then (etherType 0x0800) ipv4_t, or data_t [+ h_t when data.b1 == 1]
 * + one extra_t.
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<32> dstAddr;
}

header data_t {
    bit<32> f1;
    bit<8>  b1;
}

header h_t {
    bit<8> v;
}

header extra_t {
    bit<16> h;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    data_t     data;
    h_t        h;
    extra_t[2] extra;
}

struct meta_t {
    bit<16> port;
    bit<8>  opt;
    bit<32> r;
    bit<2>  color;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: parse_data;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
    state parse_data {
        pkt.extract(hdr.data);
        transition select(hdr.data.b1) {
            1: parse_h;
            default: parse_extra;
        }
    }
    state parse_h {
        pkt.extract(hdr.h);
        transition parse_extra;
    }
    state parse_extra {
        pkt.extract(hdr.extra.next);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) tern_ctr;
    register<bit<32>>(4) reg;
    counter(8, CounterType.packets_and_bytes) pkts;
    meter(2, MeterType.bytes) m;

    action set_port(bit<9> port) {
        sm.egress_spec = port;
    }

    action setb1(bit<8> val, bit<9> port) {
        hdr.data.b1 = val;
        sm.egress_spec = port;
    }

    table fwd {
        key = {
            hdr.ethernet.dstAddr: exact;
            sm.ingress_port: exact;
        }
        actions = { set_port; setb1; NoAction; }
        size = 1024;
        default_action = NoAction();
    }

    table tern {
        key = {
            hdr.data.f1: ternary;
            hdr.h.isValid(): exact;
            hdr.extra[0].h: ternary;
        }
        actions = { set_port; setb1; NoAction; }
        size = 1024;
        default_action = NoAction();
        counters = tern_ctr;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = { set_port; setb1; NoAction; }
        size = 1024;
        default_action = NoAction();
    }

    table rng {
        key = {
            meta.port: range;
            meta.opt: optional;
        }
        actions = { set_port; setb1; NoAction; }
        size = 16;
        default_action = NoAction();
    }

    apply {
        meta.port = hdr.extra[0].h;
        meta.opt = hdr.data.b1;
        reg.read(meta.r, 0);
        pkts.count(0);
        m.execute_meter(0, meta.color);
        fwd.apply();
        if (hdr.data.isValid()) {
            tern.apply();
            rng.apply();
        }
        if (hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_port(bit<9> port) {
        sm.egress_spec = port;
    }

    table fwd {
        key = {
            hdr.ethernet.dstAddr: exact;
        }
        actions = { set_port; NoAction; }
        size = 16;
        default_action = NoAction();
    }

    apply {
        fwd.apply();
    }
}

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.data);
        pkt.emit(hdr.h);
        pkt.emit(hdr.extra);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
