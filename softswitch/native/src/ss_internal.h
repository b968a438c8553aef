/* ss_internal.h — private interface between the runtime core (switch.c, tables.c, externs.c,
 * algorithms.c, pipeline.c) and the packet I/O threads (io.c, netem.c).  Not part of the
 * generated-code ABI (that is ../include/ss_runtime.h).
 *
 * Locking: one pthread mutex per switch (ss__lock/ss__unlock).  Every control call takes it;
 * the data path holds it around ss__run_pipeline (per frame or per batch), taking it with
 * ss__lock_dp, which first lets a waiting control call go (a mutex is not fair: a data path that
 * relocks right after each batch kept control calls waiting for milliseconds each).  The packet-in and
 * digest queues have their own mutex + condvar and never block the pipeline (full = drop and
 * count). */
#ifndef SS_INTERNAL_H
#define SS_INTERNAL_H

#include <stdint.h>
#include "ss_runtime.h"

/* Receives each output frame of a pipeline run (frame valid only during the call). */
typedef void (*ss_emit_fn)(void *arg, uint32_t port, const uint8_t *frame, uint32_t len);

void ss__lock(struct ss_switch *sw);      /* the pipeline/control lock, for control calls */
void ss__lock_dp(struct ss_switch *sw);   /* the same lock, for the data path's batches */
void ss__unlock(struct ss_switch *sw);

/* Run one frame through the whole pipeline; the lock is held by the caller.  Every output
 * frame, including those for the CPU port, goes to emit (the caller decides what the CPU port
 * means).  Returns the number of frames emitted, or < 0 (SS_E*: no program loaded, frame too
 * long). */
int ss__run_pipeline(struct ss_switch *sw, uint32_t ingress_port, const uint8_t *data, uint32_t len,
                     ss_emit_fn emit, void *arg);

/* Queue a frame for ss_packet_in_poll (never blocks; drops and counts when the queue is full).
 * Safe to call with or without the switch lock held. */
void ss__packet_in_push(struct ss_switch *sw, const uint8_t *frame, uint32_t len);

uint32_t ss__cpu_port(struct ss_switch *sw);

/* io.c keeps its state here (NULL until io.c puts something there). */
void **ss__io_slot(struct ss_switch *sw);

/* Implemented in io.c: stops the threads and frees *ss__io_slot(sw); called by ss_switch_free
 * (without the switch lock held) before the core frees its own state. */
void ss__io_free(struct ss_switch *sw);

/* Set the one-line message ss_last_error returns and return code (printf format). */
int ss__error(struct ss_switch *sw, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* SS_INTERNAL_H */

