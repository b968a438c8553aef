/* io_prog.c — a tiny hand-written ss_program_desc for the I/O tests (io_test.c).
 *
 * The parser reads the EtherType without consuming anything (the whole frame is payload, so
 * the frame leaves unchanged); ingress picks the output port by io_prog_mode:
 *   IO_PROG_CROSS: 1 <-> 2, 3 <-> 4, anything else dropped;
 *   IO_PROG_ECHO:  out of the port it came in on.
 * In both modes a frame from the CPU port (packet-out) goes to port 2 and a frame of
 * EtherType IO_PROG_ETH_TO_CPU goes to the CPU port (packet-in). */
#include <stdint.h>

#include "ss_runtime.h"
#include "io_prog.h"

int io_prog_mode = IO_PROG_CROSS;
uint32_t io_prog_cpu_port = 64;

typedef struct st {
    ss_std_meta sm;
    uint64_t etype;
} st;

static void init(void *s)
{
    st *x = s;
    *x = (st){0};
}

static int parser(ss_ctx *c, void *s)
{
    st *x = s;
    x->etype = c->len >= 14 ? ((uint64_t)c->data[12] << 8) | c->data[13] : 0;
    c->off = 0;
    return 0;
}

static void nop(ss_ctx *c, void *s)
{
    (void)c;
    (void)s;
}

static void ingress(ss_ctx *c, void *s)
{
    (void)c;
    st *x = s;
    uint64_t in = x->sm.ingress_port;
    uint32_t cpu = __atomic_load_n(&io_prog_cpu_port, __ATOMIC_RELAXED);
    if (in == cpu) {
        x->sm.egress_spec = 2;
        return;
    }
    if (x->etype == IO_PROG_ETH_TO_CPU) {
        x->sm.egress_spec = cpu;
        return;
    }
    if (__atomic_load_n(&io_prog_mode, __ATOMIC_RELAXED) == IO_PROG_ECHO) {
        x->sm.egress_spec = in;
        return;
    }
    static const uint64_t cross[5] = {511, 2, 1, 4, 3};
    x->sm.egress_spec = in < 5 ? cross[in] : 511;
}

static int deparser(ss_ctx *c, void *s)
{
    (void)c;
    (void)s;
    return 0;
}

static const char *const errors[] = {"NoError"};

const ss_program ss_program_desc = {
    .abi = SS_ABI_VERSION,
    .state_size = sizeof(st),
    .init = init,
    .parser = parser,
    .verify_checksum = nop,
    .ingress = ingress,
    .egress = nop,
    .compute_checksum = nop,
    .deparser = deparser,
    .n_errors = 1,
    .error_names = errors,
};
