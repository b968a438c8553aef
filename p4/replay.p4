/*
 * replay.p4 -- priorities of a prioritized experience replay, kept in switch registers
 * (docs/replay_protocol.md, "The switch path").
 *
 * Each replay table the control plane installs (replay_tables) owns one sum-tree of bit<32>
 * fixed-point priorities. The items themselves stay on the replay server behind the switch.
 *   - UPDATE_PRIORITY sets a leaf and adds the difference to each ancestor on the way to the
 *     root, in one pass; the packet goes back to its sender as UPDATE_REPLY with the new total.
 *     Each leaf remembers the key (key + 1, mod 2^32, carried in `draw`) of the item it stands for: the
 *     inserter's UPDATE (flag INSERT) sets it, and a learner's UPDATE for another key -- an item
 *     the server has evicted since it was sampled -- is ignored (KEY_MISMATCH), so that it cannot
 *     give its priority to the newer item in the same slot.
 *   - SAMPLE walks from the root down to a leaf, choosing by the packet's draw (a fraction of the
 *     total), writes the leaf's index and priority and the total into the header and goes on to
 *     the replay server (plain IPv4 forwarding), which answers the learner with the item.
 *   - A batch (flag MULTI) carries up to REPLAY_MAX_ENTRIES UPDATEs or SAMPLE draws in one
 *     datagram, so that a learner's 128 updates cost 8 datagrams instead of 128: each pass does
 *     the entry `next` (exactly as a lone UPDATE or SAMPLE), writes its outcome into the entry
 *     and recirculates the packet for the next one; after the last entry an UPDATE batch goes
 *     back to its sender, a SAMPLE batch on to the server.
 *   - PUSH_REPLY with flags MULTI + INSERT: the server's answer to an actor's switch-path PUSH
 *     carries the new items' leaves as an UPDATE batch (INSERT); the switch sets them as the
 *     reply passes, one per pass, and sends it on to the actor with SWITCH_UPDATED. The actor's
 *     push costs one round trip, as on the host path.
 * Packets for tables the switch does not hold, and every other replay op (the server's other
 * replies), are forwarded untouched: the server does the work.
 *
 * Hardware portability (DESIGN.md): every level of the tree is split into a left-child and a
 * right-child register array, so that a pass touches each array at most once: the way down
 * reads only the left child of each node (the right side's mass is the remainder), the way up
 * read-modify-writes one cell per level. Indexes use constant shifts only. One exception, marked
 * below: scaling the draw by the total multiplies two run-time values (bmv2 and the software
 * target do it; a Tofino build would take absolute draws from the host instead).
 */
#ifndef INNET_REPLAY_P4
#define INNET_REPLAY_P4

#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"

control Replay(inout headers_t hdr, inout metadata_t meta,
               inout standard_metadata_t standard_metadata) {
    register<bit<32>>(REPLAY_TREES) replay_root;
    register<bit<32>>(REPLAY_KEY_CELLS) replay_key;  // key (mod 2^32) of each leaf's item
#define REPLAY_LEVEL_REGISTERS(L) \
    register<bit<32>>(REPLAY_TREES << (L - 1)) replay_left_##L; \
    register<bit<32>>(REPLAY_TREES << (L - 1)) replay_right_##L;
    REPLAY_LEVEL_LIST(REPLAY_LEVEL_REGISTERS)

    counter(REPLAY_TREES, CounterType.packets) replay_samples;
    counter(REPLAY_TREES, CounterType.packets) replay_updates;
    counter(REPLAY_REJECT_REASONS, CounterType.packets) replay_rejected;

    bit<1> held = 0;

    action set_replay_table(bit<32> tree, bit<32> num_leaves) {
        meta.replay.tree = tree;
        meta.replay.num_leaves = num_leaves;
        held = 1;
    }
    table replay_tables {
        key = { hdr.replay.table_id: exact; }
        actions = { set_replay_table; @defaultonly NoAction; }
        default_action = NoAction();
        size = REPLAY_TREES;
    }

    // The packet goes back where it came from, addresses swapped (UDP checksum 0: allowed for
    // IPv4, and the header changed).
    action reflect() {
        mac_addr_t mac = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;
        ipv4_addr_t ip = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = ip;
        hdr.ipv4.ttl = 64;
        bit<16> port = hdr.udp.dst_port;
        hdr.udp.dst_port = hdr.udp.src_port;
        hdr.udp.src_port = port;
        hdr.udp.checksum = 0;
        standard_metadata.egress_spec = meta.replay.in_port;
        meta.replay.reflected = 1;
    }

    // Cell of level L on the path to leaf `index` of tree `tree`: the node is index >> (depth-L);
    // its bit 0 says left or right child, the rest is the cell within the tree's range.
#define REPLAY_CELL(L) \
    ((meta.replay.tree << (L - 1)) | (meta.replay.index >> (REPLAY_TREE_DEPTH - L + 1)))
#define REPLAY_IS_RIGHT(L) \
    (((meta.replay.index >> (REPLAY_TREE_DEPTH - L)) & 1) == 1)
// The leaf level's arrays by name (two steps so that REPLAY_LEAF_LEVEL expands before pasting).
#define REPLAY_LEFT_OF(L) replay_left_##L
#define REPLAY_RIGHT_OF(L) replay_right_##L
#define REPLAY_LEFT(L) REPLAY_LEFT_OF(L)
#define REPLAY_RIGHT(L) REPLAY_RIGHT_OF(L)

    apply {
        if (meta.replay.continued == 0) {
            meta.replay.in_port = standard_metadata.ingress_port;
        } else {
            // earlier passes rewrote entries: the UDP checksum is void even if this pass finds
            // the table gone and routes the batch on as it is
            hdr.udp.checksum = 0;
        }
        replay_tables.apply();
        // Only the switch path's forms are the switch's: version 1, one fragment, and UPDATE with
        // an empty body, SAMPLE with its 8-byte body, a batch of either (flag MULTI) whose length
        // fits its count, or the server's answer to a switch-path PUSH (PUSH_REPLY, flags MULTI +
        // INSERT): a batch of the pushed items' leaves, then the u64 first key, set as it passes
        // on its way to the actor. Host-path requests of a held table (a batch UPDATE, a
        // fragment) go on to the server, which answers them with an error.
        bit<16> batch_len = 0;  // a batch form's UDP length without its entries (0: not a batch)
        if (hdr.replay.frag_count != 1 || hdr.replay.version != REPLAY_VERSION) {
            held = 0;
        } else if (hdr.replay.op == REPLAY_OP_PUSH_REPLY) {
            if ((hdr.replay.flags & (REPLAY_FLAG_MULTI | REPLAY_FLAG_INSERT))
                    != (REPLAY_FLAG_MULTI | REPLAY_FLAG_INSERT)) {
                held = 0;
            } else {
                batch_len = REPLAY_UDP_LEN_PUSH_LEAVES;
            }
        } else if (hdr.replay.op != REPLAY_OP_UPDATE && hdr.replay.op != REPLAY_OP_SAMPLE) {
            held = 0;
        } else if ((hdr.replay.flags & REPLAY_FLAG_MULTI) != 0) {
            batch_len = REPLAY_UDP_LEN_BATCH;
        } else if (!((hdr.replay.op == REPLAY_OP_UPDATE && hdr.udp.length == REPLAY_UDP_LEN_UPDATE)
                     || (hdr.replay.op == REPLAY_OP_SAMPLE && hdr.udp.length == REPLAY_UDP_LEN_SAMPLE))) {
            held = 0;
        }
        bit<1> batch = 0;
        if (batch_len != 0) {
            // 20 bytes per entry, as constant shifts; `next` is 0 except on a recirculated pass
            if (!hdr.replay_batch.isValid() || standard_metadata.parser_error != error.NoError
                    || hdr.replay_batch.count == 0 || hdr.replay_batch.count > REPLAY_MAX_ENTRIES
                    || hdr.replay_batch.next >= hdr.replay_batch.count
                    || (hdr.replay_batch.next != 0 && meta.replay.continued == 0)
                    || hdr.udp.length != batch_len + (hdr.replay_batch.count << 4)
                                         + (hdr.replay_batch.count << 2)) {
                held = 0;
            } else {
                batch = 1;
            }
        }
        // this pass sets a leaf: an UPDATE, or a PUSH_REPLY's entry
        bool update = hdr.replay.op == REPLAY_OP_UPDATE || hdr.replay.op == REPLAY_OP_PUSH_REPLY;
        // This pass's operation: the header's, or the batch's entry `next`.
        bit<16> e = 0;
        if (batch == 1) {
            e = hdr.replay_batch.next;
            meta.replay.index = hdr.replay_entries[e].index;
            meta.replay.priority = hdr.replay_entries[e].priority;
            meta.replay.req_draw = hdr.replay_entries[e].draw;
        } else {
            meta.replay.index = hdr.replay.index;
            meta.replay.priority = hdr.replay.priority;
            meta.replay.req_draw = hdr.replay.draw;
        }

        if (held == 1 && update) {
            meta.replay.result = REPLAY_RESULT_APPLIED;
            if (meta.replay.index >= meta.replay.num_leaves) {
                replay_rejected.count(REPLAY_REJECT_BAD_INDEX);
                meta.replay.result = REPLAY_RESULT_BAD_INDEX;
            } else {
                bit<32> stored_key;
                bit<32> key_cell = (meta.replay.tree << REPLAY_TREE_DEPTH) | meta.replay.index;
                replay_key.read(stored_key, key_cell);
                if ((hdr.replay.flags & REPLAY_FLAG_INSERT) != 0) {
                    replay_key.write(key_cell, meta.replay.req_draw);
                    meta.replay.apply_update = 1;
                } else if (stored_key == meta.replay.req_draw && meta.replay.req_draw != 0) {
                    // (keys travel as key + 1: 0 is a leaf never inserted, which nobody updates)
                    meta.replay.apply_update = 1;
                } else {
                    replay_rejected.count(REPLAY_REJECT_KEY_MISMATCH);
                    meta.replay.result = REPLAY_RESULT_KEY_MISMATCH;
                }
            }
            if (meta.replay.apply_update == 1) {
                bit<32> old;
                // The leaf: read the old value, write the new one.
                if (REPLAY_IS_RIGHT(REPLAY_LEAF_LEVEL)) {
                    REPLAY_RIGHT(REPLAY_LEAF_LEVEL).read(old, REPLAY_CELL(REPLAY_LEAF_LEVEL));
                    REPLAY_RIGHT(REPLAY_LEAF_LEVEL).write(REPLAY_CELL(REPLAY_LEAF_LEVEL), meta.replay.priority);
                } else {
                    REPLAY_LEFT(REPLAY_LEAF_LEVEL).read(old, REPLAY_CELL(REPLAY_LEAF_LEVEL));
                    REPLAY_LEFT(REPLAY_LEAF_LEVEL).write(REPLAY_CELL(REPLAY_LEAF_LEVEL), meta.replay.priority);
                }
                // Ancestors gain the difference (mod 2^32: a smaller priority subtracts).
                meta.replay.delta = meta.replay.priority - old;
                bit<32> sum;
#define REPLAY_ADD_DELTA(L) \
                if (REPLAY_IS_RIGHT(L)) { \
                    replay_right_##L.read(sum, REPLAY_CELL(L)); \
                    replay_right_##L.write(REPLAY_CELL(L), sum + meta.replay.delta); \
                } else { \
                    replay_left_##L.read(sum, REPLAY_CELL(L)); \
                    replay_left_##L.write(REPLAY_CELL(L), sum + meta.replay.delta); \
                }
                REPLAY_INNER_LEVEL_LIST(REPLAY_ADD_DELTA)
                replay_root.read(sum, meta.replay.tree);
                sum = sum + meta.replay.delta;
                replay_root.write(meta.replay.tree, sum);
                replay_updates.count(meta.replay.tree);
                meta.replay.total = sum;
            } else {
                replay_root.read(meta.replay.total, meta.replay.tree);
            }

            if (batch == 1) {
                hdr.replay_entries[e].result = meta.replay.result;
                hdr.replay_entries[e].total = meta.replay.total;
            } else if (meta.replay.result == REPLAY_RESULT_BAD_INDEX) {
                hdr.replay.op = REPLAY_OP_ERROR;
                hdr.replay.status = REPLAY_STATUS_BAD_INDEX;
                reflect();
            } else {
                hdr.replay.total = meta.replay.total;
                hdr.replay.op = REPLAY_OP_UPDATE_REPLY;
                hdr.replay.flags = hdr.replay.flags | REPLAY_FLAG_SWITCH_UPDATED;
                if (meta.replay.result == REPLAY_RESULT_KEY_MISMATCH) {
                    hdr.replay.flags = hdr.replay.flags | REPLAY_FLAG_KEY_MISMATCH;
                }
                reflect();
            }
        } else if (held == 1 && hdr.replay.op == REPLAY_OP_SAMPLE) {
            bit<32> total;
            replay_root.read(total, meta.replay.tree);
            bit<32> u = meta.replay.req_draw;
            if ((hdr.replay.flags & REPLAY_FLAG_RANDOM_DRAW) != 0) {
                random<bit<32>>(u, 0, 0xffffffff);
            }
            // Not portable (see top): u * total / 2^32, always below total when total > 0.
            bit<64> scaled = (bit<64>)u * (bit<64>)total;
            meta.replay.draw = scaled[63:32];
            meta.replay.node = 0;
            bit<32> left;
            // Each level: go left when the draw falls in the left child's mass, else right with
            // the left mass taken off. After the last level `node` is the leaf index.
#define REPLAY_DESCEND(L) \
            replay_left_##L.read(left, (meta.replay.tree << (L - 1)) | meta.replay.node); \
            if (meta.replay.draw < left) { \
                meta.replay.node = meta.replay.node << 1; \
            } else { \
                meta.replay.draw = meta.replay.draw - left; \
                meta.replay.node = (meta.replay.node << 1) | 1; \
            }
            REPLAY_INNER_LEVEL_LIST(REPLAY_DESCEND)
            bit<32> leaf;
            REPLAY_LEFT(REPLAY_LEAF_LEVEL).read(left, (meta.replay.tree << (REPLAY_LEAF_LEVEL - 1)) | meta.replay.node);
            if (meta.replay.draw < left) {
                meta.replay.index = meta.replay.node << 1;
                leaf = left;
            } else {
                meta.replay.index = (meta.replay.node << 1) | 1;
                REPLAY_RIGHT(REPLAY_LEAF_LEVEL).read(leaf, (meta.replay.tree << (REPLAY_LEAF_LEVEL - 1)) | meta.replay.node);
            }
            replay_samples.count(meta.replay.tree);
            if (batch == 1) {
                hdr.replay_entries[e].index = meta.replay.index;
                hdr.replay_entries[e].priority = leaf;
                hdr.replay_entries[e].total = total;
            } else {
                hdr.replay.index = meta.replay.index;
                hdr.replay.priority = leaf;
            }
            hdr.replay.total = total;
            hdr.udp.checksum = 0;
            // the server learns from this flag that the switch chose the leaf
            if (batch == 0 || hdr.replay_batch.next + 1 == hdr.replay_batch.count) {
                hdr.replay.flags = hdr.replay.flags | REPLAY_FLAG_SWITCH_SAMPLED;
            }
        }

        // A batch goes on with its next entry in another pass (to egress, and back in by
        // recirculation); after its last one an UPDATE batch returns to its sender, a SAMPLE
        // batch goes on to the server and a PUSH_REPLY to the actor. A batch of a table the
        // switch does not hold is routed as it came.
        if (held == 1 && batch == 1) {
            hdr.replay_batch.next = hdr.replay_batch.next + 1;
            if (hdr.replay_batch.next < hdr.replay_batch.count) {
                standard_metadata.egress_spec = meta.replay.in_port;
                meta.replay.again = 1;
                meta.replay.continued = 1;
            } else if (hdr.replay.op == REPLAY_OP_UPDATE) {
                hdr.replay.op = REPLAY_OP_UPDATE_REPLY;
                hdr.replay.flags = hdr.replay.flags | REPLAY_FLAG_SWITCH_UPDATED;
                hdr.replay.total = meta.replay.total;
                reflect();
            } else if (hdr.replay.op == REPLAY_OP_PUSH_REPLY) {
                // on to the actor, which learns from the flag that its leaves are set
                hdr.replay.flags = hdr.replay.flags | REPLAY_FLAG_SWITCH_UPDATED;
                hdr.replay.total = meta.replay.total;
                hdr.udp.checksum = 0;
            }
        }
    }
}

#endif
