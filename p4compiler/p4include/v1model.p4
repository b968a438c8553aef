/*
 * v1model.p4 -- the v1model architecture (bmv2 simple_switch) as the innet-drl software
 * switch provides it.
 *
 * Written for this project; the declarations match the standard v1model.p4 shipped with p4c
 * name for name and signature for signature, including the V1MODEL_VERSION variants, so a
 * program that p4c-bm2-ss accepts is accepted here and means the same thing.
 */

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include "core.p4"

/* Programs may pick the newer flavour with -DV1MODEL_VERSION=20200408 (or a later date). */
#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

match_kind {
    range,     /* lo <= key <= hi */
    optional,  /* exact value, or wildcard */
    selector   /* key of an action selector's hash */
}

/* The version the program was compiled against, visible to P4 code. */
const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9>  PortId_t;
#endif

/*
 * Per-packet metadata that simple_switch fills in and reads back. Field order and widths
 * are part of the contract (P4Info, STF tests and the bmv2 JSON all rely on them).
 */
@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t    ingress_port;
    PortId_t    egress_spec;
    PortId_t    egress_port;
#else
    bit<9>      ingress_port;
    bit<9>      egress_spec;   /* where ingress wants the packet to go */
    bit<9>      egress_port;   /* where it is going, set before egress */
#endif
    bit<32>     instance_type; /* normal, clone, resubmit, recirculate, replication */
    bit<32>     packet_length;
    /* queueing metadata, under the names bmv2 uses internally */
    @alias("queueing_metadata.enq_timestamp")
    bit<32> enq_timestamp;
    @alias("queueing_metadata.enq_qdepth")
    bit<19> enq_qdepth;
    @alias("queueing_metadata.deq_timedelta")
    bit<32> deq_timedelta;
    @alias("queueing_metadata.deq_qdepth")
    bit<19> deq_qdepth;
    /* intrinsic metadata */
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48> ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48> egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp")
    bit<16> mcast_grp;             /* multicast group; 0 means unicast */
    @alias("intrinsic_metadata.egress_rid")
    bit<16> egress_rid;            /* replica id of a multicast copy */
    bit<1>  checksum_error;        /* 1 when a verify_checksum call failed */
    error   parser_error;          /* how parsing ended */
    @alias("intrinsic_metadata.priority")
    bit<3> priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* An array of counters indexed by the program; the control plane reads them. */
extern counter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    counter(bit<32> size, CounterType type);
    /* Count this packet at index; an index >= size changes nothing. */
#if V1MODEL_VERSION >= 20200408
    void count(in I index);
#else
    void count(in bit<32> index);
#endif
}

/* One counter per entry of the table it is attached to (table property counters = ...). */
extern direct_counter {
    direct_counter(CounterType type);
    /* Optional: the entry's counter is updated on every hit whether or not this is called. */
    void count();
}

/* Colours written by meters. */
#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

/* An array of two-rate three-colour meters (RFC 2698). */
extern meter
#if V1MODEL_VERSION >= 20200408
<I>
#endif
{
    meter(bit<32> size, MeterType type);
    /* Meter this packet at index and write its colour (0 green, 1 yellow, 2 red). */
#if V1MODEL_VERSION >= 20200408
    void execute_meter<T>(in I index, out T result);
#else
    void execute_meter<T>(in bit<32> index, out T result);
#endif
}

/* One meter per entry of the table it is attached to (table property meters = ...). */
extern direct_meter<T> {
    direct_meter(MeterType type);
    /* Colour of the entry that matched; only valid inside that table's actions. */
    void read(out T result);
}

/* Packet-visible state: an array of size elements of type T. */
#if V1MODEL_VERSION >= 20200408
extern register<T, I>
#else
extern register<T>
#endif
{
    register(bit<32> size);
    /* Read element index into result; an index >= size gives an unspecified value. */
    @noSideEffects
#if V1MODEL_VERSION >= 20200408
    void read(out T result, in I index);
#else
    void read(out T result, in bit<32> index);
#endif
    /* Write value at index; an index >= size changes nothing. */
#if V1MODEL_VERSION >= 20200408
    void write(in I index, in T value);
#else
    void write(in bit<32> index, in T value);
#endif
}

/* Table implementation: actions shared between entries (table property implementation = ...). */
extern action_profile {
    action_profile(bit<32> size);
}

/* Uniform random value in [lo, hi]; unspecified when lo > hi. */
extern void random<T>(out T result, in T lo, in T hi);

/* Send the values in data, as they are now, to the control plane (ingress only). */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

/* Set egress_spec to the drop port and mcast_grp to 0; later code may still change them. */
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/*
 * result = base + (H(data) mod max) when max >= 1, and base when max == 0,
 * where H is the chosen algorithm over the fields of data concatenated.
 */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* Table implementation: an action profile whose members are picked by a hash of the selector keys. */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/*
 * In the VerifyChecksum control: when condition holds and the checksum of data differs from
 * checksum, standard_metadata.checksum_error becomes 1.
 */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* In the ComputeChecksum control: when condition holds, checksum = checksum of data. */
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* As verify_checksum, with the unparsed rest of the packet appended to data. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* As update_checksum, with the unparsed rest of the packet appended to data. */
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Clone the packet to a clone session, keeping no user metadata. */
extern void clone(in CloneType type, in bit<32> session);

@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);

/*
 * Ingress only: run the packet, as it arrived, through the parser again, keeping the user
 * metadata fields annotated @field_list(index). The last call wins.
 */
extern void resubmit_preserving_field_list(bit<8> index);

@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);

/*
 * Egress only: send the deparsed packet back to the parser, keeping the user metadata fields
 * annotated @field_list(index). The last call wins.
 */
extern void recirculate_preserving_field_list(bit<8> index);

@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);

/*
 * Clone the packet to a clone session (I2E from ingress, E2E from egress), keeping the user
 * metadata fields annotated @field_list(index). The last call wins.
 */
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Cut the outgoing packet to at most length bytes. */
extern void truncate(in bit<32> length);

/* When check is false, the target reports the failing statement (simple_switch then exits). */
extern void assert(in bool check);

/* Same as assert on a target; formal tools treat it as an assumption instead. */
extern void assume(in bool check);

/* Write a message to the switch log; "{}" in msg is replaced by the next field of data. */
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/*
 * The pipeline. H is a struct of headers, header stacks and header unions; M is a struct.
 * The name standard_metadata is reserved.
 */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

/* Only verify_checksum / verify_checksum_with_payload calls belong here. */
control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

/* Only update_checksum / update_checksum_with_payload calls belong here. */
control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

/* Only packet_out.emit calls belong here. */
@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep
                       );

#endif  /* _V1_MODEL_P4_ */
