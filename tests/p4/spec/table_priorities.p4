// Entry priorities (P4-16 v1.2.4 section 14.2.1.4 "Entries" and its "Entry priorities"):
// `priority = N:` mixed with entries without one (each continues from the entry before it by
// priority_delta, towards losing), `largest_priority_wins` both ways, entries without any
// priority (the first listed wins), p4c's `@priority(N)` annotation on const entries (bmv2's
// own numbers: the smallest wins, an entry without one takes its position 1, 2, ...), per-entry
// `const`, and `_` / `&&&` / `..` in every key kind: exact, ternary, lpm (a prefix mask; `_` is
// /0), range (`_` is the whole range; one value is lo .. lo), optional (`_` or one value).
// Newer syntax: `priority =`, `largest_priority_wins` and `priority_delta` (the .stf's
// `# options: newer-syntax` line).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header data_t {
    bit<8>  sel;   // which table the packet exercises
    bit<8>  k8;
    bit<8>  k8b;
    bit<16> k16;
    bit<32> k32;
    bit<8>  r;     // the number of the entry that hit (0xee: the default action)
}
struct headers_t { ethernet_t eth; data_t d; }
struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.d); transition accept; }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_r(bit<8> v) { hdr.d.r = v; }

    // p4c's table-entries-priority-bmv2.p4, extended: bmv2 priorities 3, 2, 1, 9, 5
    table t_anno {
        key = { hdr.d.k16 : ternary; }
        actions = { set_r; }
        const entries = {
            0x1111 &&& 0xF    : set_r(1) @priority(3);
            0x1181            : set_r(2);
            0x1181 &&& 0xF00F : set_r(3) @priority(1);
            0x2200 &&& 0xFF00 : set_r(4) @priority(9);
            0x22f0 &&& 0xFFF0 : set_r(5);
        }
        default_action = set_r(0xee);
    }

    // the spec's example (smallest wins, delta 10), and an entry listed last that wins
    table t_small {
        key = { hdr.d.k8 : exact; hdr.d.k16 : ternary; }
        actions = { set_r; }
        largest_priority_wins = false;
        priority_delta = 10;
        @noWarn("duplicate_priorities")
        entries = {
            const priority=10: (0x01, 0x1111 &&& 0xF   ) : set_r(1);
                               (0x02, 0x1181           ) : set_r(2);  // 20
                               (0x03, 0x1000 &&& 0xF000) : set_r(3);  // 30
            const              (0x04, 0x0210 &&& 0x02F0) : set_r(4);  // 40
                  priority=40: (0x04, 0x0010 &&& 0x02F0) : set_r(5);
                               (0x06, _                ) : set_r(6);  // 50
                   priority=5: (0x01, _                ) : set_r(7);
                               (0x01, 0x0001 &&& 0x000F) : set_r(8);  // 15
        }
        default_action = set_r(0xee);
    }

    // largest wins (said explicitly), delta 100, priorities out of order
    table t_large {
        key = { hdr.d.k8 : ternary; }
        actions = { set_r; }
        largest_priority_wins = true;
        priority_delta = 100;
        entries = {
            priority = 1000: 0x10 &&& 0xF0 : set_r(1);
                             0x12          : set_r(2);  // 900
            priority = 950:  0x12 &&& 0xFE : set_r(3);
            priority = 500:  _             : set_r(4);
                             0x2f          : set_r(5);  // 400
            priority = 2000: 0x30 &&& 0xF0 : set_r(6);
                             0x03 &&& 0x0F : set_r(7);  // 1900
        }
        default_action = set_r(0xee);
    }

    // no priorities at all, smallest wins: still the first listed wins
    table t_order {
        key = { hdr.d.k8 : ternary; }
        actions = { set_r; }
        largest_priority_wins = false;
        entries = {
            0x01 &&& 0x0F : set_r(1);
            0x11          : set_r(2);
            _             : set_r(3);
        }
        default_action = set_r(0xee);
    }

    // lpm: the longest prefix wins whatever the order; `_` is /0
    table t_lpm {
        key = { hdr.d.k32 : lpm; }
        actions = { set_r; }
        const entries = {
            _                         : set_r(4);
            0x0a000000 &&& 0xff000000 : set_r(1);
            0x0a010000 &&& 0xffff0000 : set_r(2);
            0x0a010203                : set_r(3);
        }
        default_action = set_r(0xee);
    }

    // range: `_` is the whole range, one value is a one-value range; the first listed wins
    table t_range {
        key = { hdr.d.k8 : exact; hdr.d.k16 : range; }
        actions = { set_r; }
        const entries = {
            (0x01, 0x0000 .. 0x00ff) : set_r(1);
            (0x01, _)                : set_r(2);
            (0x01, 0x0080 .. 0x0100) : set_r(3);
            (0x02, 0x1234)           : set_r(4);
            (0x02, 0x1000 .. 0x1fff) : set_r(5);
        }
        default_action = set_r(0xee);
    }

    // optional: `_` or one value
    table t_opt {
        key = { hdr.d.k8 : optional; hdr.d.k8b : optional; }
        actions = { set_r; }
        const entries = {
            (1, 2) : set_r(1);
            (_, 2) : set_r(2);
            (1, _) : set_r(3);
            (_, _) : set_r(4);
        }
        default_action = set_r(0xee);
    }

    // every kind in one key: with a ternary field, priorities (the order) decide, not prefixes
    table t_mixed {
        key = {
            hdr.d.sel : exact;
            hdr.d.k8  : ternary;
            hdr.d.k32 : lpm;
            hdr.d.k16 : range;
            hdr.d.k8b : optional;
        }
        actions = { set_r; }
        const entries = {
            (8, 0x10 &&& 0xF0, 0x0a000000 &&& 0xff000000, 0x0000 .. 0x00ff, 0x01) : set_r(1);
            (8, _,             0x0a000000 &&& 0xff000000, _,                _)    : set_r(2);
            (8, _,             0x0a0b0000 &&& 0xffff0000, _,                _)    : set_r(3);
            (8, 0x20 &&& 0xFF, _,                         0x0005,           0x09) : set_r(4);
            (8, _,             _,                         _,                _)    : set_r(5);
        }
        default_action = set_r(0xee);
    }

    apply {
        sm.egress_spec = 1;
        if (hdr.d.sel == 1) { t_anno.apply(); }
        else if (hdr.d.sel == 2) { t_small.apply(); }
        else if (hdr.d.sel == 3) { t_large.apply(); }
        else if (hdr.d.sel == 4) { t_order.apply(); }
        else if (hdr.d.sel == 5) { t_lpm.apply(); }
        else if (hdr.d.sel == 6) { t_range.apply(); }
        else if (hdr.d.sel == 7) { t_opt.apply(); }
        else { t_mixed.apply(); }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.d); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
