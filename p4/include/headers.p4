/*
 * headers.p4 -- packet headers and metadata of innet.p4. host_agents/agg_protocol.py (struct)
 * and host_agents/agg_layers.py (scapy) mirror these field for field (docs/protocol.md).
 */
#ifndef INNET_HEADERS_P4
#define INNET_HEADERS_P4

#include "types.p4"

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      diffserv;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

// IPv4 options (ihl > 5): carried through and covered by the header checksum.
header ipv4_options_h {
    varbit<320> options;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

// Aggregation header, 28 bytes (docs/protocol.md).
header agg_h {
    bit<8>          op;          // AGG_OP_*
    bit<8>          flags;       // AGG_FLAG_*
    job_id_t        job_id;
    worker_id_t     worker_id;   // sender's id within the job (a child switch's id at its parent)
    bit<16>         slot;        // slot within the job's range
    bit<16>         round;       // use count of the slot; round % 2 picks the shadow cell
    bit<8>          next_exp;    // biased block exponent for the slot's next round (max on the way)
    bit<8>          reserved;
    bit<16>         count;       // contributions held by the values (1 from a worker)
    worker_bitmap_t bitmap;      // RESULT: members whose contribution is in the values
    bit<32>         chunk;       // tensor offset in packets; carried, not interpreted
    bit<32>         version_lo;  // oldest model version among the contributions
    bit<32>         version_hi;  // newest model version among the contributions
}

// The values: AGG_VALUES_PER_PACKET two's-complement int32 (register arithmetic is on bit<32>,
// which wraps exactly as int32 does). The list macro generates one field/register/step per value;
// value k is named by k in two hex digits (v00 .. v3f at 64 values, v00 .. vff at 256), 16 to a
// row, so that the rows follow AGG_VALUES_PER_PACKET (types.p4 allows 32, 64 and 256).
#define AGG_VALUE_ROW(X, h) \
    X(h##0) X(h##1) X(h##2) X(h##3) X(h##4) X(h##5) X(h##6) X(h##7) \
    X(h##8) X(h##9) X(h##a) X(h##b) X(h##c) X(h##d) X(h##e) X(h##f)
#define AGG_VALUE_ROWS_32(X) AGG_VALUE_ROW(X, 0) AGG_VALUE_ROW(X, 1)
#define AGG_VALUE_ROWS_64(X) AGG_VALUE_ROWS_32(X) AGG_VALUE_ROW(X, 2) AGG_VALUE_ROW(X, 3)
#define AGG_VALUE_ROWS_128(X) AGG_VALUE_ROWS_64(X) \
    AGG_VALUE_ROW(X, 4) AGG_VALUE_ROW(X, 5) AGG_VALUE_ROW(X, 6) AGG_VALUE_ROW(X, 7)
#define AGG_VALUE_ROWS_256(X) AGG_VALUE_ROWS_128(X) \
    AGG_VALUE_ROW(X, 8) AGG_VALUE_ROW(X, 9) AGG_VALUE_ROW(X, a) AGG_VALUE_ROW(X, b) \
    AGG_VALUE_ROW(X, c) AGG_VALUE_ROW(X, d) AGG_VALUE_ROW(X, e) AGG_VALUE_ROW(X, f)
#if AGG_VALUES_PER_PACKET == 32
#define AGG_VALUE_LIST(X) AGG_VALUE_ROWS_32(X)
#elif AGG_VALUES_PER_PACKET == 64
#define AGG_VALUE_LIST(X) AGG_VALUE_ROWS_64(X)
#else
#define AGG_VALUE_LIST(X) AGG_VALUE_ROWS_256(X)
#endif

#define AGG_VALUE_FIELD(i) bit<32> v##i;
header agg_values_h {
    AGG_VALUE_LIST(AGG_VALUE_FIELD)
}

// Replay header, 32 bytes (docs/replay_protocol.md); the body that follows is parsed only for a
// switch-path batch (flag MULTI).
header replay_h {
    bit<8>  op;          // REPLAY_OP_*
    bit<8>  flags;       // REPLAY_FLAG_*
    bit<16> table_id;
    bit<32> request_id;
    bit<16> frag_index;
    bit<16> frag_count;
    bit<32> index;       // leaf index (SAMPLE: written by the switch; UPDATE: the leaf to set)
    bit<32> priority;    // fixed-point leaf priority
    bit<32> draw;        // SAMPLE: uniform fraction u of 2^32
    bit<32> total;       // the tree's total after the operation (written by the switch)
    bit<8>  status;
    bit<8>  version;     // REPLAY_VERSION
    bit<16> reserved;
}

// A switch-path batch (flag MULTI): one datagram carries up to REPLAY_MAX_ENTRIES draws or
// priority updates, done one per pass (the packet recirculates until `next` reaches `count`).
header replay_batch_h {
    bit<16> next;        // entries done so far (0 from the client)
    bit<16> count;       // entries in the datagram, 1..REPLAY_MAX_ENTRIES
    bit<32> beta;        // SAMPLE: f32 beta for the server; UPDATE: 0
}

header replay_entry_h {
    bit<32> index;       // leaf (SAMPLE: written by the switch; UPDATE: the leaf to set)
    bit<32> priority;    // fixed-point leaf priority (SAMPLE: written by the switch)
    bit<32> draw;        // SAMPLE: u; UPDATE: the item's key + 1 (mod 2^32)
    bit<32> total;       // the tree's total after this entry (written by the switch)
    bit<8>  result;      // UPDATE: REPLAY_RESULT_* (written by the switch)
    bit<24> reserved;
}

struct headers_t {
    ethernet_h     ethernet;
    ipv4_h         ipv4;
    ipv4_options_h ipv4_options;
    udp_h          udp;
    agg_h          agg;
    agg_values_h   agg_values;
    replay_h       replay;
    replay_batch_h replay_batch;
    replay_entry_h[REPLAY_MAX_ENTRIES] replay_entries;
}

// Per-packet state of the aggregation controls.
struct agg_meta_t {
    bit<2>          emit;          // AGG_EMIT_*
    worker_id_t     reply_member;  // member that a unicast reply goes to
    // the job (agg_jobs) and, on a child switch, its parent (agg_parent)
    bit<1>          bad_slot;
    bit<16>         threshold;
    bit<16>         mgid;
    mac_addr_t      switch_mac;
    ipv4_addr_t     switch_ip;
    bit<1>          is_child;
    mac_addr_t      parent_mac;
    ipv4_addr_t     parent_ip;
    port_t          parent_port;
    worker_id_t     id_at_parent;
    bit<32>         cell;          // register index: (slot_base + slot) * 2 + round % 2
    worker_bitmap_t worker_bit;
    port_t          member_port;   // the port the sending member is cabled to
    // outcome of the state registers
    bit<1>          new_round;
    bit<1>          stale;
    bit<1>          duplicate;
    bit<1>          counted;
    bit<1>          completes;
    bit<1>          complete;
    bit<1>          final;
    // how the value registers are updated: new = (old & keep) + (v & add)
    bit<2>          mode;
    bit<32>         keep_mask;
    bit<32>         add_mask;
}

// Per-packet state of the replay control.
struct replay_meta_t {
    bit<32> tree;        // which of the REPLAY_TREES trees holds the table
    bit<32> num_leaves;  // the table's max_size: valid leaf indexes are below it
    bit<32> node;        // SAMPLE: node index within the current level on the way down
    bit<32> draw;        // SAMPLE: remaining prefix mass
    bit<32> delta;       // UPDATE: new leaf value - old leaf value (mod 2^32)
    bit<1>  reflected;   // the packet goes back to its sender (UPDATE_REPLY or ERROR)
    bit<1>  apply_update; // UPDATE: the leaf holds this key (or INSERT): set it
    // the operation of this pass: the header's fields, or the batch entry `next`
    bit<32> index;       // UPDATE: the leaf to set; SAMPLE: the leaf chosen
    bit<32> priority;    // UPDATE: the leaf's new value
    bit<32> req_draw;    // the request's draw: UPDATE: the item's key + 1; SAMPLE: u, of 2^32
    bit<32> total;       // the tree's total after the operation
    bit<8>  result;      // UPDATE: REPLAY_RESULT_*
    bit<16> entries_left; // parser: batch entries still to extract
    bit<1>  again;       // egress recirculates the batch for its next entry
    // kept across recirculation (a recirculated packet's ingress_port is 0 on simple_switch,
    // the recirculation port on Tofino):
    @field_list(REPLAY_FIELD_LIST)
    bit<1>  continued;   // this pass is a recirculated batch's
    @field_list(REPLAY_FIELD_LIST)
    port_t  in_port;     // the port the datagram came in on: replies go back out of it
}

struct metadata_t {
    agg_meta_t agg;
    replay_meta_t replay;
}

#endif
