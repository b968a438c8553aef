// Benchmark program (b) of bench/softswitch_pps.py: each packet carries 32 int32 values that
// are added into 32 register arrays at the packet's slot, and the sums are written back into
// the packet.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header agg_t {
    bit<32> slot;
    bit<32> v0;
    bit<32> v1;
    bit<32> v2;
    bit<32> v3;
    bit<32> v4;
    bit<32> v5;
    bit<32> v6;
    bit<32> v7;
    bit<32> v8;
    bit<32> v9;
    bit<32> v10;
    bit<32> v11;
    bit<32> v12;
    bit<32> v13;
    bit<32> v14;
    bit<32> v15;
    bit<32> v16;
    bit<32> v17;
    bit<32> v18;
    bit<32> v19;
    bit<32> v20;
    bit<32> v21;
    bit<32> v22;
    bit<32> v23;
    bit<32> v24;
    bit<32> v25;
    bit<32> v26;
    bit<32> v27;
    bit<32> v28;
    bit<32> v29;
    bit<32> v30;
    bit<32> v31;
}
struct headers_t { ethernet_t ethernet; agg_t agg; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x88b5: parse_agg; default: accept; }
    }
    state parse_agg { pkt.extract(hdr.agg); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(1024) r0;
    register<bit<32>>(1024) r1;
    register<bit<32>>(1024) r2;
    register<bit<32>>(1024) r3;
    register<bit<32>>(1024) r4;
    register<bit<32>>(1024) r5;
    register<bit<32>>(1024) r6;
    register<bit<32>>(1024) r7;
    register<bit<32>>(1024) r8;
    register<bit<32>>(1024) r9;
    register<bit<32>>(1024) r10;
    register<bit<32>>(1024) r11;
    register<bit<32>>(1024) r12;
    register<bit<32>>(1024) r13;
    register<bit<32>>(1024) r14;
    register<bit<32>>(1024) r15;
    register<bit<32>>(1024) r16;
    register<bit<32>>(1024) r17;
    register<bit<32>>(1024) r18;
    register<bit<32>>(1024) r19;
    register<bit<32>>(1024) r20;
    register<bit<32>>(1024) r21;
    register<bit<32>>(1024) r22;
    register<bit<32>>(1024) r23;
    register<bit<32>>(1024) r24;
    register<bit<32>>(1024) r25;
    register<bit<32>>(1024) r26;
    register<bit<32>>(1024) r27;
    register<bit<32>>(1024) r28;
    register<bit<32>>(1024) r29;
    register<bit<32>>(1024) r30;
    register<bit<32>>(1024) r31;
    apply {
        sm.egress_spec = 1;
        if (hdr.agg.isValid()) {
            bit<32> idx = hdr.agg.slot & 1023;
            bit<32> t;
        r0.read(t, idx); t = t + hdr.agg.v0; r0.write(idx, t); hdr.agg.v0 = t;
        r1.read(t, idx); t = t + hdr.agg.v1; r1.write(idx, t); hdr.agg.v1 = t;
        r2.read(t, idx); t = t + hdr.agg.v2; r2.write(idx, t); hdr.agg.v2 = t;
        r3.read(t, idx); t = t + hdr.agg.v3; r3.write(idx, t); hdr.agg.v3 = t;
        r4.read(t, idx); t = t + hdr.agg.v4; r4.write(idx, t); hdr.agg.v4 = t;
        r5.read(t, idx); t = t + hdr.agg.v5; r5.write(idx, t); hdr.agg.v5 = t;
        r6.read(t, idx); t = t + hdr.agg.v6; r6.write(idx, t); hdr.agg.v6 = t;
        r7.read(t, idx); t = t + hdr.agg.v7; r7.write(idx, t); hdr.agg.v7 = t;
        r8.read(t, idx); t = t + hdr.agg.v8; r8.write(idx, t); hdr.agg.v8 = t;
        r9.read(t, idx); t = t + hdr.agg.v9; r9.write(idx, t); hdr.agg.v9 = t;
        r10.read(t, idx); t = t + hdr.agg.v10; r10.write(idx, t); hdr.agg.v10 = t;
        r11.read(t, idx); t = t + hdr.agg.v11; r11.write(idx, t); hdr.agg.v11 = t;
        r12.read(t, idx); t = t + hdr.agg.v12; r12.write(idx, t); hdr.agg.v12 = t;
        r13.read(t, idx); t = t + hdr.agg.v13; r13.write(idx, t); hdr.agg.v13 = t;
        r14.read(t, idx); t = t + hdr.agg.v14; r14.write(idx, t); hdr.agg.v14 = t;
        r15.read(t, idx); t = t + hdr.agg.v15; r15.write(idx, t); hdr.agg.v15 = t;
        r16.read(t, idx); t = t + hdr.agg.v16; r16.write(idx, t); hdr.agg.v16 = t;
        r17.read(t, idx); t = t + hdr.agg.v17; r17.write(idx, t); hdr.agg.v17 = t;
        r18.read(t, idx); t = t + hdr.agg.v18; r18.write(idx, t); hdr.agg.v18 = t;
        r19.read(t, idx); t = t + hdr.agg.v19; r19.write(idx, t); hdr.agg.v19 = t;
        r20.read(t, idx); t = t + hdr.agg.v20; r20.write(idx, t); hdr.agg.v20 = t;
        r21.read(t, idx); t = t + hdr.agg.v21; r21.write(idx, t); hdr.agg.v21 = t;
        r22.read(t, idx); t = t + hdr.agg.v22; r22.write(idx, t); hdr.agg.v22 = t;
        r23.read(t, idx); t = t + hdr.agg.v23; r23.write(idx, t); hdr.agg.v23 = t;
        r24.read(t, idx); t = t + hdr.agg.v24; r24.write(idx, t); hdr.agg.v24 = t;
        r25.read(t, idx); t = t + hdr.agg.v25; r25.write(idx, t); hdr.agg.v25 = t;
        r26.read(t, idx); t = t + hdr.agg.v26; r26.write(idx, t); hdr.agg.v26 = t;
        r27.read(t, idx); t = t + hdr.agg.v27; r27.write(idx, t); hdr.agg.v27 = t;
        r28.read(t, idx); t = t + hdr.agg.v28; r28.write(idx, t); hdr.agg.v28 = t;
        r29.read(t, idx); t = t + hdr.agg.v29; r29.write(idx, t); hdr.agg.v29 = t;
        r30.read(t, idx); t = t + hdr.agg.v30; r30.write(idx, t); hdr.agg.v30 = t;
        r31.read(t, idx); t = t + hdr.agg.v31; r31.write(idx, t); hdr.agg.v31 = t;
        }
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Dep(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.agg); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
