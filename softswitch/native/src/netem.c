/* netem.c — one direction of an emulated link (see netem.h; semantics of softswitch/netem.py).
 *
 * The queue is a FIFO: due times never decrease along it (jitter never reorders, a frame
 * waits for the one ahead), so the head is always the next frame due and io.c's timer is
 * the minimum of the heads over all directions.  No thread here: io.c's data-path thread
 * services the queues (its poll timeout is the time to the next due frame). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "netem.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ss_netem {
    ss_nm_params p;
    uint64_t rng;
    ss_nm_frame *head, *tail;
    uint32_t count;
    uint64_t next_free;  /* when the serialiser finishes the last queued frame */
    uint64_t last_due;   /* due time of the last queued frame (order is kept) */
    uint64_t lost, qdrop, passed;
};

uint64_t ss_nm_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t ss_nm_mix(uint64_t seed, uint64_t stream)
{
    uint64_t s = seed ^ (stream * 0xd1342543de82ef95ull);
    (void)ss_nm_rand(&s);
    return s;
}

uint64_t ss_nm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ss_nm_params_transparent(const ss_nm_params *p)
{
    return p->delay_ns == 0 && p->jitter_ns == 0 && p->loss == 0 && p->rate_bps == 0;
}

static void set_params(ss_netem *d, const ss_nm_params *p, uint64_t seed, uint64_t stream)
{
    d->p = *p;
    if (d->p.limit == 0)
        d->p.limit = SS_NM_DEFAULT_LIMIT;
    if (d->p.jitter_ns > (1ull << 62))  /* keeps 2 * jitter + 1 and the sums below in range */
        d->p.jitter_ns = 1ull << 62;
    if (d->p.delay_ns > (1ull << 62))
        d->p.delay_ns = 1ull << 62;
    d->rng = ss_nm_mix(seed, stream);
}

ss_netem *ss_nm_new(const ss_nm_params *p, uint64_t seed, uint64_t stream)
{
    ss_netem *d = calloc(1, sizeof *d);
    if (d)
        set_params(d, p, seed, stream);
    return d;
}

void ss_nm_configure(ss_netem *d, const ss_nm_params *p, uint64_t seed, uint64_t stream)
{
    set_params(d, p, seed, stream);
}

void ss_nm_free(ss_netem *d)
{
    if (!d)
        return;
    ss_nm_frame *f = d->head;
    while (f) {
        ss_nm_frame *n = f->next;
        free(f);
        f = n;
    }
    free(d);
}

int ss_nm_schedules(const ss_netem *d)
{
    return d->p.delay_ns || d->p.jitter_ns || d->p.rate_bps || d->count;
}

int ss_nm_submit(ss_netem *d, uint64_t now, const uint8_t *frame, uint32_t len)
{
    const ss_nm_params *p = &d->p;
    if (p->loss && (uint32_t)(ss_nm_rand(&d->rng) >> 32) < p->loss) {
        d->lost++;
        return SS_NM_LOST;
    }
    if (!ss_nm_schedules(d)) {
        d->passed++;
        return SS_NM_PASS;
    }
    if (d->count >= p->limit) {
        d->qdrop++;
        return SS_NM_QDROP;
    }
    uint64_t due = now;
    if (p->rate_bps) {
        uint64_t start = d->next_free > now ? d->next_free : now;
        if (start - now > p->backlog_ns) {
            d->qdrop++;
            return SS_NM_QDROP;
        }
        /* len <= 2^17, so len * 8e9 < 2^60: no overflow */
        due = start + ((uint64_t)len * 8ull * 1000000000ull) / p->rate_bps;
        d->next_free = due;
    }
    due += p->delay_ns;
    if (p->jitter_ns) {
        uint64_t span = 2 * p->jitter_ns + 1;
        uint64_t off = ss_nm_rand(&d->rng) % span;  /* in [0, 2j]: due + off - j */
        due = due + off >= p->jitter_ns ? due + off - p->jitter_ns : 0;
    }
    if (due < d->last_due)
        due = d->last_due;
    ss_nm_frame *f = malloc(sizeof *f + len);
    if (!f) {
        d->qdrop++;
        return SS_NM_QDROP;
    }
    d->last_due = due;
    f->next = NULL;
    f->due = due;
    f->len = len;
    if (len)
        memcpy(f->data, frame, len);
    if (d->tail)
        d->tail->next = f;
    else
        d->head = f;
    d->tail = f;
    d->count++;
    return SS_NM_QUEUED;
}

ss_nm_frame *ss_nm_pop_due(ss_netem *d, uint64_t now)
{
    ss_nm_frame *f = d->head;
    if (!f || f->due > now)
        return NULL;
    d->head = f->next;
    if (!d->head)
        d->tail = NULL;
    d->count--;
    d->passed++;
    f->next = NULL;
    return f;
}

uint64_t ss_nm_next_due(const ss_netem *d)
{
    return d->head ? d->head->due : UINT64_MAX;
}

uint32_t ss_nm_queued(const ss_netem *d)
{
    return d->count;
}

void ss_nm_counts(const ss_netem *d, uint64_t *lost, uint64_t *qdrop, uint64_t *passed)
{
    if (lost)
        *lost = d->lost;
    if (qdrop)
        *qdrop = d->qdrop;
    if (passed)
        *passed = d->passed;
}
