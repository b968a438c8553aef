/* switch.c — the switch object: creation, errors, the lock, program load, statistics, the
 * packet replication engine's groups and sessions, and the packet-in / digest queues. */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ss_core.h"

#define PKTIN_QUEUE_BYTES (4u << 20)
#define DIGEST_QUEUE_BYTES (1u << 20)

/* ------------------------------------------------------------------ errors, lock
 * The message of the last failed call is kept per thread (as errno): control calls come from
 * several Python threads, the packet-in/digest pollers and the data-path thread also report
 * errors, and one buffer in the switch would be a data race (a reader could get another
 * thread's message, or a torn one).  ss_last_error(sw) returns the calling thread's message. */
static _Thread_local char tls_err[256];

int ss__error(struct ss_switch *sw, int code, const char *fmt, ...) {
    if (sw) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(tls_err, sizeof tls_err, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *ss_last_error(struct ss_switch *sw) { return sw ? tls_err : "no switch"; }

void ss__lock(struct ss_switch *sw) {
    __atomic_add_fetch(&sw->ctl_waiting, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&sw->lock);
    __atomic_sub_fetch(&sw->ctl_waiting, 1, __ATOMIC_RELAXED);
}

/* The data path yields to a waiting control call before its next batch, for a bounded number of
 * rounds (a stream of control calls cannot stop the data path): without this, a data path that
 * relocks at once after each batch left a P4Runtime write waiting milliseconds under a flood
 * (the mutex is not fair: the woken waiter finds it taken again). */
void ss__lock_dp(struct ss_switch *sw) {
    for (int i = 0; i < 1000 && __atomic_load_n(&sw->ctl_waiting, __ATOMIC_RELAXED) > 0; i++)
        sched_yield();
    pthread_mutex_lock(&sw->lock);
}
void ss__unlock(struct ss_switch *sw) { pthread_mutex_unlock(&sw->lock); }
uint32_t ss__cpu_port(struct ss_switch *sw) { return sw->cpu_port; }
void **ss__io_slot(struct ss_switch *sw) { return &sw->io; }

/* ------------------------------------------------------------------ queues */
void ss__queue_init(ss_queue *q, size_t cap) {
    pthread_mutex_init(&q->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&q->cv, &ca);
    pthread_condattr_destroy(&ca);
    q->buf = malloc(cap);
    q->cap = q->buf ? cap : 0;
    q->head = q->tail = q->used = 0;
    q->count = q->dropped = 0;
    q->waiters = 0;
    q->closing = 0;
}

void ss__queue_close(ss_queue *q) {
    pthread_mutex_lock(&q->mu);
    q->closing = 1;
    pthread_cond_broadcast(&q->cv);
    while (q->waiters) pthread_cond_wait(&q->cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
}

void ss__queue_destroy(ss_queue *q) {
    free(q->buf);
    q->buf = NULL;
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
}

static void ring_write(ss_queue *q, const void *src, size_t n) {
    const uint8_t *s = src;
    size_t first = q->cap - q->tail < n ? q->cap - q->tail : n;
    memcpy(q->buf + q->tail, s, first);
    memcpy(q->buf, s + first, n - first);
    q->tail = (q->tail + n) % q->cap;
    q->used += n;
}

static void ring_peek(const ss_queue *q, size_t at, void *dst, size_t n) {
    uint8_t *d = dst;
    size_t pos = (q->head + at) % q->cap;
    size_t first = q->cap - pos < n ? q->cap - pos : n;
    memcpy(d, q->buf + pos, first);
    memcpy(d + first, q->buf, n - first);
}

static void ring_drop(ss_queue *q, size_t n) {
    q->head = (q->head + n) % q->cap;
    q->used -= n;
}

/* one record: uint32 length of (h + d), then h, then d; never blocks */
int ss__queue_push(ss_queue *q, const void *h, size_t hlen, const void *d, size_t dlen) {
    size_t body = hlen + dlen, rec = sizeof(uint32_t) + body;
    pthread_mutex_lock(&q->mu);
    if (!q->buf || body > UINT32_MAX || rec > q->cap - q->used) {
        q->dropped++;
        pthread_mutex_unlock(&q->mu);
        return SS_ENOSPC;
    }
    uint32_t l = (uint32_t)body;
    ring_write(q, &l, sizeof l);
    if (hlen) ring_write(q, h, hlen);
    if (dlen) ring_write(q, d, dlen);
    q->count++;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return SS_OK;
}

/* wait for a record; returns its body length (>= 0 when one is there), SS_ENOENT on timeout,
 * SS_EIO when the switch is being freed (ss__queue_close) */
static int queue_wait(ss_queue *q, int timeout_ms) {
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    if (timeout_ms > 0) {
        dl.tv_sec += timeout_ms / 1000;
        dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
    }
    while (q->used == 0) {
        if (q->closing) return SS_EIO;
        if (timeout_ms == 0) return SS_ENOENT;
        int r = 0;
        q->waiters++;
        if (timeout_ms < 0)
            pthread_cond_wait(&q->cv, &q->mu);
        else
            r = pthread_cond_timedwait(&q->cv, &q->mu, &dl);
        q->waiters--;
        if (q->closing) {
            pthread_cond_broadcast(&q->cv);  /* ss__queue_close waits for the last waiter */
            return SS_EIO;
        }
        if (r == ETIMEDOUT && q->used == 0) return SS_ENOENT;
    }
    uint32_t l;
    ring_peek(q, 0, &l, sizeof l);
    return (int)l;
}

void ss__packet_in_push(struct ss_switch *sw, const uint8_t *frame, uint32_t len) {
    if (!sw || !frame || len == 0 || len > SS_MAX_FRAME) return;
    ss__queue_push(&sw->pktin, NULL, 0, frame, len);
}

int ss_packet_in_poll(struct ss_switch *sw, uint8_t *buf, uint32_t cap, int timeout_ms) {
    if (!sw || !buf) return SS_EINVAL;
    ss_queue *q = &sw->pktin;
    pthread_mutex_lock(&q->mu);
    int l = queue_wait(q, timeout_ms);
    int rc;
    if (l == SS_ENOENT) {
        rc = 0;
    } else if (l == SS_EIO) {
        rc = ss__error(sw, SS_EIO, "the switch is being freed");
    } else if ((uint32_t)l > cap) {
        /* dropped, not left in place: it would be the head of the queue for every later poll */
        ring_drop(q, sizeof(uint32_t) + (size_t)l);
        q->dropped++;
        rc = ss__error(sw, SS_ENOSPC, "packet-in frame of %d bytes did not fit in %u: dropped", l, cap);
    } else {
        ring_peek(q, sizeof(uint32_t), buf, (size_t)l);
        ring_drop(q, sizeof(uint32_t) + (size_t)l);
        rc = l;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

int ss_digest_poll(struct ss_switch *sw, uint32_t *digest, uint64_t *fields, uint32_t max_fields,
                   uint32_t *n_fields, int timeout_ms) {
    if (!sw || !digest || !n_fields || (max_fields && !fields)) return SS_EINVAL;
    ss_queue *q = &sw->digests;
    pthread_mutex_lock(&q->mu);
    int l = queue_wait(q, timeout_ms);
    int rc;
    if (l == SS_ENOENT) {
        rc = 0;
    } else if (l == SS_EIO) {
        rc = ss__error(sw, SS_EIO, "the switch is being freed");
    } else {
        uint32_t hdr[2];
        ring_peek(q, sizeof(uint32_t), hdr, sizeof hdr);
        if (hdr[1] > max_fields) {  /* dropped, as a packet-in frame that does not fit */
            q->dropped++;
            rc = ss__error(sw, SS_ENOSPC, "digest %u has %u fields, room for %u: dropped", hdr[0], hdr[1],
                           max_fields);
        } else {
            if (hdr[1]) ring_peek(q, sizeof(uint32_t) + sizeof hdr, fields, (size_t)hdr[1] * sizeof(uint64_t));
            *digest = hdr[0];
            *n_fields = hdr[1];
            rc = 1;  /* not the field count: a digest with no fields is not a timeout */
        }
        ring_drop(q, sizeof(uint32_t) + (size_t)l);
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

/* ------------------------------------------------------------------ create / free */
static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

struct ss_switch *ss_switch_new(uint32_t cpu_port, uint64_t seed) {
    struct ss_switch *sw = calloc(1, sizeof *sw);
    if (!sw) return NULL;
    pthread_mutex_init(&sw->lock, NULL);
    sw->cpu_port = cpu_port;
    sw->seed = seed;
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) sw->rng[i] = splitmix64(&x);
    const char *lm = getenv("SS_LOG_MSG");
    sw->log_msgs = lm && *lm && *lm != '0';
    sw->dmeters = calloc(8, sizeof *sw->dmeters);
    ss__queue_init(&sw->pktin, PKTIN_QUEUE_BYTES);
    ss__queue_init(&sw->digests, DIGEST_QUEUE_BYTES);
    if (!sw->dmeters || !sw->pktin.buf || !sw->digests.buf) {
        free(sw->dmeters);
        ss__queue_destroy(&sw->pktin);
        ss__queue_destroy(&sw->digests);
        pthread_mutex_destroy(&sw->lock);
        free(sw);
        return NULL;
    }
    return sw;
}

static void free_replicas(ss_replicas *r) {
    if (!r) return;
    free(r->ports);
    free(r->rids);
    free(r);
}

static void free_arena(struct ss_switch *sw) {
    free(sw->arena);
    sw->arena = NULL;
    for (uint32_t i = 0; i < sw->snap_cap; i++) free(sw->snaps[i]);
    free(sw->snaps);
    sw->snaps = NULL;
    sw->snap_cap = sw->snap_head = sw->snap_used = 0;
    free(sw->eq);
    sw->eq = NULL;
    sw->eq_cap = sw->eq_head = sw->eq_n = 0;
    for (uint32_t i = 0; i < SS_MAX_PASSES; i++) {
        free(sw->items[i].buf);
        sw->items[i].buf = NULL;
    }
    free(sw->outbuf);
    sw->outbuf = NULL;
}

void ss_switch_free(struct ss_switch *sw) {
    if (!sw) return;
    ss__io_free(sw);
    /* polls blocked on the queues return SS_EIO before the queues go (a poll that starts
     * after this call has begun is the caller's use-after-free) */
    ss__queue_close(&sw->pktin);
    ss__queue_close(&sw->digests);
    for (uint32_t i = 0; i < sw->n_tables; i++) ss__table_free(sw->tables[i]);
    free(sw->tables);
    /* backwards: a bank's first member frees its later members' descriptors with its own */
    for (uint32_t i = sw->n_registers; i-- > 0;)
        if (sw->registers[i] && sw->registers[i]->owns_cells) {
            free(sw->registers[i]->cells);
            free(sw->registers[i]);
        }
    free(sw->registers);
    for (uint32_t i = 0; i < sw->n_counters; i++)
        if (sw->counters[i]) { free(sw->counters[i]->cells); free(sw->counters[i]); }
    free(sw->counters);
    for (uint32_t i = 0; i < sw->n_meters; i++)
        if (sw->meters[i]) { free(sw->meters[i]->cells); free(sw->meters[i]); }
    free(sw->meters);
    for (uint32_t i = 0; i < sw->n_vsets; i++)
        if (sw->vsets[i]) { free(sw->vsets[i]->vals); free(sw->vsets[i]); }
    free(sw->vsets);
    free(sw->dmeters);
    free(sw->action_params);
    if (sw->groups) {
        for (uint32_t i = 0; i < SS_MAX_GROUP; i++) free_replicas(sw->groups[i]);
        free(sw->groups);
    }
    if (sw->sessions) {
        for (uint32_t i = 0; i < SS_MAX_GROUP; i++) free_replicas(sw->sessions[i]);
        free(sw->sessions);
    }
    free_arena(sw);
    free(sw->pout);
    free(sw->pbuf);
    ss__queue_destroy(&sw->pktin);
    ss__queue_destroy(&sw->digests);
    pthread_mutex_destroy(&sw->lock);
    free(sw);
}

/* ------------------------------------------------------------------ load */
int ss_switch_load(struct ss_switch *sw, const ss_program *prog) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = SS_OK;
    if (!prog) { rc = ss__error(sw, SS_EINVAL, "no program"); goto out; }
    if (prog->abi != SS_ABI_VERSION) {
        rc = ss__error(sw, SS_EINVAL, "program ABI %u, runtime ABI %u", prog->abi, SS_ABI_VERSION);
        goto out;
    }
    if (prog->state_size < sizeof(ss_std_meta) || prog->state_size > (64u << 20)) {
        rc = ss__error(sw, SS_EINVAL, "program state size %u out of range", prog->state_size);
        goto out;
    }
    if (!prog->init || !prog->parser || !prog->ingress || !prog->egress || !prog->deparser) {
        rc = ss__error(sw, SS_EINVAL, "program lacks init/parser/ingress/egress/deparser");
        goto out;
    }
    for (uint32_t i = 0; i < prog->n_tables; i++)
        if (i >= sw->n_tables || !sw->tables[i]) { rc = ss__error(sw, SS_ENOENT, "table %u is not defined", i); goto out; }
    for (uint32_t i = 0; i < prog->n_registers; i++)
        if (i >= sw->n_registers || !sw->registers[i]) { rc = ss__error(sw, SS_ENOENT, "register %u is not defined", i); goto out; }
    for (uint32_t i = 0; prog->register_layout && i < prog->n_registers; i++) {
        const ss_register_slot *l = &prog->register_layout[i];
        const ss_register *r = sw->registers[i];
        int same = l->bank < sw->n_registers && sw->registers[l->bank] && l->member < l->members
                   && r->size == l->size && r->stride == l->members && r->width == l->width
                   && r->cells == sw->registers[l->bank]->cells + l->member;
        if (!same) {
            rc = ss__error(sw, SS_EINVAL,
                           "register %u: defined with %llu cells of %u bits (stride %llu), the program was "
                           "compiled for %llu cells of %u bits, member %u of %u of the bank at register %u",
                           i, (unsigned long long)r->size, r->width, (unsigned long long)r->stride,
                           (unsigned long long)l->size, l->width, l->member, l->members, l->bank);
            goto out;
        }
    }
    for (uint32_t i = 0; i < prog->n_counters; i++)
        if (i >= sw->n_counters || !sw->counters[i]) { rc = ss__error(sw, SS_ENOENT, "counter %u is not defined", i); goto out; }
    for (uint32_t i = 0; i < prog->n_meters; i++)
        if (i >= sw->n_meters || !sw->meters[i]) { rc = ss__error(sw, SS_ENOENT, "meter %u is not defined", i); goto out; }
    if (prog->n_direct_meters > 8) {
        rc = ss__error(sw, SS_EINVAL, "%u direct meters (at most 8)", prog->n_direct_meters);
        goto out;
    }
    for (uint32_t i = 0; i < prog->n_direct_meters; i++)
        if (!sw->dmeters[i].defined) { rc = ss__error(sw, SS_ENOENT, "direct meter %u is not defined", i); goto out; }

    free_arena(sw);
    size_t slot = ((size_t)prog->state_size + 63u) & ~(size_t)63u;
    size_t n_slots = 2 + SS_MAX_PASSES;
    sw->arena = aligned_alloc(64, slot * n_slots);
    sw->outbuf = malloc((size_t)SS_OUT_HEADROOM + SS_MAX_FRAME);
    sw->snaps = calloc(SS_E2E_SLOTS, sizeof *sw->snaps);
    sw->eq = calloc(SS_EQ_CAP, sizeof *sw->eq);
    int ok = sw->arena && sw->outbuf && sw->snaps && sw->eq;
    if (ok) {
        sw->snap_cap = SS_E2E_SLOTS;
        sw->eq_cap = SS_EQ_CAP;
        for (uint32_t i = 0; ok && i < SS_E2E_SLOTS; i++) ok = (sw->snaps[i] = aligned_alloc(64, slot)) != NULL;
    }
    for (uint32_t i = 1; ok && i < SS_MAX_PASSES; i++) ok = (sw->items[i].buf = malloc(SS_MAX_FRAME)) != NULL;
    if (!ok) {
        free_arena(sw);
        sw->prog = NULL;
        rc = ss__error(sw, SS_ENOMEM, "out of memory for the pipeline buffers");
        goto out;
    }
    memset(sw->arena, 0, slot * n_slots);
    uint8_t *a = sw->arena;
    sw->slot_size = slot;
    sw->st_in = a;
    sw->st_eg = a + slot;
    for (uint32_t i = 0; i < SS_MAX_PASSES; i++) sw->items[i].state = a + (2 + i) * slot;
    sw->prog = prog;
out:
    ss__unlock(sw);
    return rc;
}

int ss_get_stats(struct ss_switch *sw, ss_stats *stats) {
    if (!sw || !stats) return SS_EINVAL;
    ss__lock(sw);
    *stats = sw->stats;
    ss__unlock(sw);
    pthread_mutex_lock(&sw->pktin.mu);
    stats->pktin_dropped = sw->pktin.dropped;
    pthread_mutex_unlock(&sw->pktin.mu);
    pthread_mutex_lock(&sw->digests.mu);
    stats->digest_dropped = sw->digests.dropped;
    pthread_mutex_unlock(&sw->digests.mu);
    return SS_OK;
}

/* ------------------------------------------------------------------ packet replication engine */
static int set_replicas(struct ss_switch *sw, ss_replicas ***tab, uint32_t id, const uint32_t *ports,
                        const uint32_t *rids, uint32_t n, uint32_t plb, const char *what) {
    if (id == 0 || id >= SS_MAX_GROUP)
        return ss__error(sw, SS_EINVAL, "%s id %u must be in 1..%u", what, id, SS_MAX_GROUP - 1);
    if (n > (1u << 20)) return ss__error(sw, SS_EINVAL, "%s %u: %u replicas", what, id, n);
    if (n && (!ports || !rids)) return ss__error(sw, SS_EINVAL, "%s %u: ports and rids are required", what, id);
    if (!*tab) {
        *tab = calloc(SS_MAX_GROUP, sizeof(ss_replicas *));
        if (!*tab) return ss__error(sw, SS_ENOMEM, "out of memory");
    }
    ss_replicas *r = calloc(1, sizeof *r);
    uint32_t *p = malloc((n ? n : 1) * sizeof(uint32_t)), *q = malloc((n ? n : 1) * sizeof(uint32_t));
    if (!r || !p || !q) {
        free(r);
        free(p);
        free(q);
        return ss__error(sw, SS_ENOMEM, "out of memory");
    }
    if (n) {
        memcpy(p, ports, n * sizeof(uint32_t));
        memcpy(q, rids, n * sizeof(uint32_t));
    }
    r->n = n;
    r->ports = p;
    r->rids = q;
    r->packet_length_bytes = plb;
    free_replicas((*tab)[id]);
    (*tab)[id] = r;
    return SS_OK;
}

static int del_replicas(struct ss_switch *sw, ss_replicas **tab, uint32_t id, const char *what) {
    if (id >= SS_MAX_GROUP || !tab || !tab[id]) return ss__error(sw, SS_ENOENT, "no %s %u", what, id);
    free_replicas(tab[id]);
    tab[id] = NULL;
    return SS_OK;
}

int ss_mc_group_set(struct ss_switch *sw, uint32_t group, const uint32_t *ports, const uint32_t *rids,
                    uint32_t n) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = set_replicas(sw, &sw->groups, group, ports, rids, n, 0, "multicast group");
    ss__unlock(sw);
    return rc;
}

int ss_mc_group_delete(struct ss_switch *sw, uint32_t group) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = del_replicas(sw, sw->groups, group, "multicast group");
    ss__unlock(sw);
    return rc;
}

int ss_clone_session_set(struct ss_switch *sw, uint32_t session, const uint32_t *ports,
                         const uint32_t *rids, uint32_t n, uint32_t packet_length_bytes) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = set_replicas(sw, &sw->sessions, session, ports, rids, n, packet_length_bytes, "clone session");
    ss__unlock(sw);
    return rc;
}

int ss_clone_session_delete(struct ss_switch *sw, uint32_t session) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = del_replicas(sw, sw->sessions, session, "clone session");
    ss__unlock(sw);
    return rc;
}
