/*
 * aggregation_egress.p4 -- addresses each result (multicast replica or unicast reply) to its
 * member, from the member's entry for the job, and counts the results sent per job.
 */
#ifndef INNET_AGGREGATION_EGRESS_P4
#define INNET_AGGREGATION_EGRESS_P4

#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"

control AggregationEgress(inout headers_t hdr, inout metadata_t meta,
                          inout standard_metadata_t standard_metadata) {
    // packets aggregation sends per job: results (multicast replicas and unicast replies,
    // STALE included) and partial aggregates sent up to a parent
    counter(AGG_MAX_JOBS, CounterType.packets) agg_results;

    action set_member_addr(mac_addr_t mac, ipv4_addr_t ip, bit<16> udp_port) {
        hdr.ethernet.dst_addr = mac;
        hdr.ipv4.dst_addr = ip;
        hdr.udp.dst_port = udp_port;
    }
    action drop() {
        mark_to_drop(standard_metadata);
    }
    // The multicast replica's egress_rid is the member's worker id (control_plane sets it so).
    table agg_member_addr {
        key = { hdr.agg.job_id: exact; meta.agg.reply_member: exact; }
        actions = { set_member_addr; @defaultonly drop; }
        default_action = drop();
        size = 4096;
    }

    apply {
        if (meta.agg.emit == AGG_EMIT_MEMBER) {
            if ((bit<32>)standard_metadata.instance_type == PKT_INSTANCE_TYPE_REPLICATION) {
                meta.agg.reply_member = (worker_id_t)standard_metadata.egress_rid;
            }
            if (agg_member_addr.apply().hit) {
                agg_results.count((bit<32>)hdr.agg.job_id);
            }
        } else if (meta.agg.emit == AGG_EMIT_PARENT) {
            agg_results.count((bit<32>)hdr.agg.job_id);
        }
    }
}

#endif
