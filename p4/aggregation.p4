/*
 * aggregation.p4 -- in-switch gradient aggregation (iSwitch / SwitchML style), packet by packet.
 *
 * Every job owns a range of slots of a shared pool (agg_jobs). A slot holds one packet's worth
 * of values; it is used again and again, each use a "round". Round r lives in cell
 * slot * 2 + r % 2 (the shadow copy), so while round r+1 fills, round r's result stays readable
 * for workers whose result packet was lost.
 *
 * A DATA packet from a member, for its round of a slot:
 *   - newer round than the cell holds: the cell restarts (first contribution writes);
 *   - same round, worker not yet seen: the contribution is added while fewer than the job's
 *     threshold have arrived; the one that reaches the threshold sends the result
 *     (multicast to the members, or up to the parent switch when this switch is a child);
 *   - same round, worker already seen (a retransmission) or arriving after the threshold
 *     (asynchronous mode, a late worker): nothing is added; if the round is complete the result
 *     goes back to that worker alone, otherwise the packet is dropped;
 *   - older round than the cell holds: STALE goes back to the sender.
 * A RESULT packet from the parent (this switch a child) overwrites the cell with the final
 * result and is multicast to the local members.
 *
 * Isolation: a packet is checked against its job (known job, member arriving on the member's
 * port, slot inside the job's range, well formed) before any register is touched, and the cell index is computed from the
 * job's own slot base, so no packet can reach another job's cells.
 *
 * Hardware portability (DESIGN.md): each register array is accessed once per pass (read, then
 * at most one write to the same cell, i.e. one read-modify-write), on 32 bits or less, with
 * add/and/or/min/max only; shifts are by constants; no loops; sizes are constants.
 */
#ifndef INNET_AGGREGATION_P4
#define INNET_AGGREGATION_P4

#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"

control Aggregation(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    // ---- slot state, one cell per (slot, shadow copy) ----
    register<bit<16>>(AGG_CELLS) agg_round;                  // round the cell holds
    register<worker_bitmap_t>(AGG_CELLS) agg_bitmap;         // members seen in the round
    register<bit<16>>(AGG_CELLS) agg_count;                  // contributions (+ AGG_FINAL)
    register<worker_bitmap_t>(AGG_CELLS) agg_result_bitmap;  // members in the result
    register<bit<16>>(AGG_CELLS) agg_contrib;                // worker gradients in the values
    register<bit<8>>(AGG_CELLS) agg_exp;                     // max next_exp
    register<bit<32>>(AGG_CELLS) agg_version_lo;             // min model version
    register<bit<32>>(AGG_CELLS) agg_version_hi;             // max model version
#define AGG_VALUE_REGISTER(i) register<bit<32>>(AGG_CELLS) agg_value_##i;
    AGG_VALUE_LIST(AGG_VALUE_REGISTER)

    // ---- counters the control plane reads ----
    counter(AGG_MAX_JOBS, CounterType.packets) agg_aggregated;       // packets counted (header-only too)
    counter(AGG_MAX_JOBS, CounterType.packets) agg_retransmissions;  // duplicates and late ones
    counter(AGG_MAX_JOBS, CounterType.packets) agg_stale;            // older rounds, answered STALE
    counter(AGG_REJECT_REASONS, CounterType.packets) agg_rejected;   // by AGG_REJECT_* reason

    action reject(bit<32> reason) {
        agg_rejected.count(reason);
        mark_to_drop(standard_metadata);
        meta.agg.emit = AGG_EMIT_NONE;
    }

    // ---- jobs and members (installed by control_plane.aggregation) ----
    action set_job(bit<16> slot_base, bit<16> num_slots, bit<16> threshold, bit<16> mgid,
                   mac_addr_t switch_mac, ipv4_addr_t switch_ip) {
        meta.agg.bad_slot = (hdr.agg.slot < num_slots) ? 1w0 : 1w1;
        meta.agg.cell = ((bit<32>)(slot_base + hdr.agg.slot) << 1) | (bit<32>)hdr.agg.round[0:0];
        meta.agg.threshold = threshold;
        meta.agg.mgid = mgid;
        meta.agg.switch_mac = switch_mac;
        meta.agg.switch_ip = switch_ip;
    }
    table agg_jobs {
        key = { hdr.agg.job_id: exact; }
        actions = { set_job; @defaultonly NoAction; }
        default_action = NoAction();
        size = AGG_MAX_JOBS;
    }

    // A member is bound to the switch port it is cabled to: another host cannot speak for it.
    action set_member(worker_bitmap_t worker_bit, port_t port) {
        meta.agg.worker_bit = worker_bit;
        meta.agg.member_port = port;
    }
    table agg_members {
        key = { hdr.agg.job_id: exact; hdr.agg.worker_id: exact; }
        actions = { set_member; @defaultonly NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    // Present only on a child switch of a hierarchical job.
    action set_parent(mac_addr_t parent_mac, ipv4_addr_t parent_ip, port_t parent_port,
                      worker_id_t id_at_parent) {
        meta.agg.is_child = 1;
        meta.agg.parent_mac = parent_mac;
        meta.agg.parent_ip = parent_ip;
        meta.agg.parent_port = parent_port;
        meta.agg.id_at_parent = id_at_parent;
    }
    table agg_parent {
        key = { hdr.agg.job_id: exact; }
        actions = { set_parent; @defaultonly NoAction; }
        default_action = NoAction();
        size = AGG_MAX_JOBS;
    }

    // ---- where the packet goes ----
    action from_switch() {
        hdr.ethernet.src_addr = meta.agg.switch_mac;
        hdr.ipv4.src_addr = meta.agg.switch_ip;
        hdr.ipv4.ttl = 64;
        hdr.udp.src_port = AGG_UDP_PORT;
        hdr.udp.checksum = 0;
    }
    action multicast_result() {
        from_switch();
        hdr.agg.op = AGG_OP_RESULT;
        hdr.agg.flags = 0;
        standard_metadata.mcast_grp = meta.agg.mgid;
        meta.agg.emit = AGG_EMIT_MEMBER;
    }
    // To the sender alone; egress fills in its addresses from agg_member_addr.
    action reply(bit<8> op) {
        from_switch();
        hdr.agg.op = op;
        hdr.agg.flags = AGG_FLAG_RETX;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
        meta.agg.reply_member = hdr.agg.worker_id;
        meta.agg.emit = AGG_EMIT_MEMBER;
    }
    // The partial aggregate of a child switch goes up as one DATA packet of the child.
    action to_parent(bit<8> flags) {
        from_switch();
        hdr.ethernet.dst_addr = meta.agg.parent_mac;
        hdr.ipv4.dst_addr = meta.agg.parent_ip;
        hdr.udp.dst_port = AGG_UDP_PORT;
        hdr.agg.op = AGG_OP_DATA;
        hdr.agg.flags = flags;
        hdr.agg.worker_id = meta.agg.id_at_parent;
        hdr.agg.bitmap = 0;
        standard_metadata.egress_spec = meta.agg.parent_port;
        meta.agg.emit = AGG_EMIT_PARENT;
    }

    apply {
        bool ok = false;
        // Well formed: the UDP and IPv4 lengths agree and announce a header-only or a full
        // packet, and the frame really holds what they announce (a cut frame leaves the parser
        // with an error and the values header invalid).
        if (!hdr.agg.isValid()
                || standard_metadata.parser_error != error.NoError
                || (hdr.udp.length != AGG_UDP_LEN_FULL && hdr.udp.length != AGG_UDP_LEN_HEADER_ONLY)
                || (hdr.udp.length == AGG_UDP_LEN_FULL && !hdr.agg_values.isValid())
                || hdr.ipv4.total_len != hdr.udp.length + 20) {
            reject(AGG_REJECT_MALFORMED);
        } else if (!agg_jobs.apply().hit) {
            reject(AGG_REJECT_UNKNOWN_JOB);
        } else if (meta.agg.bad_slot == 1) {
            reject(AGG_REJECT_BAD_SLOT);
        } else {
            agg_parent.apply();
            if (hdr.agg.op == AGG_OP_DATA) {
                if (agg_members.apply().hit
                        && standard_metadata.ingress_port == meta.agg.member_port) {
                    ok = true;
                } else {
                    reject(AGG_REJECT_NOT_MEMBER);
                }
            } else if (hdr.agg.op == AGG_OP_RESULT && meta.agg.is_child == 1
                       && standard_metadata.ingress_port == meta.agg.parent_port) {
                ok = true;
            } else {
                reject(AGG_REJECT_BAD_OP);
            }
        }

        if (ok) {
            bool is_data = hdr.agg.op == AGG_OP_DATA;

            // 1. round: which round the cell holds; a newer DATA round restarts the cell.
            bit<16> held_round;
            agg_round.read(held_round, meta.agg.cell);
            bit<16> ahead = hdr.agg.round - held_round;   // serial-number arithmetic (wraps)
            if (ahead == 0) {
                meta.agg.new_round = 0;
            } else if (ahead < 0x8000 && is_data) {
                meta.agg.new_round = 1;
                agg_round.write(meta.agg.cell, hdr.agg.round);
            } else {
                meta.agg.stale = 1;
            }

            if (meta.agg.stale == 1) {
                if (is_data) {
                    agg_stale.count((bit<32>)hdr.agg.job_id);
                    hdr.agg.round = held_round;
                    reply(AGG_OP_STALE);
                } else {
                    mark_to_drop(standard_metadata);   // the parent's result for another round
                }
            } else {
                // 2. members seen and contribution count (DATA only; RESULT marks FINAL).
                bit<16> old_count;
                bit<16> new_count;
                worker_bitmap_t seen = 0;  // defined on every path (p4c warned: RESULT packets skip the read)
                if (is_data) {
                    agg_bitmap.read(seen, meta.agg.cell);
                    if (meta.agg.new_round == 1) {
                        meta.agg.duplicate = 0;
                        seen = meta.agg.worker_bit;
                    } else {
                        meta.agg.duplicate = (seen & meta.agg.worker_bit) == 0 ? 1w0 : 1w1;
                        seen = seen | meta.agg.worker_bit;
                    }
                    agg_bitmap.write(meta.agg.cell, seen);
                }
                agg_count.read(old_count, meta.agg.cell);
                if (!is_data) {
                    new_count = old_count | AGG_FINAL;
                } else if (meta.agg.new_round == 1) {
                    new_count = 1;
                } else if (meta.agg.duplicate == 1) {
                    new_count = old_count;
                } else {
                    new_count = old_count + 1;
                }
                agg_count.write(meta.agg.cell, new_count);

                if (is_data) {
                    bit<16> count_now = new_count & AGG_COUNT_MASK;
                    bit<16> count_before = old_count & AGG_COUNT_MASK;
                    if (meta.agg.new_round == 1
                            || (meta.agg.duplicate == 0 && count_now <= meta.agg.threshold)) {
                        meta.agg.counted = 1;
                        meta.agg.completes = count_now == meta.agg.threshold ? 1w1 : 1w0;
                        meta.agg.mode = meta.agg.new_round == 1 ? AGG_MODE_WRITE : AGG_MODE_ACC;
                    } else {
                        meta.agg.complete = count_before >= meta.agg.threshold ? 1w1 : 1w0;
                        meta.agg.mode = AGG_MODE_READ;
                    }
                    meta.agg.final = (old_count & AGG_FINAL) == 0 ? 1w0 : 1w1;
                } else {
                    meta.agg.mode = AGG_MODE_WRITE;
                }

                // 3. the result's member bitmap: fixed by the contribution that completes, 0 until
                // then. A round can also become complete without one: when the control plane
                // lowers the threshold (a failed worker removed) below the count it holds; its
                // replies then name the members seen.
                worker_bitmap_t result_bitmap;
                agg_result_bitmap.read(result_bitmap, meta.agg.cell);
                if (!is_data) {
                    result_bitmap = hdr.agg.bitmap;
                } else if (meta.agg.completes == 1) {
                    result_bitmap = seen;
                } else if (meta.agg.new_round == 1) {
                    result_bitmap = 0;
                }
                agg_result_bitmap.write(meta.agg.cell, result_bitmap);
                hdr.agg.bitmap = (result_bitmap == 0 && is_data) ? seen : result_bitmap;

                // 4. per-round metadata: contributions, next block exponent, model versions.
                bit<16> contrib;
                agg_contrib.read(contrib, meta.agg.cell);
                bit<8> exp;
                agg_exp.read(exp, meta.agg.cell);
                bit<32> version_lo;
                agg_version_lo.read(version_lo, meta.agg.cell);
                bit<32> version_hi;
                agg_version_hi.read(version_hi, meta.agg.cell);
                if (meta.agg.mode == AGG_MODE_WRITE) {
                    contrib = hdr.agg.count;
                    exp = hdr.agg.next_exp;
                    version_lo = hdr.agg.version_lo;
                    version_hi = hdr.agg.version_hi;
                } else if (meta.agg.mode == AGG_MODE_ACC) {
                    contrib = contrib + hdr.agg.count;
                    exp = exp > hdr.agg.next_exp ? exp : hdr.agg.next_exp;
                    version_lo = version_lo < hdr.agg.version_lo ? version_lo : hdr.agg.version_lo;
                    version_hi = version_hi > hdr.agg.version_hi ? version_hi : hdr.agg.version_hi;
                }
                agg_contrib.write(meta.agg.cell, contrib);
                agg_exp.write(meta.agg.cell, exp);
                agg_version_lo.write(meta.agg.cell, version_lo);
                agg_version_hi.write(meta.agg.cell, version_hi);
                hdr.agg.count = contrib;
                hdr.agg.next_exp = exp;
                hdr.agg.version_lo = version_lo;
                hdr.agg.version_hi = version_hi;

                // 5. the values: new = (old & keep) + (v & add) covers write, add and read. A
                // header-only packet that starts a round writes zeros, so that no value of an
                // older round can leak into this one.
                if (hdr.agg_values.isValid() || meta.agg.mode == AGG_MODE_WRITE) {
                    meta.agg.keep_mask = meta.agg.mode == AGG_MODE_WRITE ? 32w0 : 32w0xffffffff;
                    meta.agg.add_mask = (meta.agg.mode == AGG_MODE_READ || !hdr.agg_values.isValid())
                                        ? 32w0 : 32w0xffffffff;
                    bit<32> cell_value;
#define AGG_VALUE_STEP(i) \
                    agg_value_##i.read(cell_value, meta.agg.cell); \
                    cell_value = (cell_value & meta.agg.keep_mask) \
                                 + (hdr.agg_values.v##i & meta.agg.add_mask); \
                    agg_value_##i.write(meta.agg.cell, cell_value); \
                    hdr.agg_values.v##i = cell_value;
                    AGG_VALUE_LIST(AGG_VALUE_STEP)
                }

                // 6. where the packet goes.
                if (!is_data) {
                    multicast_result();                       // the parent's final result
                } else if (meta.agg.counted == 1) {
                    agg_aggregated.count((bit<32>)hdr.agg.job_id);
                    if (meta.agg.completes == 0) {
                        mark_to_drop(standard_metadata);
                    } else if (meta.agg.is_child == 1) {
                        to_parent(0);
                    } else {
                        multicast_result();
                    }
                } else {
                    agg_retransmissions.count((bit<32>)hdr.agg.job_id);
                    if (meta.agg.complete == 0) {
                        mark_to_drop(standard_metadata);      // the result is still to come
                    } else if (meta.agg.is_child == 1 && meta.agg.final == 0) {
                        to_parent(AGG_FLAG_RETX);             // the parent may have lost ours
                    } else {
                        reply(AGG_OP_RESULT);
                    }
                }
            }
        }
    }
}

#endif
