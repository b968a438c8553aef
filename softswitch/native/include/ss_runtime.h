/* ss_runtime.h — the contract between the native back end's generated C (p4compiler/c_backend)
 * and the software switch's native runtime (softswitch/native/src), and the control API the
 * Python side binds with cffi (softswitch/native/__init__.py).
 *
 * One shared object per P4 program = the runtime sources + the generated program, built at
 * pipeline load with the system C compiler and cached by a hash of all sources and flags.
 *
 * Values: every bit<W>/int<W> with W <= 64 travels as uint64_t holding the value reduced to
 * W bits (two's complement for int<W>, i.e. masked, never sign-extended at rest).  bool is
 * uint8_t 0/1.  Wider values are the generated code's business (structs of 64-bit limbs,
 * p4compiler/c_backend/wide.py); they cross this interface as their limbs, most significant
 * first, each one uint64_t: a wide table key or value-set key is that many key fields of its
 * match kind (an lpm prefix split over them), a wide action parameter or digest field that many
 * values, a wide register that many cells per index (defined 64 bits wide).
 *
 * Objects (tables, actions, registers, counters, meters, direct meters, value sets, digests,
 * errors) are numbered by the C emitter, which writes the numbering into a manifest next to
 * the C source (p4compiler.c_backend: NativeProgram.manifest); the Python loader defines them
 * in the runtime with those numbers, and installs const entries and default actions, before the
 * first packet.
 *
 * Threads: the data path (receive, the whole v1model pipeline, transmit) runs in C threads
 * that never take the GIL.  The pipeline runs one packet at a time (a register's
 * read-modify-write is never interleaved with another packet's, as bmv2's @atomic); control
 * calls take the same lock, so an entry written through the API applies to the next packet.
 */
#ifndef SS_RUNTIME_H
#define SS_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#define SS_ABI_VERSION 2
#define SS_MAX_FRAME 65535u     /* largest frame in or out */
/* The deparser may emit up to SS_MAX_FRAME bytes of headers, however little it parsed (a frame
 * may grow by more than any fixed headroom); the frame it makes (those headers, then the
 * unparsed payload, then truncation) goes out when it is at most SS_MAX_FRAME bytes long, and
 * is dropped and counted in ss_stats.too_long otherwise.  The Python backend keeps the same
 * rule (softswitch/switch.py, MAX_FRAME). */
#define SS_OUT_HEADROOM SS_MAX_FRAME
#define SS_DROP_PORT 511u
#define SS_MAX_PASSES 64u       /* resubmit/recirculate passes per packet (a replay batch: one per entry) */
/* Egress copies that E2E clones may make per input packet (clone-of-clone loops end here).
 * Copies, not clone calls: a clone to a session of n replicas uses n.  A clone that would pass
 * the limit makes no copy and counts in ss_stats.clone_drops; below it no E2E clone is refused
 * (pending clones are queued in memory grown as needed, so a large multicast group whose
 * replicas all clone keeps every clone). */
#define SS_MAX_E2E_COPIES 1024u
#define SS_MAX_DIGEST_FIELDS 64u /* fields per digest; a digest poll with room for this many
                                  * never fails for want of room */
#define SS_NO_ACTION 4294967295u /* UINT32_MAX: ss_table_apply's action on a miss before a
                                  * default is set (runs no action) */
#define SS_GROUP_ACTION 4294967294u /* an entry or default referring to an action selector's
                                     * group: its args are [n, stride, n * (action, params...)],
                                     * each member padded to stride words; the generated code picks
                                     * member hash % n (p4compiler.ir.GROUP_ACTION) */

/* instance_type values of bmv2's simple_switch */
enum { SS_NORMAL = 0, SS_I2E_CLONE = 1, SS_E2E_CLONE = 2, SS_RECIRC = 4, SS_REPLICATION = 5,
       SS_RESUBMIT = 6 };

/* ------------------------------------------------------------------ standard_metadata_t
 * Field names and order as in v1model.p4 (p4compiler/p4include/v1model.p4).  The generated
 * state struct's first member is this struct, so the runtime reaches it at offset 0.
 * parser_error holds the program's error number (index into ProgramInfo errors; NoError = 0). */
typedef struct ss_std_meta {
    uint64_t ingress_port, egress_spec, egress_port, instance_type, packet_length;
    uint64_t enq_timestamp, enq_qdepth, deq_timedelta, deq_qdepth;
    uint64_t ingress_global_timestamp, egress_global_timestamp;
    uint64_t mcast_grp, egress_rid, checksum_error, parser_error, priority;
} ss_std_meta;

struct ss_switch;

/* A register: cell i is cells[i * stride], masked to width bits.  Registers defined as a bank
 * share one allocation, interleaved (stride = bank size; cells points at the member's column;
 * the first member owns it): a packet that reads many registers at one index then touches
 * adjacent words instead of one cache line in each of many arrays.  The generated code reads
 * and writes cells inline through ss_ctx.registers (every register of the program is defined
 * before ss_switch_load accepts it). */
typedef struct ss_register {
    uint32_t width;
    int owns_cells;
    uint64_t mask, size, stride;
    uint64_t *cells;
} ss_register;

/* The layout a generated program was compiled for (p4compiler.c_backend.register_layout): it
 * reads and writes register `reg`'s cell i at registers[bank]->cells[i * members + member] with
 * the size and width as constants.  ss_switch_load refuses the program unless every register
 * was defined that way. */
typedef struct ss_register_slot {
    uint32_t bank, member, members, width;
    uint64_t size;
} ss_register_slot;

/* ------------------------------------------------------------------ per-packet context
 * One per pipeline pass.  The generated parser reads data[off..len); the deparser appends to
 * out (capacity out_cap); the runtime then appends data[payload_off..len) and applies
 * truncation. */
typedef struct ss_ctx {
    struct ss_switch *sw;
    const uint8_t *data;
    uint32_t len;
    uint32_t off;          /* parser cursor, bytes */
    uint32_t payload_off;  /* set by the runtime from off when the parser ends */
    uint8_t *out;
    uint32_t out_len;
    uint32_t out_cap;
    /* v1model requests made by the program during this pass (SS_NONE when absent) */
    int32_t resubmit_fl;     /* field list id, 0 for plain resubmit() */
    int32_t recirculate_fl;
    int32_t clone_fl;
    uint32_t clone_session;
    uint8_t clone_e2e;       /* 1: E2E clone requested in egress, 0: I2E in ingress */
    uint8_t exited;          /* `exit` executed in this control */
    uint32_t truncate_len;   /* 0: no truncation */
    uint32_t last_meter_color[8]; /* direct meter colours of the last hit, by direct-meter number */
    void *scratch;           /* runtime-private */
    ss_register *const *registers;  /* by register number, set by the runtime for each pass */
} ss_ctx;

#define SS_NONE (-1)

/* ------------------------------------------------------------------ the generated program */
typedef int (*ss_parser_fn)(ss_ctx *c, void *state);       /* returns 0, or an error number */
typedef void (*ss_control_fn)(ss_ctx *c, void *state);
typedef int (*ss_deparser_fn)(ss_ctx *c, void *state);     /* 0, or -1 when out overflows */
typedef void (*ss_state_fn)(void *state);
typedef void (*ss_preserve_fn)(int32_t field_list, const void *from, void *to);

typedef struct ss_program {
    uint32_t abi;             /* SS_ABI_VERSION */
    uint32_t state_size;      /* sizeof the generated state; starts with ss_std_meta */
    ss_state_fn init;         /* all zero, every header invalid */
    ss_parser_fn parser;      /* fills the state; on error sets sm.parser_error itself */
    ss_control_fn verify_checksum, ingress, egress, compute_checksum;
    ss_deparser_fn deparser;
    ss_preserve_fn preserve;  /* copy the user metadata of @field_list(id) from -> to */
    uint32_t n_tables, n_registers, n_counters, n_meters, n_direct_meters, n_digests, n_errors;
    const char *const *error_names;  /* n_errors names; index 0 is "NoError" */
    /* Added (runtime core): copy the headers (validity, stacks' next index included) from -> to,
     * leaving the metadata and standard_metadata of `to` alone.  An E2E clone keeps the
     * original's headers with fresh metadata (bmv2, softswitch/switch.py).  NULL: the runtime
     * copies the whole state instead (the clone then keeps the original's metadata too). */
    void (*copy_headers)(const void *from, void *to);
    /* n_registers slots, or NULL: a program that reaches registers only through
     * ss_register_read/ss_register_write/ss_register_cells assumes no layout */
    const ss_register_slot *register_layout;
} ss_program;

/* The generated code defines exactly this symbol. */
extern const ss_program ss_program_desc;

/* ------------------------------------------------------------------ calls the generated code makes
 * Table apply: keys are n_keys uint64_t (key fields up to 64 bits; a wider P4 key is passed
 * as its limbs, see Values above).  On return *action is the action number (manifest
 * numbering) of the hit entry or of the default action, and
 * *args points at its parameters (uint64_t each, in declaration order), valid for this pass.
 * A table's default is what ss_table_set_default gave it; until then (and for a table number
 * that is not defined) a miss returns SS_NO_ACTION, which runs no action: P4-16's implicit
 * default is NoAction, and the loader sets each table's default, NoAction's number included,
 * before the first packet.
 * Direct counters of the hit entry are counted and direct meters executed here (the colour
 * lands in c->last_meter_color[direct meter number]).  Returns 1 on hit, 0 on miss. */
int ss_table_apply(ss_ctx *c, uint32_t table, const uint64_t *keys, uint32_t *action,
                   const uint64_t **args);

/* value_set membership (parser select); keys as for tables */
int ss_value_set_match(ss_ctx *c, uint32_t vs, const uint64_t *keys);

/* Registers: out-of-range index reads 0 and writes nothing (as bmv2 and the Python backend).
 * Values are masked to the register's width by the runtime on write. */
uint64_t ss_register_read(ss_ctx *c, uint32_t reg, uint64_t index);
void ss_register_write(ss_ctx *c, uint32_t reg, uint64_t index, uint64_t value);
/* Direct access for hot paths: cell i of a register is cells[i * stride] (size given by the
 * loader; stride > 1 for a member of a register bank). */
uint64_t *ss_register_cells(ss_ctx *c, uint32_t reg, uint64_t *size, uint64_t *stride);

void ss_counter_count(ss_ctx *c, uint32_t counter, uint64_t index);   /* packet_length bytes */
uint64_t ss_meter_execute(ss_ctx *c, uint32_t meter, uint64_t index); /* 0 green 1 yellow 2 red */

/* Hash and checksum algorithms over a bit string (fields of invalid headers already left out
 * by the generated code), MSB first, nbits need not be a multiple of 8; payload (may be NULL)
 * follows the bits for the _with_payload forms.  Results as softswitch/algorithms.py computes
 * them (bmv2's): SS_ALGO_* numbers below. */
enum { SS_ALGO_CRC32 = 0, SS_ALGO_CRC32_CUSTOM, SS_ALGO_CRC16, SS_ALGO_CRC16_CUSTOM, SS_ALGO_RANDOM,
       SS_ALGO_IDENTITY, SS_ALGO_CSUM16, SS_ALGO_XOR16 };
uint64_t ss_hash(uint32_t algo, const uint8_t *bits, uint32_t nbits, const uint8_t *payload,
                 uint32_t payload_len);
/* hash(...) result mapping of v1model: base + (h % max) when max > 0, reduced to width bits */
uint64_t ss_hash_result(uint64_t h, uint64_t base, uint64_t max, uint32_t width);

/* A bit string builder for hash/checksum/digest inputs: put `width` bits of v, MSB first. */
typedef struct ss_bits {
    uint8_t buf[1024];
    uint32_t nbits;
} ss_bits;
void ss_bits_put(ss_bits *b, uint64_t v, uint32_t width);

uint64_t ss_random(ss_ctx *c, uint64_t lo, uint64_t hi);  /* uniform in [lo, hi]; lo when lo >= hi */
void ss_digest(ss_ctx *c, uint32_t digest, const uint64_t *fields, uint32_t n_fields);
void ss_log_msg(ss_ctx *c, const char *fmt, const uint64_t *args, uint32_t n_args);
void ss_assert_failed(ss_ctx *c, const char *where);  /* the packet is dropped and counted */

/* v1model primitives that only set requests in the context */
void ss_clone(ss_ctx *c, int e2e, uint32_t session, int32_t field_list);
void ss_resubmit(ss_ctx *c, int32_t field_list);
void ss_recirculate(ss_ctx *c, int32_t field_list);
void ss_truncate(ss_ctx *c, uint32_t length);

/* ------------------------------------------------------------------ control API (cffi)
 * Every function returns 0 on success or a negative SS_E* code; ss_last_error(sw) then holds a
 * one-line message (per calling thread, as errno: read it from the thread that made the call).
 * Validation of names, widths and ranges is done in Python before these
 * calls (p4compiler's ProgramInfo + softswitch.tables); the C side still refuses what would
 * break memory safety. */
enum { SS_OK = 0, SS_EINVAL = -1, SS_ENOENT = -2, SS_EEXIST = -3, SS_ENOSPC = -4, SS_ENOMEM = -5,
       SS_EIO = -6 };

/* SS_MATCH_RANGE_NEXT: this key field continues the range field before it: a range key wider
 * than 64 bits passed as its limbs, most significant first (the RANGE field, then one RANGE_NEXT
 * per further limb); low and high compare as one number over the group.
 * SS_MATCH_LPM_NEXT: the same for an lpm key: each limb's value/prefix length pair covers its own
 * bits (a limb's prefix is non-zero only when the limbs before it are whole), and the prefix
 * length of the key is their sum; a table whose only non-exact key is one such group of at most
 * 128 bits keeps the hash-per-prefix-length lookup. */
enum { SS_MATCH_EXACT = 0, SS_MATCH_LPM, SS_MATCH_TERNARY, SS_MATCH_RANGE, SS_MATCH_OPTIONAL,
       SS_MATCH_RANGE_NEXT, SS_MATCH_LPM_NEXT };

struct ss_switch *ss_switch_new(uint32_t cpu_port, uint64_t seed);
void ss_switch_free(struct ss_switch *sw);
const char *ss_last_error(struct ss_switch *sw);

int ss_define_table(struct ss_switch *sw, uint32_t table, uint32_t n_keys, const uint8_t *kinds,
                    const uint16_t *widths, uint32_t size, int has_direct_counter,
                    int32_t direct_meter, int largest_priority_wins);
int ss_define_register(struct ss_switch *sw, uint32_t reg, uint32_t width, uint64_t size);
/* Registers first..first+count-1, all of `size` cells (widths[k] bits each), stored interleaved:
 * one allocation whose row i holds cell i of every member.  Behaves as count separate registers;
 * only the memory layout differs (for registers a program reads at one index per packet). */
int ss_define_register_bank(struct ss_switch *sw, uint32_t first, uint32_t count, const uint32_t *widths,
                            uint64_t size);
int ss_define_counter(struct ss_switch *sw, uint32_t counter, uint64_t size, int bytes, int packets);
int ss_define_meter(struct ss_switch *sw, uint32_t meter, uint64_t size, int bytes);
int ss_define_direct_meter(struct ss_switch *sw, uint32_t dmeter, int bytes);
int ss_define_value_set(struct ss_switch *sw, uint32_t vs, uint32_t n_keys, uint32_t size);
/* Added (runtime core), optional: the number of parameters of an action.  When an action is
 * defined, ss_table_add/modify/set_default refuse another n_args for it (SS_EINVAL); when it is
 * not, its argument arrays are padded with zeros to at least SS_MIN_ARGS values, so generated
 * code never reads past them. */
#define SS_MIN_ARGS 16u
int ss_define_action(struct ss_switch *sw, uint32_t action, uint32_t n_params);

/* entries: per key field value + (mask | prefix length | range high); priority (higher wins
 * when largest_priority_wins, ternary/range/optional only); action number and its args.
 * Entries are identified by (keys, masks, priority) as P4Runtime identifies them. */
int ss_table_add(struct ss_switch *sw, uint32_t table, const uint64_t *values, const uint64_t *masks,
                 int32_t priority, uint32_t action, const uint64_t *args, uint32_t n_args);
int ss_table_modify(struct ss_switch *sw, uint32_t table, const uint64_t *values,
                    const uint64_t *masks, int32_t priority, uint32_t action, const uint64_t *args,
                    uint32_t n_args);
int ss_table_delete(struct ss_switch *sw, uint32_t table, const uint64_t *values,
                    const uint64_t *masks, int32_t priority);
int ss_table_clear(struct ss_switch *sw, uint32_t table);
int ss_table_set_default(struct ss_switch *sw, uint32_t table, uint32_t action, const uint64_t *args,
                         uint32_t n_args);
int ss_table_direct_counter(struct ss_switch *sw, uint32_t table, const uint64_t *values,
                            const uint64_t *masks, int32_t priority, uint64_t *bytes,
                            uint64_t *packets, int write);
int ss_table_direct_meter_config(struct ss_switch *sw, uint32_t table, const uint64_t *values,
                                 const uint64_t *masks, int32_t priority, uint64_t cir,
                                 uint64_t cburst, uint64_t pir, uint64_t pburst);

int ss_register_get(struct ss_switch *sw, uint32_t reg, uint64_t index, uint64_t *value);
int ss_register_set(struct ss_switch *sw, uint32_t reg, uint64_t index, uint64_t value);
int ss_register_reset(struct ss_switch *sw, uint32_t reg);
int ss_counter_get(struct ss_switch *sw, uint32_t counter, uint64_t index, uint64_t *bytes,
                   uint64_t *packets);
int ss_counter_set(struct ss_switch *sw, uint32_t counter, uint64_t index, uint64_t bytes,
                   uint64_t packets);
int ss_meter_config(struct ss_switch *sw, uint32_t meter, uint64_t index, uint64_t cir,
                    uint64_t cburst, uint64_t pir, uint64_t pburst);
/* Value sets: a member is n_keys values and n_keys masks (a key wider than 64 bits as its limbs);
 * it matches when every key & mask equals value & mask (values are stored masked).  add appends
 * one member (SS_ENOSPC when full); replace sets all n members under one lock, so a packet sees
 * either the old members or the new ones (SS_ENOSPC when n exceeds the size, nothing changed);
 * clear empties the set. */
int ss_value_set_add(struct ss_switch *sw, uint32_t vs, const uint64_t *values, const uint64_t *masks);
int ss_value_set_replace(struct ss_switch *sw, uint32_t vs, uint32_t n, const uint64_t *values,
                         const uint64_t *masks);
int ss_value_set_clear(struct ss_switch *sw, uint32_t vs);

/* packet replication engine: replicas as parallel arrays (egress port, egress_rid) */
int ss_mc_group_set(struct ss_switch *sw, uint32_t group, const uint32_t *ports, const uint32_t *rids,
                    uint32_t n);
int ss_mc_group_delete(struct ss_switch *sw, uint32_t group);
int ss_clone_session_set(struct ss_switch *sw, uint32_t session, const uint32_t *ports,
                         const uint32_t *rids, uint32_t n, uint32_t packet_length_bytes);
int ss_clone_session_delete(struct ss_switch *sw, uint32_t session);

/* Load a program into the switch (after the definitions above).  Frees nothing it is given. */
int ss_switch_load(struct ss_switch *sw, const ss_program *prog);

/* In-process packet processing (STF runner, differential tests, in-process benchmark):
 * runs the whole pipeline for one frame; outputs are appended to `outs` (port, offset, length
 * into buf), at most max_outs of them, their bytes into buf (capacity buf_cap).  Frames to the
 * CPU port are outputs like any other here.  Returns the number of outputs, or < 0. */
typedef struct ss_out {
    uint32_t port;
    uint32_t offset;
    uint32_t length;
} ss_out;
int ss_process(struct ss_switch *sw, uint32_t ingress_port, const uint8_t *data, uint32_t len,
               ss_out *outs, uint32_t max_outs, uint8_t *buf, uint32_t buf_cap);
/* The same with no output limit of the caller's: the outputs go to arrays the switch owns and
 * grows as needed; *outs and *buf point at them on return (n outputs, offsets into *buf), valid
 * until the next ss_process_all on this switch or its free (callers serialise these calls).
 * Only running out of memory loses an output (counted in ss_stats.output_drops).  The number of
 * outputs is bounded by the pipeline itself: SS_MAX_PASSES passes, group and session sizes,
 * SS_MAX_E2E_COPIES. */
int ss_process_all(struct ss_switch *sw, uint32_t ingress_port, const uint8_t *data, uint32_t len,
                   const ss_out **outs, const uint8_t **buf);
/* the same for a batch of n frames (benchmarks): outputs are counted, not returned */
int ss_process_batch(struct ss_switch *sw, uint32_t ingress_port, const uint8_t *const *frames,
                     const uint32_t *lens, uint32_t n, uint64_t *n_out);

/* ------------------------------------------------------------------ ports and data-path threads
 * Ports are Linux interfaces bound with AF_PACKET (batched: TPACKET_V3 rings or
 * recvmmsg/sendmmsg).  Threads sleep in poll() when idle; no busy polling. */
int ss_port_add(struct ss_switch *sw, uint32_t port, const char *ifname);
/* Offload mode for the ports bound from now on (on != 0; call before the first ss_port_add):
 * each port's socket exchanges frames with the kernel behind a virtio_net_hdr, as a virtual
 * NIC does, so that hosts with TSO/USO on their links hand over TCP/UDP super-frames, which
 * the switch cuts into wire frames for the pipeline, and runs of output frames of one flow to
 * one port go back to the kernel as one super-frame (src/offload.h says what that rewrites).
 * Refused (SS_EINVAL) on kernels before 6.2, whose packet sockets cannot carry UDP GSO. */
int ss_set_port_offloads(struct ss_switch *sw, int on);
/* link emulation per port and direction (dir 0 = frames received on the port, 1 = sent to it):
 * delay/jitter in ns, loss in parts per 2^32, rate in bits/s (0 = none), limit in frames,
 * backlog in ns; loss_rate applies to every port on top (as --loss-rate). */
int ss_port_netem(struct ss_switch *sw, uint32_t port, int dir, uint64_t delay_ns, uint64_t jitter_ns,
                  uint32_t loss, uint64_t rate_bps, uint32_t limit, uint64_t backlog_ns, uint64_t seed);
int ss_set_loss_rate(struct ss_switch *sw, double loss_rate, uint64_t seed);
int ss_start(struct ss_switch *sw);
int ss_stop(struct ss_switch *sw);

/* Packets the pipeline sent to the CPU port, and packet-out from the controller.  poll calls
 * block up to timeout_ms (< 0: no limit; the GIL is released by cffi).  ss_switch_free wakes
 * polls that are blocked (they return SS_EIO and touch the switch no more) and waits for them;
 * a poll must not start once the free has begun.
 * A queued item that does not fit the caller's room is dropped, not left at the head of the
 * queue (where it would stop every later poll): the poll returns SS_ENOSPC with the item's size
 * in ss_last_error, and ss_stats.pktin_dropped / digest_dropped count it, as they count items
 * refused because the queue was full.  Room for SS_MAX_FRAME bytes (packet-in) or
 * SS_MAX_DIGEST_FIELDS fields (digests) never drops one.
 * ss_packet_in_poll returns the frame length (frames are never empty), 0 on timeout, < 0 on
 * error. */
int ss_packet_in_poll(struct ss_switch *sw, uint8_t *buf, uint32_t cap, int timeout_ms);
int ss_packet_out(struct ss_switch *sw, const uint8_t *data, uint32_t len);
/* digests: returns 1 with *digest the digest number and *n_fields values in fields (a digest
 * may have none), 0 on timeout, < 0 on error */
int ss_digest_poll(struct ss_switch *sw, uint32_t *digest, uint64_t *fields, uint32_t max_fields,
                   uint32_t *n_fields, int timeout_ms);

typedef struct ss_port_stats {
    uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes;
    uint64_t rx_dropped;     /* lost before the pipeline (socket/ring overrun, kernel count) */
    uint64_t tx_dropped;     /* could not be sent (queue full, send error) */
    uint64_t netem_lost, netem_qdrop;
} ss_port_stats;
typedef struct ss_stats {
    uint64_t packets, passes, outputs, pipeline_drops, assert_drops, parser_errors, too_long;
    uint64_t clone_drops;     /* E2E clones past SS_MAX_E2E_COPIES (or with no memory left) */
    uint64_t output_drops;    /* ss_process_all outputs lost for want of memory */
    uint64_t pktin_dropped, digest_dropped;  /* queue full, or too big for the poll's room */
} ss_stats;
int ss_get_stats(struct ss_switch *sw, ss_stats *stats);
int ss_get_port_stats(struct ss_switch *sw, uint32_t port, ss_port_stats *stats);

#endif /* SS_RUNTIME_H */
