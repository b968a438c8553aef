// One register cell that every packet adds its value into, from any port (tests/test_native_atomic.py):
// a read-modify-write interleaved with another packet's would lose an addition, and the cell
// would no longer equal the sum over ports of (packets counted on that port) x (that port's value).
#include <core.p4>
#include <v1model.p4>

header add_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
    bit<64> value;
    bit<32> scratch;  // the sender rewrites these bytes per packet; the program ignores them
}

struct headers_t { add_t add; }
struct meta_t { }

parser HammerParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.add);
        transition select(hdr.add.ether_type) {
            0x88B6: accept;
            default: reject;
        }
    }
}

control HammerVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control HammerIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<64>>(1) total;
    counter(512, CounterType.packets) added;
    apply {
        if (hdr.add.isValid() && hdr.add.ether_type == 0x88B6) {
            bit<64> t;
            total.read(t, 0);
            total.write(0, t + hdr.add.value);
            added.count((bit<32>)sm.ingress_port);
        }
        mark_to_drop(sm);
    }
}

control HammerEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control HammerCompute(inout headers_t hdr, inout meta_t meta) { apply { } }
control HammerDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.add); } }

V1Switch(HammerParser(), HammerVerify(), HammerIngress(), HammerEgress(), HammerCompute(),
         HammerDeparser()) main;
