/* externs.c — registers, counters, meters, value sets, random, digest, log_msg, assert and the
 * v1model requests (clone, resubmit, recirculate, truncate); softswitch/tables.py semantics. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ss_core.h"

#define MAX_OBJECTS (1u << 20)
#define MAX_CELLS (1ull << 30)

/* grow an array of pointers to hold index `idx` */
static int grow(struct ss_switch *sw, void ***arr, uint32_t *n, uint32_t idx) {
    if (idx < *n) return SS_OK;
    void **na = realloc(*arr, (size_t)(idx + 1) * sizeof(void *));
    if (!na) return ss__error(sw, SS_ENOMEM, "out of memory");
    for (uint32_t i = *n; i <= idx; i++) na[i] = NULL;
    *arr = na;
    *n = idx + 1;
    return SS_OK;
}

/* ------------------------------------------------------------------ definitions */
int ss_define_register(struct ss_switch *sw, uint32_t reg, uint32_t width, uint64_t size) {
    return ss_define_register_bank(sw, reg, 1, &width, size);
}

int ss_define_register_bank(struct ss_switch *sw, uint32_t first, uint32_t count, const uint32_t *widths,
                            uint64_t size) {
    if (!sw || !widths) return SS_EINVAL;
    ss__lock(sw);
    int rc = SS_OK;
    ss_register *made = NULL;
    uint64_t *cells = NULL;
    if (count < 1 || first >= MAX_OBJECTS || count > MAX_OBJECTS - first || size > MAX_CELLS
        || size * count > MAX_CELLS) {
        rc = ss__error(sw, SS_EINVAL, "registers %u..%u: count %u / size %llu out of range", first,
                       first + count - 1, count, (unsigned long long)size);
        goto out;
    }
    for (uint32_t k = 0; k < count; k++) {
        if (widths[k] < 1 || widths[k] > 64) {
            rc = ss__error(sw, SS_EINVAL, "register %u: width %u out of range", first + k, widths[k]);
            goto out;
        }
    }
    if ((rc = grow(sw, (void ***)&sw->registers, &sw->n_registers, first + count - 1))) goto out;
    for (uint32_t k = 0; k < count; k++) {
        if (sw->registers[first + k]) {
            rc = ss__error(sw, SS_EEXIST, "register %u is already defined", first + k);
            goto out;
        }
    }
    /* the members' descriptors side by side too: the generated code reads one per access */
    made = calloc(count, sizeof *made);
    cells = calloc(size ? (size_t)(size * count) : 1, sizeof(uint64_t));
    if (!made || !cells) {
        free(made);
        free(cells);
        rc = ss__error(sw, SS_ENOMEM, "out of memory for registers %u..%u", first, first + count - 1);
        goto out;
    }
    for (uint32_t k = 0; k < count; k++) {
        ss_register *r = &made[k];
        r->width = widths[k];
        r->owns_cells = k == 0;  /* the first member frees the cells and the descriptors */
        r->mask = widths[k] >= 64 ? ~0ull : (1ull << widths[k]) - 1ull;
        r->size = size;
        r->stride = count;
        r->cells = cells + k;
        sw->registers[first + k] = r;
    }
out:
    ss__unlock(sw);
    return rc;
}

int ss_define_counter(struct ss_switch *sw, uint32_t counter, uint64_t size, int bytes, int packets) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc;
    if (counter >= MAX_OBJECTS || size > MAX_CELLS) {
        rc = ss__error(sw, SS_EINVAL, "counter %u: size %llu out of range", counter, (unsigned long long)size);
        goto out;
    }
    if ((rc = grow(sw, (void ***)&sw->counters, &sw->n_counters, counter))) goto out;
    if (sw->counters[counter]) { rc = ss__error(sw, SS_EEXIST, "counter %u is already defined", counter); goto out; }
    ss_counter *k = calloc(1, sizeof *k);
    uint64_t *cells = calloc(size ? 2 * (size_t)size : 2, sizeof(uint64_t));
    if (!k || !cells) {
        free(k);
        free(cells);
        rc = ss__error(sw, SS_ENOMEM, "out of memory for counter %u", counter);
        goto out;
    }
    k->size = size;
    k->bytes = bytes != 0;
    k->packets = packets != 0;
    k->cells = cells;
    sw->counters[counter] = k;
out:
    ss__unlock(sw);
    return rc;
}

int ss_define_meter(struct ss_switch *sw, uint32_t meter, uint64_t size, int bytes) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc;
    if (meter >= MAX_OBJECTS || size > (1ull << 24)) {
        rc = ss__error(sw, SS_EINVAL, "meter %u: size %llu out of range", meter, (unsigned long long)size);
        goto out;
    }
    if ((rc = grow(sw, (void ***)&sw->meters, &sw->n_meters, meter))) goto out;
    if (sw->meters[meter]) { rc = ss__error(sw, SS_EEXIST, "meter %u is already defined", meter); goto out; }
    ss_meter *m = calloc(1, sizeof *m);
    ss_meter_cell *cells = calloc(size ? (size_t)size : 1, sizeof *cells);
    if (!m || !cells) {
        free(m);
        free(cells);
        rc = ss__error(sw, SS_ENOMEM, "out of memory for meter %u", meter);
        goto out;
    }
    m->size = size;
    m->bytes = bytes != 0;
    m->cells = cells;
    sw->meters[meter] = m;
out:
    ss__unlock(sw);
    return rc;
}

int ss_define_direct_meter(struct ss_switch *sw, uint32_t dmeter, int bytes) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = SS_OK;
    if (dmeter >= 8) {
        rc = ss__error(sw, SS_EINVAL, "direct meter %u out of range (0..7)", dmeter);
    } else if (sw->dmeters[dmeter].defined) {
        rc = ss__error(sw, SS_EEXIST, "direct meter %u is already defined", dmeter);
    } else {
        sw->dmeters[dmeter].defined = 1;
        sw->dmeters[dmeter].bytes = bytes != 0;
        if (dmeter + 1 > sw->n_dmeters) sw->n_dmeters = dmeter + 1;
    }
    ss__unlock(sw);
    return rc;
}

int ss_define_value_set(struct ss_switch *sw, uint32_t vs, uint32_t n_keys, uint32_t size) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc;
    if (vs >= MAX_OBJECTS || n_keys > SS_MAX_KEYS || size > (1u << 20)) {
        rc = ss__error(sw, SS_EINVAL, "value set %u: %u keys / size %u out of range", vs, n_keys, size);
        goto out;
    }
    if ((rc = grow(sw, (void ***)&sw->vsets, &sw->n_vsets, vs))) goto out;
    if (sw->vsets[vs]) { rc = ss__error(sw, SS_EEXIST, "value set %u is already defined", vs); goto out; }
    ss_value_set *v = calloc(1, sizeof *v);
    uint64_t *vals = calloc((size_t)size * n_keys * 2 + 1, sizeof(uint64_t));
    if (!v || !vals) {
        free(v);
        free(vals);
        rc = ss__error(sw, SS_ENOMEM, "out of memory for value set %u", vs);
        goto out;
    }
    v->n_keys = n_keys;
    v->size = size;
    v->vals = vals;
    sw->vsets[vs] = v;
out:
    ss__unlock(sw);
    return rc;
}

/* ------------------------------------------------------------------ registers */
uint64_t ss_register_read(ss_ctx *c, uint32_t reg, uint64_t index) {
    struct ss_switch *sw = c->sw;
    if (reg >= sw->n_registers || !sw->registers[reg]) return 0;
    ss_register *r = sw->registers[reg];
    return index < r->size ? r->cells[index * r->stride] : 0;
}

void ss_register_write(ss_ctx *c, uint32_t reg, uint64_t index, uint64_t value) {
    struct ss_switch *sw = c->sw;
    if (reg >= sw->n_registers || !sw->registers[reg]) return;
    ss_register *r = sw->registers[reg];
    if (index < r->size) r->cells[index * r->stride] = value & r->mask;
}

uint64_t *ss_register_cells(ss_ctx *c, uint32_t reg, uint64_t *size, uint64_t *stride) {
    struct ss_switch *sw = c->sw;
    if (reg >= sw->n_registers || !sw->registers[reg]) {
        if (size) *size = 0;
        if (stride) *stride = 1;
        return NULL;
    }
    if (size) *size = sw->registers[reg]->size;
    if (stride) *stride = sw->registers[reg]->stride;
    return sw->registers[reg]->cells;
}

static ss_register *get_reg(struct ss_switch *sw, uint32_t reg, uint64_t index) {
    if (reg >= sw->n_registers || !sw->registers[reg]) {
        ss__error(sw, SS_ENOENT, "register %u is not defined", reg);
        return NULL;
    }
    if (index >= sw->registers[reg]->size) {
        ss__error(sw, SS_EINVAL, "index %llu out of range for register %u (size %llu)",
                  (unsigned long long)index, reg, (unsigned long long)sw->registers[reg]->size);
        return NULL;
    }
    return sw->registers[reg];
}

int ss_register_get(struct ss_switch *sw, uint32_t reg, uint64_t index, uint64_t *value) {
    if (!sw || !value) return SS_EINVAL;
    ss__lock(sw);
    ss_register *r = get_reg(sw, reg, index);
    int rc = r ? SS_OK : (reg >= sw->n_registers || !sw->registers[reg] ? SS_ENOENT : SS_EINVAL);
    if (r) *value = r->cells[index * r->stride] & r->mask;
    ss__unlock(sw);
    return rc;
}

int ss_register_set(struct ss_switch *sw, uint32_t reg, uint64_t index, uint64_t value) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = SS_OK;
    ss_register *r = get_reg(sw, reg, index);
    if (!r) {
        rc = reg >= sw->n_registers || !sw->registers[reg] ? SS_ENOENT : SS_EINVAL;
    } else if (value & ~r->mask) {
        rc = ss__error(sw, SS_EINVAL, "value %llu does not fit in register %u (%u bits)",
                       (unsigned long long)value, reg, r->width);
    } else {
        r->cells[index * r->stride] = value;
    }
    ss__unlock(sw);
    return rc;
}

int ss_register_reset(struct ss_switch *sw, uint32_t reg) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = SS_OK;
    if (reg >= sw->n_registers || !sw->registers[reg])
        rc = ss__error(sw, SS_ENOENT, "register %u is not defined", reg);
    else
        for (uint64_t i = 0; i < sw->registers[reg]->size; i++)
            sw->registers[reg]->cells[i * sw->registers[reg]->stride] = 0;
    ss__unlock(sw);
    return rc;
}

/* ------------------------------------------------------------------ counters */
void ss_counter_count(ss_ctx *c, uint32_t counter, uint64_t index) {
    struct ss_switch *sw = c->sw;
    if (counter >= sw->n_counters || !sw->counters[counter]) return;
    ss_counter *k = sw->counters[counter];
    if (index < k->size) {
        k->cells[2 * index] += c->len;
        k->cells[2 * index + 1] += 1;
    }
}

static ss_counter *get_counter(struct ss_switch *sw, uint32_t counter, uint64_t index, int *rc) {
    if (counter >= sw->n_counters || !sw->counters[counter]) {
        *rc = ss__error(sw, SS_ENOENT, "counter %u is not defined", counter);
        return NULL;
    }
    if (index >= sw->counters[counter]->size) {
        *rc = ss__error(sw, SS_EINVAL, "index %llu out of range for counter %u (size %llu)",
                        (unsigned long long)index, counter, (unsigned long long)sw->counters[counter]->size);
        return NULL;
    }
    *rc = SS_OK;
    return sw->counters[counter];
}

int ss_counter_get(struct ss_switch *sw, uint32_t counter, uint64_t index, uint64_t *bytes,
                   uint64_t *packets) {
    if (!sw || !bytes || !packets) return SS_EINVAL;
    ss__lock(sw);
    int rc;
    ss_counter *k = get_counter(sw, counter, index, &rc);
    if (k) {
        *bytes = k->cells[2 * index];
        *packets = k->cells[2 * index + 1];
    }
    ss__unlock(sw);
    return rc;
}

int ss_counter_set(struct ss_switch *sw, uint32_t counter, uint64_t index, uint64_t bytes,
                   uint64_t packets) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc;
    ss_counter *k = get_counter(sw, counter, index, &rc);
    if (k) {
        k->cells[2 * index] = bytes;
        k->cells[2 * index + 1] = packets;
    }
    ss__unlock(sw);
    return rc;
}

/* ------------------------------------------------------------------ meters */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ss__meter_configure(ss_meter_cell *m, uint64_t cir, uint64_t cburst, uint64_t pir,
                         uint64_t pburst) {
    m->configured = 1;
    m->cir = cir;
    m->cburst = cburst;
    m->pir = pir;
    m->pburst = pburst;
    m->tc = (double)cburst;
    m->tp = (double)pburst;
    m->last = now_s();
}

uint64_t ss__meter_mark(ss_meter_cell *m, uint64_t amount) {
    if (!m->configured) return 0;
    double now = now_s(), dt = now - m->last;
    m->last = now;
    m->tc = fmin((double)m->cburst, m->tc + dt * (double)m->cir);
    m->tp = fmin((double)m->pburst, m->tp + dt * (double)m->pir);
    double a = (double)amount;
    if (m->tp < a) return 2;
    m->tp -= a;
    if (m->tc < a) return 1;
    m->tc -= a;
    return 0;
}

uint64_t ss_meter_execute(ss_ctx *c, uint32_t meter, uint64_t index) {
    struct ss_switch *sw = c->sw;
    if (meter >= sw->n_meters || !sw->meters[meter]) return 0;
    ss_meter *m = sw->meters[meter];
    if (index >= m->size) return 0;
    return ss__meter_mark(&m->cells[index], m->bytes ? c->len : 1);
}

int ss_meter_config(struct ss_switch *sw, uint32_t meter, uint64_t index, uint64_t cir,
                    uint64_t cburst, uint64_t pir, uint64_t pburst) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = SS_OK;
    if (meter >= sw->n_meters || !sw->meters[meter])
        rc = ss__error(sw, SS_ENOENT, "meter %u is not defined", meter);
    else if (index >= sw->meters[meter]->size)
        rc = ss__error(sw, SS_EINVAL, "index %llu out of range for meter %u (size %llu)",
                       (unsigned long long)index, meter, (unsigned long long)sw->meters[meter]->size);
    else if (pir < cir)
        rc = ss__error(sw, SS_EINVAL, "meter peak rate must be at least the committed rate");
    else
        ss__meter_configure(&sw->meters[meter]->cells[index], cir, cburst, pir, pburst);
    ss__unlock(sw);
    return rc;
}

/* ------------------------------------------------------------------ value sets */
int ss_value_set_match(ss_ctx *c, uint32_t vs, const uint64_t *keys) {
    struct ss_switch *sw = c->sw;
    if (vs >= sw->n_vsets || !sw->vsets[vs]) return 0;
    const ss_value_set *v = sw->vsets[vs];
    const uint64_t *masks = v->vals + (size_t)v->size * v->n_keys;
    for (uint32_t j = 0; j < v->count; j++) {
        const uint64_t *vals = v->vals + (size_t)j * v->n_keys, *m = masks + (size_t)j * v->n_keys;
        uint32_t i = 0;
        for (; i < v->n_keys; i++)
            if ((keys[i] & m[i]) != vals[i]) break;
        if (i == v->n_keys) return 1;
    }
    return 0;
}

/* value set vs, or NULL with the switch's error set (the caller holds the lock) */
static ss_value_set *get_vset(struct ss_switch *sw, uint32_t vs) {
    if (vs >= sw->n_vsets || !sw->vsets[vs]) {
        ss__error(sw, SS_ENOENT, "value set %u is not defined", vs);
        return NULL;
    }
    return sw->vsets[vs];
}

int ss_value_set_add(struct ss_switch *sw, uint32_t vs, const uint64_t *values, const uint64_t *masks) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = SS_OK;
    ss_value_set *v = get_vset(sw, vs);
    if (!v) {
        rc = SS_ENOENT;
        goto out;
    }
    if (v->n_keys && (!values || !masks)) {
        rc = ss__error(sw, SS_EINVAL, "value set %u: values and masks are required", vs);
        goto out;
    }
    if (v->count >= v->size) {
        rc = ss__error(sw, SS_ENOSPC, "value set %u is full (%u members)", vs, v->size);
        goto out;
    }
    uint64_t *vals = v->vals + (size_t)v->count * v->n_keys;
    uint64_t *msks = v->vals + (size_t)v->size * v->n_keys + (size_t)v->count * v->n_keys;
    for (uint32_t i = 0; i < v->n_keys; i++) {  /* stored masked: matching compares key & mask */
        vals[i] = values[i] & masks[i];
        msks[i] = masks[i];
    }
    v->count++;
out:
    ss__unlock(sw);
    return rc;
}

int ss_value_set_replace(struct ss_switch *sw, uint32_t vs, uint32_t n, const uint64_t *values,
                         const uint64_t *masks) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = SS_OK;
    ss_value_set *v = get_vset(sw, vs);
    if (!v) {
        rc = SS_ENOENT;
        goto out;
    }
    if (n > v->size) {
        rc = ss__error(sw, SS_ENOSPC, "value set %u holds at most %u members (%u given)", vs, v->size, n);
        goto out;
    }
    if (n && v->n_keys && (!values || !masks)) {
        rc = ss__error(sw, SS_EINVAL, "value set %u: values and masks are required", vs);
        goto out;
    }
    size_t total = (size_t)n * v->n_keys;
    uint64_t *msks = v->vals + (size_t)v->size * v->n_keys;
    for (size_t i = 0; i < total; i++) {
        v->vals[i] = values[i] & masks[i];
        msks[i] = masks[i];
    }
    v->count = n;
out:
    ss__unlock(sw);
    return rc;
}

int ss_value_set_clear(struct ss_switch *sw, uint32_t vs) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = SS_OK;
    ss_value_set *v = get_vset(sw, vs);
    if (v)
        v->count = 0;
    else
        rc = SS_ENOENT;
    ss__unlock(sw);
    return rc;
}

/* ------------------------------------------------------------------ random */
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t ss__rand64(struct ss_switch *sw) {  /* xoshiro256** */
    uint64_t *s = sw->rng;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t ss_random(ss_ctx *c, uint64_t lo, uint64_t hi) {
    if (lo >= hi) return lo;
    uint64_t span = hi - lo;
    if (span == ~0ull) return ss__rand64(c->sw);
    uint64_t range = span + 1, threshold = (0 - range) % range;  /* unbiased: reject the low tail */
    for (;;) {
        uint64_t r = ss__rand64(c->sw);
        if (r >= threshold) return lo + r % range;
    }
}

/* ------------------------------------------------------------------ digests, logs, asserts */
void ss_digest(ss_ctx *c, uint32_t digest, const uint64_t *fields, uint32_t n_fields) {
    struct ss_switch *sw = c->sw;
    if (n_fields > SS_MAX_DIGEST_FIELDS || (n_fields && !fields)) {
        pthread_mutex_lock(&sw->digests.mu);
        sw->digests.dropped++;
        pthread_mutex_unlock(&sw->digests.mu);
        return;
    }
    uint32_t hdr[2] = {digest, n_fields};
    ss__queue_push(&sw->digests, hdr, sizeof hdr, fields, (size_t)n_fields * sizeof(uint64_t));
}

void ss_log_msg(ss_ctx *c, const char *fmt, const uint64_t *args, uint32_t n_args) {
    if (!c->sw->log_msgs || !fmt) return;
    char out[1024];
    size_t o = 0;
    uint32_t a = 0;
    for (const char *p = fmt; *p && o + 1 < sizeof out; p++) {
        if (p[0] == '{' && p[1] == '}' && a < n_args && args) {
            int k = snprintf(out + o, sizeof out - o, "%llu", (unsigned long long)args[a++]);
            if (k < 0) break;
            o += (size_t)k < sizeof out - o ? (size_t)k : sizeof out - o - 1;
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
    fprintf(stderr, "softswitch: log_msg: %s\n", out);
}

void ss_assert_failed(ss_ctx *c, const char *where) {
    ss_pass *p = (ss_pass *)c;  /* ss_ctx is the first member of ss_pass */
    p->asserted = 1;
    c->exited = 1;
    if (c->sw->log_msgs) fprintf(stderr, "softswitch: assert failed at %s; packet dropped\n", where ? where : "?");
}

/* ------------------------------------------------------------------ v1model requests */
void ss_clone(ss_ctx *c, int e2e, uint32_t session, int32_t field_list) {
    c->clone_e2e = e2e != 0;
    c->clone_session = session;
    c->clone_fl = field_list < 0 ? 0 : field_list;
}

void ss_resubmit(ss_ctx *c, int32_t field_list) { c->resubmit_fl = field_list < 0 ? 0 : field_list; }

void ss_recirculate(ss_ctx *c, int32_t field_list) { c->recirculate_fl = field_list < 0 ? 0 : field_list; }

void ss_truncate(ss_ctx *c, uint32_t length) { c->truncate_len = length; }
