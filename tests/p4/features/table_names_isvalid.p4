// @name annotations on tables, actions and keys (the control plane and STF use the annotated
// names: "fwd" becomes MyIngress.fwd, ".tagger" a top-level name), and isValid() as an exact key.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> etype;
}

header opt_t {
    bit<8> o;
}

header data_t {
    bit<8> k;
    bit<8> tag;
}

struct headers_t {
    ethernet_t eth;
    opt_t      opt;
    data_t     d;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {
            16w0x0101: parse_opt;
            default: parse_d;
        }
    }
    state parse_opt {
        pkt.extract(hdr.opt);
        transition parse_d;
    }
    state parse_d {
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @name("send") action forward(bit<9> port) {
        sm.egress_spec = port;
    }
    action set_tag(bit<8> v) {
        hdr.d.tag = v;
    }
    @name("fwd") table forward_table {
        key = {
            hdr.opt.isValid() : exact @name("opt_valid");
            hdr.d.k           : exact @name("key");
        }
        actions = {
            forward;
            NoAction;
        }
        default_action = NoAction();
    }
    @name(".tagger") table tag_table {
        key = {
            hdr.d.k : exact;
        }
        actions = {
            set_tag;
        }
        default_action = set_tag(8w0x33);
    }
    apply {
        forward_table.apply();
        tag_table.apply();
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.d);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
