// Extern instances declared at the top level of the program, outside any control, as P4-16
// allows (spec v1.2.4 section 10.3.2, "Restrictions on top-level instantiations": top-level
// instantiations of extern objects are permitted) and as p4c's translations of P4-14 programs
// write them. Each is one object, shared by every control
// that names it: the register `seen` is written in ingress and read in egress (egress sees the
// cell ingress wrote for this very packet), the counter `hits` is counted in ingress and in
// egress (one array), and the direct counter `t_hits` is attached to an ingress table. P4Info
// names them without a control prefix (`seen`, `hits`, `t_hits`), as p4c does, and the control
// plane (STF check_counter, the switch's register_write) finds them by those names.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header data_t {
    bit<8>  idx;
    bit<8>  mark;
    bit<32> ing;    // written by ingress: the register cell after its increment
    bit<32> egr;    // written by egress: the same cell, read back there
}

struct headers_t {
    ethernet_t eth;
    data_t     d;
}

struct meta_t { }

register<bit<32>>(4) seen;
counter(4, CounterType.packets_and_bytes) hits;
direct_counter(CounterType.packets) t_hits;

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_mark(bit<8> m) { hdr.d.mark = m; }
    table t {
        key = { hdr.d.idx : exact; }
        actions = { set_mark; NoAction; }
        default_action = NoAction();
        counters = t_hits;
    }
    apply {
        bit<32> i = (bit<32>)hdr.d.idx;
        bit<32> c;
        seen.read(c, i);
        c = c + 32w1;
        seen.write(i, c);
        hdr.d.ing = c;
        hits.count(i);
        t.apply();
        sm.egress_spec = 9w1;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<32> c;
        seen.read(c, (bit<32>)hdr.d.idx);
        hdr.d.egr = c;
        hits.count(32w3);
    }
}

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.d);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
