// v1model's externs in each form a program may use them: register / counter / meter /
// direct_counter / direct_meter reached through typedefs, instances declared at the top level,
// inside a sub-control (one per instance of it), passed to a sub-control as an apply argument
// or as a constructor argument; the extern functions' deprecated forms (mark_to_drop() without
// an argument, resubmit / recirculate / clone3 with a field list, the Checksum16 extern), hash
// with crc16_custom / crc32_custom (bmv2's default parameters: the same as crc16 / crc32) and
// random (any value modulo 1), random with lo == hi, log_msg in both forms, assert and assume
// that hold.
#include <core.p4>
#include <v1model.p4>

typedef register<bit<32>> reg_t;
typedef counter ctr_t;
typedef meter mtr_t;
typedef direct_counter dctr_t;
typedef direct_meter<bit<8>> dmtr_t;

header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header data_t {
    bit<8>  op;
    bit<8>  idx;
    bit<32> a;
    bit<32> b;
    bit<16> c;
    bit<8>  s1;
    bit<8>  s2;
    bit<8>  s3;
    bit<8>  s4;
}
struct headers_t { ethernet_t eth; data_t d; }
struct meta_t { bit<8> kept; bit<8> lost; }

register<bit<8>>(4) top_reg;   // a top-level instance

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.d); transition accept; }
}

control MyVerifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

// its own register: each instance counts by its own step
control Bump(inout bit<8> result)(bit<8> step) {
    register<bit<8>>(1) total;
    apply {
        bit<8> v;
        total.read(v, 0);
        v = v + step;
        total.write(0, v);
        result = v;
    }
}

// the register to write is an apply argument (directionless, of extern type)
control Store(inout data_t d, register<bit<8>> r) {
    apply { r.write((bit<32>)d.idx, d.s3); }
}

// the register to read is a constructor argument
control Load(inout data_t d)(register<bit<8>> r) {
    apply { r.read(d.s4, (bit<32>)d.idx); }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    reg_t(8) r32;
    ctr_t(4, CounterType.packets_and_bytes) ctr;
    mtr_t(4, MeterType.packets) mtr;
    dctr_t(CounterType.packets) dctr;
    dmtr_t(MeterType.bytes) dmtr;
    register<bit<8>>(4) local_reg;
    Checksum16() ck;
    Bump(1) bump1;
    Bump(10) bump10;
    Store() store;
    Load(local_reg) load_local;
    Load(top_reg) load_top;

    action metered() { dctr.count(); dmtr.read(hdr.d.s2); }
    table t_direct {
        key = { hdr.d.idx : exact; }
        actions = { metered; NoAction; }
        counters = dctr;
        meters = dmtr;
        const entries = { 2 : metered(); }
        default_action = NoAction();
    }

    apply {
        sm.egress_spec = 1;
        bit<32> idx = (bit<32>)hdr.d.idx;
        if (hdr.d.op == 1) {            // a register through a typedef: write, then read back
            r32.write(idx, hdr.d.a);
            r32.read(hdr.d.b, idx);
        } else if (hdr.d.op == 2) {     // what an earlier packet wrote
            r32.read(hdr.d.b, idx);
        } else if (hdr.d.op == 3) {     // two instances of Bump, two registers
            bump1.apply(hdr.d.s1);
            bump10.apply(hdr.d.s2);
        } else if (hdr.d.op == 4) {     // counters and meters (unconfigured meters: GREEN, 0)
            ctr.count(idx);
            mtr.execute_meter(idx, hdr.d.s1);
            hdr.d.s2 = 0xff;
            t_direct.apply();
        } else if (hdr.d.op == 5) {     // local_reg written through Store, read through Load
            store.apply(hdr.d, local_reg);
            load_local.apply(hdr.d);
        } else if (hdr.d.op == 6) {     // the same two with the top-level register
            store.apply(hdr.d, top_reg);
            load_top.apply(hdr.d);
        } else if (hdr.d.op == 7) {     // read both without writing
            load_local.apply(hdr.d);
            hdr.d.s3 = hdr.d.s4;
            load_top.apply(hdr.d);
        } else if (hdr.d.op == 8) {
            mark_to_drop();
        } else if (hdr.d.op == 9) {
            mark_to_drop(sm);
        } else if (hdr.d.op == 10) {    // the _custom hashes with bmv2's defaults, the random one
            bit<32> h32;
            bit<32> h32c;
            bit<16> h16;
            bit<16> h16c;
            hash(h32, HashAlgorithm.crc32, 32w0, { hdr.d.a }, 32w0xffffffff);
            hash(h32c, HashAlgorithm.crc32_custom, 32w0, { hdr.d.a }, 32w0xffffffff);
            hash(h16, HashAlgorithm.crc16, 16w0, { hdr.d.a }, 32w65536);
            hash(h16c, HashAlgorithm.crc16_custom, 16w0, { hdr.d.a }, 32w65536);
            hdr.d.b = h32;
            hdr.d.c = h16;
            hdr.d.s1 = h32 == h32c ? 8w1 : 8w0;
            hdr.d.s2 = h16 == h16c ? 8w1 : 8w0;
            hash(hdr.d.s3, HashAlgorithm.random, 8w7, { hdr.d.a }, 8w1);
        } else if (hdr.d.op == 11) {    // random with one possible value; Checksum16
            random(hdr.d.s1, 8w5, 8w5);
            random(hdr.d.b, 32w0x12345, 32w0x12345);
            hdr.d.c = ck.get({ hdr.d.a });
        } else if (hdr.d.op == 12) {    // logging and checks that hold change nothing
            log_msg("extern_forms");
            log_msg("a={} idx={}", { hdr.d.a, hdr.d.idx });
            assert(hdr.d.op == 12);
            assume(hdr.d.idx < 200);
            hdr.d.s1 = 0x12;
        } else if (hdr.d.op == 13) {    // resubmit with a field list (the deprecated form)
            if (sm.instance_type == 0) {
                meta.kept = 0x5a;
                meta.lost = 0xa5;
                hdr.d.s4 = 0xff;        // the original packet is resubmitted: lost
                resubmit({ meta.kept });
            } else {
                hdr.d.s1 = (bit<8>)sm.instance_type;
                hdr.d.s2 = meta.kept;
                hdr.d.s3 = meta.lost;
            }
        } else if (hdr.d.op == 14) {    // clone3 (the deprecated form): session 5 goes to port 3
            meta.kept = 0x77;
            clone3(CloneType.I2E, 32w5, { meta.kept });
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.d.op == 14) {
            hdr.d.s1 = (bit<8>)sm.instance_type;   // 1 on the I2E clone, 0 on the original
            hdr.d.s2 = meta.kept;                  // kept on the clone, 0x77 on the original too
        } else if (hdr.d.op == 15) {   // recirculate with a field list (the deprecated form)
            if (sm.instance_type == 0) {
                meta.kept = 0x3c;
                hdr.d.s4 = 0xee;       // recirculation takes the deparsed packet: kept
                recirculate({ meta.kept });
            } else {
                hdr.d.s1 = (bit<8>)sm.instance_type;
                hdr.d.s2 = meta.kept;
            }
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); pkt.emit(hdr.d); } }

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
