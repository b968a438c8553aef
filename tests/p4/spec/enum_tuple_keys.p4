// A plain (non-serializable) enum as a table key (p4c gives bmv2 the member index on 32 bits),
// tuple indexing, a width computed from a constant (bit<(W * 2)>), and @likely/@unlikely blocks.
#include <core.p4>
#include <v1model.p4>

const int W = 8;
typedef bit<(W * 2)> wide_t;
enum Color { Red, Green, Blue }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header d_t { bit<8> c; bit<8> r; wide_t w; }
struct meta_t { Color col; }
struct headers_t { ethernet_t eth; d_t d; }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.d); transition accept; }
}
control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_r(bit<8> v) { hdr.d.r = v; }
    table by_color {
        key = { meta.col : exact; }
        actions = { set_r; NoAction; }
        const entries = {
            Color.Green : set_r(0x22);
            Color.Blue : set_r(0x33);
        }
        default_action = set_r(0xff);
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.d.c == 0) @likely { meta.col = Color.Red; }
        else if (hdr.d.c == 1) { meta.col = Color.Green; }
        else @unlikely { meta.col = Color.Blue; }
        by_color.apply();
        tuple<bit<8>, wide_t> tp = { 8w1, 16w0x1234 };
        hdr.d.w = tp[1] + (wide_t)tp[0];
    }
}
control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
