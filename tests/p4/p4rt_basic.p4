/* P4Runtime server test program (v1model).
 * Control-plane objects, with the names p4c gives them:
 *   MyIngress.ipv4_lpm    exact standard_metadata.ingress_port + lpm hdr.ipv4.dstAddr
 *   MyIngress.acl         ternary hdr.ethernet.etherType + ternary hdr.ipv4.srcAddr,
 *                         direct counter MyIngress.acl_counter
 *   MyIngress.port_counter, MyIngress.last_seen (register), packet_in / packet_out headers,
 *   digest learn_t (source MAC and ingress port of every frame with etherType 0x88b5).
 * Packet-out: the packet_out header names the egress port. Packet-in: anything sent to
 * CPU_PORT gets a packet_in header with its ingress port.
 */
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 64;

@controller_header("packet_out")
header packet_out_header_t {
    bit<9> egress_port;
    bit<7> _pad;
}

@controller_header("packet_in")
header packet_in_header_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

struct headers {
    packet_out_header_t packet_out;
    packet_in_header_t  packet_in;
    ethernet_t          ethernet;
    ipv4_t              ipv4;
}

struct learn_t {
    bit<48> mac;
    bit<9>  port;
}

struct metadata {
    learn_t learn;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    counter(64, CounterType.packets_and_bytes) port_counter;
    direct_counter(CounterType.packets_and_bytes) acl_counter;
    register<bit<32>>(16) last_seen;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action ipv4_forward(bit<48> dstAddr, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    action send_to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
    }

    table ipv4_lpm {
        key = {
            standard_metadata.ingress_port: exact;
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            ipv4_forward;
            drop;
            NoAction;
        }
        size = 1024;
        default_action = NoAction();
    }

    table acl {
        key = {
            hdr.ethernet.etherType: ternary;
            hdr.ipv4.srcAddr: ternary;
        }
        actions = {
            send_to_cpu;
            drop;
            NoAction;
        }
        size = 256;
        default_action = NoAction();
        counters = acl_counter;
    }

    apply {
        if (standard_metadata.ingress_port == CPU_PORT) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            port_counter.count((bit<32>) standard_metadata.ingress_port);
            if (hdr.ethernet.etherType == 0x88b5) {
                meta.learn.mac = hdr.ethernet.srcAddr;
                meta.learn.port = standard_metadata.ingress_port;
                digest<learn_t>(1, meta.learn);
            }
            if (hdr.ipv4.isValid()) {
                last_seen.write((bit<32>) standard_metadata.ingress_port, hdr.ipv4.srcAddr);
                ipv4_lpm.apply();
            }
            acl.apply();
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
