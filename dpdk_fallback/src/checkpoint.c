/* Checkpoint file: tables (items, keys, priorities, counters) and parameter slots, big-endian,
 * ending in an FNV-1a 64 checksum of everything before it. Written to PATH.tmp, synced, then
 * renamed over PATH, so a crash leaves the old checkpoint or the new one, never a torn file.
 *
 *   "RSCKPT01"  u32 n_tables
 *   per table:  u8 name_len, name, u32 max_size, f64 alpha, u8 mode (0 host, 1 switch),
 *               u64 next_key, u64 inserts, evictions, samples, updates, ignored_updates,
 *               u64 n_items (= min(next_key, max_size)), then per item, oldest key first:
 *               f32 priority, u32 length, bytes      (item i has key next_key - n_items + i)
 *   u32 n_params, per slot: u64 version, u64 length, bytes
 *   u64 fnv1a64 of all bytes above
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"

static const char MAGIC[8] = {'R', 'S', 'C', 'K', 'P', 'T', '0', '1'};

struct ck_file {
    FILE *f;
    uint64_t hash;
    int failed; /* I/O error or short read */
};

static void hash_bytes(struct ck_file *c, const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = c->hash;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    c->hash = h;
}

static void w_bytes(struct ck_file *c, const void *p, size_t n)
{
    if (c->failed || n == 0)
        return;
    if (fwrite(p, 1, n, c->f) != n)
        c->failed = 1;
    hash_bytes(c, p, n);
}
static void w_u8(struct ck_file *c, uint8_t v) { w_bytes(c, &v, 1); }
static void w_u32(struct ck_file *c, uint32_t v)
{
    uint8_t b[4];
    rp_put32(b, v);
    w_bytes(c, b, 4);
}
static void w_u64(struct ck_file *c, uint64_t v)
{
    uint8_t b[8];
    rp_put64(b, v);
    w_bytes(c, b, 8);
}
static void w_f64(struct ck_file *c, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    w_u64(c, u);
}
static void w_f32(struct ck_file *c, float f)
{
    uint8_t b[4];
    rp_putf32(b, f);
    w_bytes(c, b, 4);
}

int rs_checkpoint_write(const struct rs_server *s, const char *path, char *err, size_t errlen)
{
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 8);
    if (!tmp) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(tmp, plen + 8, "%s.tmp", path);
    struct ck_file c = {fopen(tmp, "wb"), 0xcbf29ce484222325ull, 0};
    if (!c.f) {
        snprintf(err, errlen, "cannot write checkpoint %s: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    w_bytes(&c, MAGIC, sizeof MAGIC);
    w_u32(&c, s->n_tables);
    for (uint16_t i = 0; i < s->n_tables; i++) {
        const struct rs_table *t = &s->tables[i];
        size_t nl = strlen(t->name);
        w_u8(&c, (uint8_t)nl);
        w_bytes(&c, t->name, nl);
        w_u32(&c, t->max_size);
        w_f64(&c, t->alpha);
        w_u8(&c, (uint8_t)t->mode);
        w_u64(&c, t->next_key);
        w_u64(&c, t->inserts);
        w_u64(&c, t->evictions);
        w_u64(&c, t->samples);
        w_u64(&c, t->updates);
        w_u64(&c, t->ignored_updates);
        uint64_t n = rs_table_size(t);
        w_u64(&c, n);
        for (uint64_t key = t->next_key - n; key < t->next_key; key++) {
            uint32_t slot = rs_table_slot(t, key);
            const struct rs_item *it = t->slots[slot];
            w_f32(&c, t->priority[slot]);
            w_u32(&c, it->len);
            w_bytes(&c, it->data, it->len);
        }
    }
    w_u32(&c, s->n_params);
    for (uint32_t i = 0; i < s->n_params; i++) {
        w_u64(&c, s->params[i].version);
        w_u64(&c, s->params[i].len);
        w_bytes(&c, s->params[i].blob, s->params[i].len);
    }
    uint8_t sum[8];
    rp_put64(sum, c.hash);
    w_bytes(&c, sum, 8);
    int bad = c.failed || fflush(c.f) != 0 || fsync(fileno(c.f)) != 0;
    int saved = errno;
    if (fclose(c.f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (bad || rename(tmp, path) != 0) {
        if (!bad)
            saved = errno;
        snprintf(err, errlen, "cannot write checkpoint %s: %s", path, strerror(saved));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    /* make the rename itself durable */
    char *dir = strdup(path);
    if (dir) {
        char *slash = strrchr(dir, '/');
        const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
        int fd = open(d, O_RDONLY | O_DIRECTORY);
        if (fd >= 0) {
            fsync(fd);
            close(fd);
        }
        free(dir);
    }
    return 0;
}

/* ---- reading ------------------------------------------------------------------------------ */

static void r_bytes(struct ck_file *c, void *p, size_t n)
{
    if (c->failed)
        return;
    if (n && fread(p, 1, n, c->f) != n) {
        c->failed = 1;
        memset(p, 0, n);
        return;
    }
    hash_bytes(c, p, n);
}
static uint8_t r_u8(struct ck_file *c)
{
    uint8_t v = 0;
    r_bytes(c, &v, 1);
    return v;
}
static uint32_t r_u32(struct ck_file *c)
{
    uint8_t b[4] = {0};
    r_bytes(c, b, 4);
    return rp_get32(b);
}
static uint64_t r_u64(struct ck_file *c)
{
    uint8_t b[8] = {0};
    r_bytes(c, b, 8);
    return rp_get64(b);
}
static float r_f32(struct ck_file *c)
{
    uint8_t b[4] = {0};
    r_bytes(c, b, 4);
    return rp_getf32(b);
}
static double r_f64(struct ck_file *c)
{
    uint64_t u = r_u64(c);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        goto fail;                                                                                 \
    } while (0)

int rs_checkpoint_restore(struct rs_server *s, const char *path, char *err, size_t errlen)
{
    struct ck_file c = {fopen(path, "rb"), 0xcbf29ce484222325ull, 0};
    if (!c.f) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot read checkpoint %s: %s", path, strerror(errno));
        return -1;
    }
    /* file size bounds every length field, so a corrupt length cannot make us allocate wildly */
    fseek(c.f, 0, SEEK_END);
    long fsize = ftell(c.f);
    rewind(c.f);
    char magic[8];
    r_bytes(&c, magic, 8);
    if (c.failed || memcmp(magic, MAGIC, 8) != 0)
        BAD("%s is not a replay_server checkpoint (bad magic)", path);
    uint16_t cli_tables = s->n_tables;
    uint32_t n_tables = r_u32(&c);
    if (n_tables > 65535)
        BAD("checkpoint %s is corrupt (%u tables)", path, n_tables);
    if (cli_tables && n_tables > cli_tables)
        BAD("checkpoint %s holds %u tables but --table defines %u", path, n_tables, cli_tables);
    for (uint32_t i = 0; i < n_tables; i++) {
        char name[RS_TABLE_NAME_MAX + 1] = {0};
        uint8_t nl = r_u8(&c);
        if (nl > RS_TABLE_NAME_MAX)
            BAD("checkpoint %s is corrupt (table name of %u bytes)", path, nl);
        r_bytes(&c, name, nl);
        uint32_t max_size = r_u32(&c);
        double alpha = r_f64(&c);
        uint8_t mode = r_u8(&c);
        /* max_size is bounded before anything is allocated for it: a corrupt value must not
         * ask for gigabytes of trees before the checksum is checked */
        if (c.failed || max_size == 0 || max_size > RS_TABLE_MAX_SIZE || mode > 1 ||
            !(alpha >= 0 && alpha <= RS_ALPHA_MAX))
            BAD("checkpoint %s is corrupt (table %u)", path, i);
        struct rs_table *t;
        if (cli_tables) {
            t = &s->tables[i];
            if (strcmp(t->name, name) != 0 || t->max_size != max_size || t->mode != mode)
                BAD("checkpoint %s table %u is %s:max_size=%u,priorities=%s but --table says "
                    "%s:max_size=%u,priorities=%s",
                    path, i, name, max_size, mode ? "switch" : "host", t->name, t->max_size,
                    t->mode ? "switch" : "host");
        } else {
            if (rs_server_add_table(s, name, max_size, alpha, (enum rs_mode)mode))
                BAD("out of memory restoring table %s (max_size %u)", name, max_size);
            t = &s->tables[i];
        }
        uint64_t next_key = r_u64(&c);
        uint64_t counters[5];
        for (int k = 0; k < 5; k++)
            counters[k] = r_u64(&c);
        uint64_t n = r_u64(&c);
        uint64_t want = next_key < max_size ? next_key : max_size;
        if (c.failed || n != want)
            BAD("checkpoint %s is corrupt (table %s holds %llu items, expected %llu)", path, name,
                (unsigned long long)n, (unsigned long long)want);
        for (uint64_t key = next_key - n; key < next_key; key++) {
            float p = r_f32(&c);
            uint32_t len = r_u32(&c);
            if (c.failed || (long)len > fsize || !(isfinite(p) && p >= 0))
                BAD("checkpoint %s is corrupt (table %s key %llu)", path, name,
                    (unsigned long long)key);
            struct rs_item *it = malloc(sizeof *it + len);
            if (!it)
                BAD("out of memory restoring table %s", name);
            it->len = len;
            r_bytes(&c, it->data, len);
            uint32_t slot = rs_table_slot(t, key);
            free(t->slots[slot]);
            t->slots[slot] = it;
            t->priority[slot] = p; /* leaves are rebuilt below with this table's alpha */
        }
        t->next_key = next_key;
        t->inserts = counters[0];
        t->evictions = counters[1];
        t->samples = counters[2];
        t->updates = counters[3];
        t->ignored_updates = counters[4];
        rs_table_rebuild(t);
    }
    uint32_t n_params = r_u32(&c);
    if (c.failed || n_params > 1u << 20)
        BAD("checkpoint %s is corrupt (parameter slots)", path);
    if (rs_server_set_param_slots(s, n_params))
        BAD("out of memory");
    for (uint32_t i = 0; i < n_params; i++) {
        uint64_t version = r_u64(&c);
        uint64_t len = r_u64(&c);
        if (c.failed || len > (uint64_t)fsize)
            BAD("checkpoint %s is corrupt (parameter slot %u)", path, i);
        uint8_t *blob = malloc(len ? len : 1);
        if (!blob)
            BAD("out of memory");
        r_bytes(&c, blob, len);
        free(s->params[i].blob);
        s->params[i].blob = blob;
        s->params[i].len = len;
        s->params[i].version = version;
    }
    uint64_t expect = c.hash;
    uint8_t sum[8];
    r_bytes(&c, sum, 8);
    if (c.failed || rp_get64(sum) != expect)
        BAD("checkpoint %s is corrupt (truncated or checksum mismatch)", path);
    if (fgetc(c.f) != EOF)
        BAD("checkpoint %s is corrupt (bytes after the checksum)", path);
    fclose(c.f);
    return 1;
fail:
    fclose(c.f);
    return -1;
}
