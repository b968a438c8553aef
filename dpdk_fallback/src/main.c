/* replay_server: command line, I/O path choice, the single-threaded event loop, signals. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "proto.h"
#include "server.h"

#define RX_BURST 64
#define MAX_TABLES 1024
#define MIB (1024ull * 1024ull)

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static const char USAGE[] =
    "usage: replay_server [options]\n"
    "Prioritized experience replay memory server (docs/replay_protocol.md), UDP.\n"
    "\n"
    "  --io sockets|dpdk        I/O path (default sockets: kernel UDP socket)\n"
    "  --bind IP                sockets: IPv4 address to bind (default 0.0.0.0)\n"
    "  --port N                 UDP port to serve (default 47100)\n"
    "  --dpdk-args \"EAL ARGS\"   dpdk: EAL arguments, space separated\n"
    "  --dpdk-ip IP             dpdk: the server's IPv4 address on the DPDK port\n"
    "  --table NAME:max_size=N[,alpha=A][,priorities=host|switch]\n"
    "                           define a table (repeatable; ids 0, 1, ... in order);\n"
    "                           alpha default 0.6 (0..4), priorities default host\n"
    "  --param-slots N          parameter blob slots (default 4)\n"
    "  --max-item-bytes N       largest item (default 16 MiB; suffixes k, m, g = KiB, MiB, GiB)\n"
    "  --max-message-bytes N    largest request or reply body (default 64 MiB, at most\n"
    "                           65535 fragments of 1400 bytes)\n"
    "  --reassembly-timeout S   drop a partial request after S seconds without a fragment\n"
    "                           (default 5)\n"
    "  --reply-cache-entries N  replies kept for dedupe and RESEND (default 4096)\n"
    "  --reply-cache-bytes N    their total body bytes (default 256 MiB); a reply larger\n"
    "                           than this is not cached, so its resent request runs again\n"
    "  --checkpoint PATH        restore from PATH at start if it exists; write it on the\n"
    "                           CHECKPOINT op, at SIGINT/SIGTERM exit and every\n"
    "                           --checkpoint-every seconds (temp file + rename)\n"
    "  --checkpoint-every S     periodic checkpoint interval (needs --checkpoint)\n"
    "  --seed N                 sampling RNG seed (default: from the clock)\n"
    "  --quiet                  no log lines on stderr except errors\n"
    "  --help                   this text\n"
    "\n"
    "Prints 'replay_server: ready io=... port=... tables=...' on stdout once serving.\n"
    "Exit status: 0 after SIGINT/SIGTERM, 2 for a bad configuration, 1 for a runtime failure.\n";

struct table_spec {
    char name[RS_TABLE_NAME_MAX + 1];
    uint32_t max_size;
    double alpha;
    enum rs_mode mode;
};

struct config {
    const char *io;
    struct rs_io_config io_cfg;
    struct table_spec tables[MAX_TABLES];
    int n_tables;
    uint32_t param_slots;
    struct rs_limits lim;
    const char *checkpoint;
    double checkpoint_every;
    uint64_t seed;
    int have_seed, quiet;
};

static void die_config(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die_config(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "replay_server: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see --help)\n");
    va_end(ap);
    exit(2);
}

/* Unsigned integer with an optional k/m/g (binary) suffix; exits 2 on anything else. */
static uint64_t parse_size(const char *opt, const char *s, uint64_t lo, uint64_t hi)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-')
        die_config("%s wants a number, got '%s'", opt, s ? s : "");
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t mult = 1;
    if (*end == 'k' || *end == 'K')
        mult = 1024, end++;
    else if (*end == 'm' || *end == 'M')
        mult = MIB, end++;
    else if (*end == 'g' || *end == 'G')
        mult = 1024 * MIB, end++;
    if (errno || end == s || *end || (mult > 1 && v > UINT64_MAX / mult))
        die_config("%s wants a number, got '%s'", opt, s);
    v *= mult;
    if (v < lo || v > hi)
        die_config("%s %s is out of range [%llu, %llu]", opt, s, (unsigned long long)lo,
                   (unsigned long long)hi);
    return v;
}

static double parse_seconds(const char *opt, const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v <= 0 || v > 1e6)
        die_config("%s wants a positive number of seconds, got '%s'", opt, s);
    return v;
}

static void parse_table(struct config *c, const char *arg)
{
    if (c->n_tables >= MAX_TABLES)
        die_config("at most %d tables", MAX_TABLES);
    struct table_spec *t = &c->tables[c->n_tables];
    *t = (struct table_spec){.alpha = 0.6, .mode = RS_MODE_HOST};
    const char *colon = strchr(arg, ':');
    size_t nl = colon ? (size_t)(colon - arg) : strlen(arg);
    if (nl == 0 || nl > RS_TABLE_NAME_MAX)
        die_config("--table '%s': the name must be 1 to %d characters", arg, RS_TABLE_NAME_MAX);
    for (size_t i = 0; i < nl; i++) {
        char ch = arg[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '.'))
            die_config("--table '%s': names use letters, digits, '_', '-' and '.'", arg);
    }
    memcpy(t->name, arg, nl);
    for (int i = 0; i < c->n_tables; i++)
        if (strcmp(c->tables[i].name, t->name) == 0)
            die_config("--table %s is defined twice", t->name);
    if (!colon)
        die_config("--table '%s' needs max_size=N (NAME:max_size=N[,alpha=A][,priorities=host|switch])",
                   arg);
    char *opts = strdup(colon + 1);
    if (!opts)
        die_config("out of memory");
    int have_size = 0;
    for (char *save = NULL, *kv = strtok_r(opts, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            die_config("--table %s: '%s' is not key=value", t->name, kv);
        *eq = 0;
        const char *v = eq + 1;
        if (strcmp(kv, "max_size") == 0) {
            t->max_size = (uint32_t)parse_size("--table max_size", v, 1, RS_TABLE_MAX_SIZE);
            have_size = 1;
        } else if (strcmp(kv, "alpha") == 0) {
            char *end;
            t->alpha = strtod(v, &end);
            if (end == v || *end || !(t->alpha >= 0 && t->alpha <= RS_ALPHA_MAX))
                die_config("--table %s: alpha '%s' must be a number in [0, %g]", t->name, v,
                           RS_ALPHA_MAX);
        } else if (strcmp(kv, "priorities") == 0) {
            if (strcmp(v, "host") == 0)
                t->mode = RS_MODE_HOST;
            else if (strcmp(v, "switch") == 0)
                t->mode = RS_MODE_SWITCH;
            else
                die_config("--table %s: priorities is host or switch, not '%s'", t->name, v);
        } else {
            die_config("--table %s: unknown option '%s' (max_size, alpha, priorities)", t->name, kv);
        }
    }
    free(opts);
    if (!have_size)
        die_config("--table %s needs max_size=N", t->name);
    c->n_tables++;
}

static void parse_args(struct config *c, int argc, char **argv)
{
    enum {
        O_IO = 256, O_BIND, O_PORT, O_DPDK_ARGS, O_DPDK_IP, O_TABLE, O_PARAM_SLOTS, O_MAX_ITEM,
        O_MAX_MSG, O_REASM_TIMEOUT, O_CACHE_ENTRIES, O_CACHE_BYTES, O_CKPT, O_CKPT_EVERY, O_SEED,
        O_QUIET, O_HELP
    };
    static const struct option opts[] = {
        {"io", required_argument, 0, O_IO},
        {"bind", required_argument, 0, O_BIND},
        {"port", required_argument, 0, O_PORT},
        {"dpdk-args", required_argument, 0, O_DPDK_ARGS},
        {"dpdk-ip", required_argument, 0, O_DPDK_IP},
        {"table", required_argument, 0, O_TABLE},
        {"param-slots", required_argument, 0, O_PARAM_SLOTS},
        {"max-item-bytes", required_argument, 0, O_MAX_ITEM},
        {"max-message-bytes", required_argument, 0, O_MAX_MSG},
        {"reassembly-timeout", required_argument, 0, O_REASM_TIMEOUT},
        {"reply-cache-entries", required_argument, 0, O_CACHE_ENTRIES},
        {"reply-cache-bytes", required_argument, 0, O_CACHE_BYTES},
        {"checkpoint", required_argument, 0, O_CKPT},
        {"checkpoint-every", required_argument, 0, O_CKPT_EVERY},
        {"seed", required_argument, 0, O_SEED},
        {"quiet", no_argument, 0, O_QUIET},
        {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0},
    };
    int cache_bytes_given = 0;
    opterr = 0; /* we print our own one-line errors */
    for (;;) {
        int idx = 0;
        int o = getopt_long(argc, argv, "", opts, &idx);
        if (o == -1)
            break;
        switch (o) {
        case O_IO:
            if (strcmp(optarg, "sockets") != 0 && strcmp(optarg, "dpdk") != 0)
                die_config("--io is sockets or dpdk, not '%s'", optarg);
            c->io = optarg;
            break;
        case O_BIND: c->io_cfg.bind_ip = optarg; break;
        case O_PORT: c->io_cfg.port = (uint16_t)parse_size("--port", optarg, 1, 65535); break;
        case O_DPDK_ARGS: c->io_cfg.dpdk_args = optarg; break;
        case O_DPDK_IP: c->io_cfg.dpdk_ip = optarg; break;
        case O_TABLE: parse_table(c, optarg); break;
        case O_PARAM_SLOTS:
            c->param_slots = (uint32_t)parse_size("--param-slots", optarg, 0, 65535);
            break;
        case O_MAX_ITEM:
            c->lim.max_item_bytes = parse_size("--max-item-bytes", optarg, 1, UINT32_MAX);
            break;
        case O_MAX_MSG:
            c->lim.max_message_bytes = parse_size("--max-message-bytes", optarg, 64, RP_MAX_MESSAGE);
            break;
        case O_REASM_TIMEOUT:
            c->lim.reassembly_timeout = parse_seconds("--reassembly-timeout", optarg);
            break;
        case O_CACHE_ENTRIES:
            c->lim.reply_cache_entries = parse_size("--reply-cache-entries", optarg, 0, 1u << 24);
            break;
        case O_CACHE_BYTES:
            c->lim.reply_cache_bytes = parse_size("--reply-cache-bytes", optarg, 0, SIZE_MAX / 2);
            cache_bytes_given = 1;
            break;
        case O_CKPT:
            if (!*optarg)
                die_config("--checkpoint wants a path");
            c->checkpoint = optarg;
            break;
        case O_CKPT_EVERY: c->checkpoint_every = parse_seconds("--checkpoint-every", optarg); break;
        case O_SEED:
            c->seed = parse_size("--seed", optarg, 0, UINT64_MAX);
            c->have_seed = 1;
            break;
        case O_QUIET: c->quiet = 1; break;
        case O_HELP: fputs(USAGE, stdout); exit(0);
        case ':': die_config("%s needs a value", argv[optind - 1]);
        default: die_config("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die_config("unexpected argument '%s'", argv[optind]);
    if (c->checkpoint_every > 0 && !c->checkpoint)
        die_config("--checkpoint-every needs --checkpoint PATH");
    if (strcmp(c->io, "dpdk") == 0 && !c->io_cfg.dpdk_ip)
        die_config("--io dpdk needs --dpdk-ip IP (the address it answers on)");
    /* room for the largest message in the reassembly store and the reply cache */
    uint64_t need = c->lim.max_message_bytes + RP_FRAG_BYTES;
    if (c->lim.reassembly_bytes < need)
        c->lim.reassembly_bytes = need;
    if (!cache_bytes_given && c->lim.reply_cache_bytes < need)
        c->lim.reply_cache_bytes = need;
}

int main(int argc, char **argv)
{
    static struct config c = {
        .io = "sockets",
        .io_cfg = {.bind_ip = "0.0.0.0", .port = RP_DEFAULT_PORT},
        .param_slots = 4,
        .lim = {.max_item_bytes = 16 * MIB,
                .max_message_bytes = 64 * MIB,
                .reassembly_timeout = 5.0,
                .reassembly_entries = 1024,
                .reassembly_bytes = 256 * MIB,
                .reply_cache_entries = 4096,
                .reply_cache_bytes = 256 * MIB},
    };
    parse_args(&c, argc, argv);
    if (!c.have_seed)
        c.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

    static struct rs_server s;
    if (rs_server_init(&s, &c.lim, c.seed)) {
        fprintf(stderr, "replay_server: out of memory\n");
        return 1;
    }
    for (int i = 0; i < c.n_tables; i++)
        if (rs_server_add_table(&s, c.tables[i].name, c.tables[i].max_size, c.tables[i].alpha,
                                c.tables[i].mode))
            die_config("out of memory creating table %s (max_size %u)", c.tables[i].name,
                       c.tables[i].max_size);
    if (rs_server_set_param_slots(&s, c.param_slots))
        die_config("out of memory creating %u parameter slots", c.param_slots);
    char err[512] = "";
    int restored = 0;
    if (c.checkpoint) {
        restored = rs_checkpoint_restore(&s, c.checkpoint, err, sizeof err);
        if (restored < 0) {
            fprintf(stderr, "replay_server: %s\n", err);
            return 2;
        }
        s.checkpoint_path = c.checkpoint;
        if (restored && !c.quiet) {
            uint64_t items = 0;
            for (uint16_t i = 0; i < s.n_tables; i++)
                items += rs_table_size(&s.tables[i]);
            fprintf(stderr, "replay_server: restored %u tables (%llu items) from %s\n",
                    s.n_tables, (unsigned long long)items, c.checkpoint);
        }
    }

    struct rs_io *io = strcmp(c.io, "dpdk") == 0 ? rs_io_dpdk_open(&c.io_cfg, err, sizeof err)
                                                 : rs_io_sockets_open(&c.io_cfg, err, sizeof err);
    if (!io) {
        fprintf(stderr, "replay_server: %s\n", err);
        return 2;
    }
    s.io_name = io->name;
    s.port = c.io_cfg.port;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a blocked poll returns at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    printf("replay_server: ready io=%s port=%u tables=", io->name, c.io_cfg.port);
    for (uint16_t i = 0; i < s.n_tables; i++)
        printf("%s%s", i ? "," : "", s.tables[i].name);
    printf("%s params=%u restored=%s\n", s.n_tables ? "" : "-", s.n_params, restored ? "yes" : "no");
    fflush(stdout);

    static struct rs_datagram rx[RX_BURST];
    double next_ckpt = c.checkpoint_every > 0 ? rs_now() + c.checkpoint_every : INFINITY;
    int rc = 0;
    while (!g_stop) {
        double now = rs_now();
        int timeout_ms = 100;
        if (next_ckpt - now < 0.1)
            timeout_ms = next_ckpt > now ? (int)((next_ckpt - now) * 1000) + 1 : 0;
        int n = io->recv_burst(io, rx, RX_BURST, timeout_ms);
        if (n < 0) {
            fprintf(stderr, "replay_server: the %s I/O path failed; stopping\n", io->name);
            rc = 1;
            break;
        }
        now = rs_now();
        for (int i = 0; i < n; i++)
            rs_server_handle(&s, &rx[i], now);
        rs_server_flush(&s, io, 1.0);
        rs_server_tick(&s, now);
        if (now >= next_ckpt) {
            if (rs_checkpoint_write(&s, c.checkpoint, err, sizeof err))
                fprintf(stderr, "replay_server: %s\n", err);
            next_ckpt = now + c.checkpoint_every;
        }
    }
    if (c.checkpoint) {
        if (rs_checkpoint_write(&s, c.checkpoint, err, sizeof err)) {
            fprintf(stderr, "replay_server: %s\n", err);
            rc = 1;
        } else if (!c.quiet) {
            fprintf(stderr, "replay_server: checkpoint written to %s\n", c.checkpoint);
        }
    }
    io->close(io);
    rs_server_free(&s);
    return rc;
}
