// Tables applied twice, in if conditions with .hit/.miss, switch on action_run with fallthrough
// labels and default, a switch on a bit value, keys on a slice, a header-stack element field,
// metadata and isValid().
// Not portable: counter_t is applied four times on one path; p4c-bm2-ss applies a table at
// most once per path (the .stf's `# options: allow-nonportable` line).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header tag_t { bit<8> v; }
header data_t { bit<16> k; bit<8> sel; bit<8> cnt; bit<8> r; bit<8> s; }

struct meta_t { bit<8> mk; }
struct headers_t { ethernet_t eth; tag_t[2] tags; data_t d; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.tags[0]);
        pkt.extract(hdr.tags[1]);
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action count() { hdr.d.cnt = hdr.d.cnt + 1; }
    action a1() { hdr.d.r = 1; }
    action a2() { hdr.d.r = 2; }
    action a3() { hdr.d.r = 3; }

    // Counts its applications: applied twice, cnt goes up by 2.
    table counter_t {
        key = { hdr.d.k[15:8] : exact @name("kslice"); }
        actions = { count; NoAction; }
        default_action = NoAction();
    }
    table sel_t {
        key = { hdr.tags[1].v : exact; meta.mk : exact; hdr.tags[0].isValid() : exact; }
        actions = { a1; a2; a3; NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        meta.mk = hdr.d.sel;
        counter_t.apply();
        counter_t.apply();
        if (counter_t.apply().hit) {
            hdr.d.s = 0x10;
        }
        if (!counter_t.apply().miss) {
            hdr.d.s = hdr.d.s + 1;
        }
        switch (sel_t.apply().action_run) {
            a1:
            a2: { hdr.d.s = hdr.d.s | 0x80; }
            default: { hdr.d.s = hdr.d.s | 0x40; }
        }
        switch (hdr.d.sel) {
            0: { sm.egress_spec = 2; }
            1:
            2: { sm.egress_spec = 3; }
            default: { }
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.tags); pkt.emit(hdr.d); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
