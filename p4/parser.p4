/*
 * parser.p4 -- Ethernet / IPv4 / UDP, then the aggregation header on AGG_UDP_PORT or the replay
 * header on REPLAY_UDP_PORT, to or from the server (and a switch-path batch's entries after it).
 * A packet that is too short or has the wrong UDP length is not dropped here: ingress sees the
 * headers it has and rejects it with a counted reason.
 */
#ifndef INNET_PARSER_P4
#define INNET_PARSER_P4

#include "include/headers.p4"

parser InnetParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        // Packets with IP options, and fragments, are forwarded but not parsed beyond IPv4.
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_UDP): parse_udp;
            (5, _, _): accept;
            (0 .. 4, _, _): accept;      // malformed; routing will not find it a next hop
            default: parse_ipv4_options;
        }
    }
    state parse_ipv4_options {
        pkt.extract(hdr.ipv4_options, (bit<32>)hdr.ipv4.ihl * 32 - 160);
        transition accept;
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port, hdr.udp.src_port) {
            (AGG_UDP_PORT, _): parse_agg;
            (REPLAY_UDP_PORT, _): parse_replay;
            (_, REPLAY_UDP_PORT): parse_replay_reply;
            default: accept;
        }
    }
    state parse_agg {
        pkt.extract(hdr.agg);
        transition select(hdr.udp.length) {
            AGG_UDP_LEN_FULL: parse_agg_values;
            default: accept;
        }
    }
    state parse_agg_values {
        pkt.extract(hdr.agg_values);
        transition accept;
    }
    state parse_replay {
        pkt.extract(hdr.replay);
        transition select(hdr.replay.flags) {
            REPLAY_FLAG_MULTI &&& REPLAY_FLAG_MULTI: parse_replay_batch;
            default: accept;
        }
    }
    // The server's replies: only a PUSH_REPLY carrying the pushed items' leaves (flag MULTI) has
    // a batch for the switch; every other reply is forwarded as it came.
    state parse_replay_reply {
        pkt.extract(hdr.replay);
        transition select(hdr.replay.op, hdr.replay.flags) {
            (REPLAY_OP_PUSH_REPLY, REPLAY_FLAG_MULTI &&& REPLAY_FLAG_MULTI): parse_replay_batch;
            default: accept;
        }
    }
    // A batch's entries; a count out of range leaves them unparsed (ingress forwards the
    // datagram to the server, which answers MALFORMED).
    state parse_replay_batch {
        pkt.extract(hdr.replay_batch);
        meta.replay.entries_left = hdr.replay_batch.count;
        transition select(hdr.replay_batch.count) {
            1 .. REPLAY_MAX_ENTRIES: parse_replay_entry;
            default: accept;
        }
    }
    state parse_replay_entry {
        pkt.extract(hdr.replay_entries.next);
        meta.replay.entries_left = meta.replay.entries_left - 1;
        transition select(meta.replay.entries_left) {
            0: accept;
            default: parse_replay_entry;
        }
    }
}

#endif
