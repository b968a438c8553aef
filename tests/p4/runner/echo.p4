/* STF runner test program: sends every packet back out of the port it came in on, byte for
 * byte, except:
 *   port 0  multicast group 1 (each copy gets a one-byte tag: its egress_rid)
 *   port 6  forwarded to port 6 and cloned (I2E) to session 5 (the clone gets tag 0xcc)
 *   port 7  dropped
 *   port 8  forwarded to port 9
 * The parser extracts nothing, so any bytes (even shorter than an Ethernet header) pass
 * unchanged. Counter MyIngress.pkts counts packets and bytes per ingress port 0..7.
 */
#include <core.p4>
#include <v1model.p4>

header tag_t {
    bit<8> v;
}

struct headers_t {
    tag_t tag;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(8, CounterType.packets_and_bytes) pkts;

    apply {
        if (sm.ingress_port < 8) {
            pkts.count((bit<32>)sm.ingress_port);
        }
        if (sm.ingress_port == 0) {
            sm.mcast_grp = 16w1;
        } else if (sm.ingress_port == 6) {
            clone(CloneType.I2E, 32w5);
            sm.egress_spec = 9w6;
        } else if (sm.ingress_port == 7) {
            mark_to_drop(sm);
        } else if (sm.ingress_port == 8) {
            sm.egress_spec = 9w9;
        } else {
            sm.egress_spec = sm.ingress_port;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 5) {  // a multicast copy (bmv2: PKT_INSTANCE_TYPE_REPLICATION)
            hdr.tag.setValid();
            hdr.tag.v = (bit<8>)sm.egress_rid;
        } else if (sm.instance_type == 1) {  // an ingress clone
            hdr.tag.setValid();
            hdr.tag.v = 8w0xcc;
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.tag);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
