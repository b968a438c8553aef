/* io_stub_core.c — a minimal stand-in for the runtime core (switch.c & co.) so that io.c and
 * netem.c can be tested, and their throughput measured, on their own: the ss_internal.h
 * functions plus the few control calls io_test.c uses.  The "pipeline" runs the program's
 * parser and ingress only and emits the input frame unchanged to egress_spec (511 drops). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ss_internal.h"

#define PIN_CAP 1024u

struct ss_switch {
    pthread_mutex_t lock;
    uint32_t cpu_port;
    const ss_program *prog;
    void *state;
    void *io;
    char err[256];
    pthread_mutex_t pin_lock;
    pthread_cond_t pin_cv;
    uint8_t *pin_buf[PIN_CAP];
    uint32_t pin_len[PIN_CAP];
    uint32_t pin_head, pin_n;
};

struct ss_switch *ss_switch_new(uint32_t cpu_port, uint64_t seed)
{
    (void)seed;
    struct ss_switch *sw = calloc(1, sizeof *sw);
    if (!sw)
        return NULL;
    pthread_mutex_init(&sw->lock, NULL);
    pthread_mutex_init(&sw->pin_lock, NULL);
    pthread_cond_init(&sw->pin_cv, NULL);
    sw->cpu_port = cpu_port;
    return sw;
}

void ss_switch_free(struct ss_switch *sw)
{
    if (!sw)
        return;
    ss__io_free(sw);
    for (uint32_t i = 0; i < sw->pin_n; i++)
        free(sw->pin_buf[(sw->pin_head + i) % PIN_CAP]);
    free(sw->state);
    pthread_mutex_destroy(&sw->lock);
    pthread_mutex_destroy(&sw->pin_lock);
    pthread_cond_destroy(&sw->pin_cv);
    free(sw);
}

const char *ss_last_error(struct ss_switch *sw) { return sw->err; }

int ss__error(struct ss_switch *sw, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sw->err, sizeof sw->err, fmt, ap);
    va_end(ap);
    return code;
}

int ss_switch_load(struct ss_switch *sw, const ss_program *prog)
{
    ss__lock(sw);
    free(sw->state);
    sw->state = calloc(1, prog->state_size);
    sw->prog = sw->state ? prog : NULL;
    ss__unlock(sw);
    return sw->state ? SS_OK : SS_ENOMEM;
}

void ss__lock(struct ss_switch *sw) { pthread_mutex_lock(&sw->lock); }
void ss__lock_dp(struct ss_switch *sw) { pthread_mutex_lock(&sw->lock); }
void ss__unlock(struct ss_switch *sw) { pthread_mutex_unlock(&sw->lock); }
uint32_t ss__cpu_port(struct ss_switch *sw) { return sw->cpu_port; }
void **ss__io_slot(struct ss_switch *sw) { return &sw->io; }

int ss__run_pipeline(struct ss_switch *sw, uint32_t ingress_port, const uint8_t *data, uint32_t len,
                     ss_emit_fn emit, void *arg)
{
    const ss_program *p = sw->prog;
    if (!p)
        return ss__error(sw, SS_EINVAL, "no program loaded");
    if (len > SS_MAX_FRAME)
        return ss__error(sw, SS_EINVAL, "frame too long");
    p->init(sw->state);
    ss_std_meta *sm = sw->state;
    sm->ingress_port = ingress_port;
    sm->packet_length = len;
    ss_ctx c = {.sw = sw, .data = data, .len = len};
    p->parser(&c, sw->state);
    p->ingress(&c, sw->state);
    if (sm->egress_spec == SS_DROP_PORT)
        return 0;
    emit(arg, (uint32_t)sm->egress_spec, data, len);
    return 1;
}

void ss__packet_in_push(struct ss_switch *sw, const uint8_t *frame, uint32_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return;
    memcpy(copy, frame, len);
    pthread_mutex_lock(&sw->pin_lock);
    if (sw->pin_n == PIN_CAP) {
        free(copy);
    } else {
        uint32_t i = (sw->pin_head + sw->pin_n++) % PIN_CAP;
        sw->pin_buf[i] = copy;
        sw->pin_len[i] = len;
        pthread_cond_signal(&sw->pin_cv);
    }
    pthread_mutex_unlock(&sw->pin_lock);
}

int ss_packet_in_poll(struct ss_switch *sw, uint8_t *buf, uint32_t cap, int timeout_ms)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&sw->pin_lock);
    while (sw->pin_n == 0)
        if (pthread_cond_timedwait(&sw->pin_cv, &sw->pin_lock, &dl) != 0)
            break;
    int r = 0;
    if (sw->pin_n) {
        uint32_t i = sw->pin_head;
        uint32_t n = sw->pin_len[i] < cap ? sw->pin_len[i] : cap;
        memcpy(buf, sw->pin_buf[i], n);
        free(sw->pin_buf[i]);
        sw->pin_head = (sw->pin_head + 1) % PIN_CAP;
        sw->pin_n--;
        r = (int)n;
    }
    pthread_mutex_unlock(&sw->pin_lock);
    return r;
}
