/*
 * innet.p4 -- the innet-drl data plane (v1model): plain L2/L3 forwarding plus in-switch
 * gradient aggregation and the priorities of prioritized experience replay.
 * Thin by design: each function lives in its own control file.
 */
#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"
#include "parser.p4"
#include "verify_checksum.p4"
#include "forwarding.p4"
#include "aggregation.p4"
#include "aggregation_egress.p4"
#include "replay.p4"
#include "compute_checksum.p4"
#include "deparser.p4"

control InnetIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    Forwarding() forwarding;
    Aggregation() aggregation;
    Replay() replay;

    apply {
        if (hdr.ipv4.isValid() && standard_metadata.checksum_error == 1) {
            mark_to_drop(standard_metadata);
        } else if (hdr.udp.isValid() && hdr.udp.dst_port == AGG_UDP_PORT) {
            aggregation.apply(hdr, meta, standard_metadata);
        } else if (hdr.replay.isValid()) {
            // UPDATE_PRIORITY of a table the switch holds goes back to its sender, a batch's
            // pass but its last recirculates; everything else (SAMPLE annotated with the chosen
            // leaves, other ops and tables) goes to the server.
            replay.apply(hdr, meta, standard_metadata);
            if (meta.replay.reflected == 0 && meta.replay.again == 0) {
                forwarding.apply(hdr, meta, standard_metadata);
            }
        } else {
            forwarding.apply(hdr, meta, standard_metadata);
        }
    }
}

control InnetEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    AggregationEgress() aggregation_egress;

    apply {
        aggregation_egress.apply(hdr, meta, standard_metadata);
        if (meta.replay.again == 1) {
            recirculate_preserving_field_list(REPLAY_FIELD_LIST);  // a replay batch's next entry
        }
    }
}

V1Switch(InnetParser(), InnetVerifyChecksum(), InnetIngress(), InnetEgress(),
         InnetComputeChecksum(), InnetDeparser()) main;
