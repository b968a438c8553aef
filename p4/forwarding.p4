/*
 * forwarding.p4 -- plain L3 (IPv4 longest prefix match, next-hop MAC rewrite, TTL) and L2
 * (exact destination MAC, or a multicast group for flooding) forwarding from tables, for all
 * traffic that is not aggregation.
 */
#ifndef INNET_FORWARDING_P4
#define INNET_FORWARDING_P4

#include "include/headers.p4"

control Forwarding(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }
    action set_nhop(mac_addr_t dst_mac, mac_addr_t src_mac, port_t port) {
        hdr.ethernet.dst_addr = dst_mac;
        hdr.ethernet.src_addr = src_mac;
        standard_metadata.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { set_nhop; drop; }
        default_action = drop();
        size = 1024;
    }

    action l2_forward(port_t port) {
        standard_metadata.egress_spec = port;
    }
    action l2_flood(bit<16> mgid) {
        standard_metadata.mcast_grp = mgid;
    }
    table l2_exact {
        key = { hdr.ethernet.dst_addr: exact; }
        actions = { l2_forward; l2_flood; drop; }
        default_action = drop();
        size = 1024;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            if (hdr.ipv4.ttl <= 1) {
                drop();
            } else {
                ipv4_lpm.apply();
            }
        } else {
            l2_exact.apply();
        }
    }
}

#endif
