/*
 * basic_router.p4 -- the example program of `make run`: IPv4 longest-prefix-match routing
 * with next-hop MAC rewrite, TTL decrement and header checksum update, per-port packet
 * counters, and a packet-in path to the controller for packets that match no route.
 * Standard P4-16 for v1model (p4c-bm2-ss compiles it unchanged).
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<9>  CPU_PORT = 64;

typedef bit<48> mac_t;
typedef bit<32> ip4_t;

@controller_header("packet_in")
header packet_in_h { bit<9> ingress_port; bit<7> _pad; }

@controller_header("packet_out")
header packet_out_h { bit<9> egress_port; bit<7> _pad; }

header ethernet_h { mac_t dst; mac_t src; bit<16> ether_type; }

header ipv4_h {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> total_len;
    bit<16> identification; bit<3> flags; bit<13> frag_offset;
    bit<8> ttl; bit<8> protocol; bit<16> hdr_checksum;
    ip4_t src; ip4_t dst;
}

struct headers_t {
    packet_out_h packet_out;
    packet_in_h  packet_in;
    ethernet_h   ethernet;
    ipv4_h       ipv4;
}

struct metadata_t { }

parser RouterParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control RouterVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control RouterIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    counter(128, CounterType.packets_and_bytes) rx_port_counter;

    action drop() {
        mark_to_drop(sm);
    }
    action to_controller() {
        sm.egress_spec = CPU_PORT;
    }
    action set_nhop(mac_t dst_mac, mac_t src_mac, bit<9> port) {
        hdr.ethernet.dst = dst_mac;
        hdr.ethernet.src = src_mac;
        sm.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dst: lpm; }
        actions = { set_nhop; drop; to_controller; }
        default_action = to_controller();
        size = 1024;
    }

    apply {
        rx_port_counter.count((bit<32>) sm.ingress_port);
        if (hdr.packet_out.isValid()) {
            // from the controller: send out of the port it asks for, without the header
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            exit;
        }
        if (!hdr.ipv4.isValid() || sm.checksum_error == 1 || hdr.ipv4.ttl <= 1) {
            drop();
            exit;
        }
        ipv4_lpm.apply();
    }
}

control RouterEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control RouterComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control RouterDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(RouterParser(), RouterVerifyChecksum(), RouterIngress(), RouterEgress(),
         RouterComputeChecksum(), RouterDeparser()) main;
