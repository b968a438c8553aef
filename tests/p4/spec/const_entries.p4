// const entries with masks (&&&), ranges (..), default (_) and tuple keys (the first entry
// listed wins), non-const entries with priorities, @name with and without a leading dot,
// a string annotation containing parentheses, and #define constants.
// Newer syntax: `priority =` in table entries, P4-16 syntax newer than p4c-bm2-ss v1.2.4 accepts
// (the .stf's `# options: newer-syntax` line).
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#define PORT_A 9w4
#define MASK_HI 0xf0

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header data_t { bit<8> k1; bit<8> k2; bit<8> r; bit<8> r2; }

struct meta_t { }
struct headers_t { ethernet_t eth; data_t d; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.d); transition accept; }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @name(".set_r") action set_r(bit<8> v) { hdr.d.r = v; }
    @name("set_r2") action set_r2(bit<8> v) { hdr.d.r2 = v; }

    @name("classify") @brief("a note (with parentheses) and \"quotes\"")
    table t {
        key = {
            hdr.d.k1 : ternary;
            hdr.d.k2 : range;
        }
        actions = { set_r; }
        const entries = {
            (0x12, 0 .. 9) : set_r(1);              // first listed wins among overlaps
            (0x10 &&& MASK_HI, 5 .. 20) : set_r(2);
            (_, 100 .. 200) : set_r(3);
            (_, _) : set_r(4);
        }
        default_action = set_r(0xff);
    }

    table prio {
        key = { hdr.d.k1 : ternary; }
        actions = { set_r2; }
        // Non-const entries with priorities (P4-16 1.2.4): the largest priority wins; an entry
        // without one gets the previous entry's priority minus 1.
        entries = {
            priority = 10: 0x00 &&& 0x00 : set_r2(0x33);
            priority = 30: 0x01 &&& 0x0f : set_r2(0x11);
            0x20 &&& 0xf0 : set_r2(0x22);     // priority 29
        }
    }
    apply {
        sm.egress_spec = PORT_A;
        t.apply();
        prio.apply();
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.eth); pkt.emit(hdr.d); }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
