/* deparser.p4 -- emits the valid headers in wire order; the payload follows unchanged. */
#ifndef INNET_DEPARSER_P4
#define INNET_DEPARSER_P4

#include "include/headers.p4"

control InnetDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_options);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.agg);
        pkt.emit(hdr.agg_values);
        pkt.emit(hdr.replay);
        pkt.emit(hdr.replay_batch);
        pkt.emit(hdr.replay_entries);
    }
}

#endif
