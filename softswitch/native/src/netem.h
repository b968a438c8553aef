/* netem.h — link emulation of one port direction for the native data path (io.c).
 *
 * Private to io.c and netem.c.  The semantics are those of softswitch/netem.py (and the
 * README's --netem table), per direction and in this order:
 *   1. loss: the frame is dropped with probability loss / 2^32 (own seeded random stream);
 *   2. rate: serialised at rate bit/s behind the frames before it (departure-time scheduling);
 *      a frame that would wait more than backlog before its serialisation starts, or that finds
 *      limit frames queued, is tail-dropped;
 *   3. delay: held delay (+- uniform jitter) after its serialisation ends; frames never overtake
 *      one another (a frame's due time is at least the previous frame's).
 * A direction with loss only has no queue: ss_nm_submit answers SS_NM_PASS or SS_NM_LOST and
 * the caller hands the frame on at once.
 *
 * Not thread-safe: io.c calls all of these with the switch lock held.
 */
#ifndef SS_NETEM_H
#define SS_NETEM_H

#include <stdint.h>

#define SS_NM_DEFAULT_LIMIT 1000u  /* tc netem's default; used when limit is 0 */

typedef struct ss_nm_params {
    uint64_t delay_ns, jitter_ns;
    uint32_t loss;        /* parts per 2^32 */
    uint64_t rate_bps;    /* 0: no serialisation */
    uint32_t limit;       /* frames queued at most; 0 -> SS_NM_DEFAULT_LIMIT */
    uint64_t backlog_ns;  /* with rate: longest wait for the serialiser (taken literally) */
} ss_nm_params;

/* A frame held by the link (malloc'ed; whoever pops it frees it with free()). */
typedef struct ss_nm_frame {
    struct ss_nm_frame *next;
    uint64_t due;         /* CLOCK_MONOTONIC ns */
    uint32_t len;
    uint8_t data[];
} ss_nm_frame;

typedef struct ss_netem ss_netem;

enum { SS_NM_PASS = 0, SS_NM_QUEUED = 1, SS_NM_LOST = 2, SS_NM_QDROP = 3 };

/* 1 when the parameters impair nothing (the direction needs no ss_netem at all) */
int ss_nm_params_transparent(const ss_nm_params *p);

/* NULL when out of memory.  seed: the loss/jitter stream (mixed with `stream` so that two
 * directions given the same seed do not drop the same frames). */
ss_netem *ss_nm_new(const ss_nm_params *p, uint64_t seed, uint64_t stream);
/* New parameters and seed; frames already queued keep their due times. */
void ss_nm_configure(ss_netem *d, const ss_nm_params *p, uint64_t seed, uint64_t stream);
void ss_nm_free(ss_netem *d);   /* frees queued frames too */

/* Put a frame on the link (copied when queued).  now_ns is read only when the direction
 * schedules (delay, jitter or rate); pass ss_nm_now() or a test clock. */
int ss_nm_submit(ss_netem *d, uint64_t now_ns, const uint8_t *frame, uint32_t len);
int ss_nm_schedules(const ss_netem *d);   /* 1: submit may queue (needs now_ns, a timer) */

/* The head frame if it is due at now_ns (removed from the queue), else NULL. */
ss_nm_frame *ss_nm_pop_due(ss_netem *d, uint64_t now_ns);
uint64_t ss_nm_next_due(const ss_netem *d);  /* UINT64_MAX when nothing is queued */
uint32_t ss_nm_queued(const ss_netem *d);
void ss_nm_counts(const ss_netem *d, uint64_t *lost, uint64_t *qdrop, uint64_t *passed);

uint64_t ss_nm_now(void);  /* CLOCK_MONOTONIC in ns */

/* splitmix64: the random streams of the loss emulation (netem and --loss-rate) */
uint64_t ss_nm_rand(uint64_t *state);
uint64_t ss_nm_mix(uint64_t seed, uint64_t stream);

#endif /* SS_NETEM_H */
