/* tables.c — the match engine (softswitch/tables.py semantics).
 *
 * Modes, chosen from the key kinds at definition:
 *  - exact: one open-addressing hash table keyed by the key values (one probe sequence);
 *  - lpm (one lpm field, the others exact): the same hash table keyed by (values with the
 *    lpm field masked, prefix length); lookup tries the used prefix lengths longest first;
 *  - scan (ternary/range/optional, or several lpm fields): entries kept sorted best first
 *    (priority, higher wins unless largest_priority_wins is 0; then total prefix length;
 *    then insertion order) and scanned; the hash table then only identifies entries for the
 *    control API (values, masks, priority as P4Runtime does).
 * No allocation or locking on lookup. */
#include <stdlib.h>
#include <string.h>

#include "ss_core.h"

static const uint64_t zero_args[SS_MIN_ARGS];

static inline uint64_t full_mask(uint32_t w) { return w >= 64 ? ~0ull : (1ull << w) - 1ull; }

static inline uint64_t prefix_mask(uint32_t w, uint32_t p) {
    if (p == 0) return 0;
    uint32_t host = w - p;  /* 0..63 */
    return full_mask(w) & ~((host >= 64) ? ~0ull : ((1ull << host) - 1ull));
}

static inline uint64_t hash_words(const uint64_t *w, uint32_t n) {
    uint64_t h = 0x243F6A8885A308D3ull ^ ((uint64_t)n * 0x9E3779B97F4A7C15ull);
    for (uint32_t i = 0; i < n; i++) {
        h = (h ^ w[i]) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return h;
}

static ss_table *get_table(struct ss_switch *sw, uint32_t table) {
    if (table >= sw->n_tables || !sw->tables[table]) {
        ss__error(sw, SS_ENOENT, "table %u is not defined", table);
        return NULL;
    }
    return sw->tables[table];
}

/* ------------------------------------------------------------------ hash table of entries */
static ss_entry *ht_find(const ss_table *t, uint64_t h, const uint64_t *id, uint32_t idlen,
                         uint32_t *where) {
    if (!t->slots) return NULL;
    uint32_t i = (uint32_t)h & t->slot_mask;
    for (;;) {
        ss_entry *e = t->slots[i].e;
        if (!e) return NULL;
        if (t->slots[i].hash == h && e->idlen == idlen &&
            memcmp(e->id, id, (size_t)idlen * sizeof(uint64_t)) == 0) {
            if (where) *where = i;
            return e;
        }
        i = (i + 1) & t->slot_mask;
    }
}

static void ht_put(ss_slot *slots, uint32_t mask, ss_entry *e) {
    uint32_t i = (uint32_t)e->hash & mask;
    while (slots[i].e) i = (i + 1) & mask;
    slots[i].hash = e->hash;
    slots[i].e = e;
}

static int ht_reserve(struct ss_switch *sw, ss_table *t, uint32_t need) {
    uint64_t cap = t->slots ? (uint64_t)t->slot_mask + 1 : 0;
    if (cap && (uint64_t)need * 2 <= cap) return SS_OK;
    uint64_t ncap = cap ? cap : 16;
    while ((uint64_t)need * 2 > ncap) ncap *= 2;
    if (ncap > (1ull << 31)) return ss__error(sw, SS_ENOMEM, "table too large");
    ss_slot *ns = calloc((size_t)ncap, sizeof *ns);
    if (!ns) return ss__error(sw, SS_ENOMEM, "out of memory growing a table");
    for (uint64_t i = 0; i < cap; i++)
        if (t->slots[i].e) ht_put(ns, (uint32_t)(ncap - 1), t->slots[i].e);
    free(t->slots);
    t->slots = ns;
    t->slot_mask = (uint32_t)(ncap - 1);
    return SS_OK;
}

static void ht_remove_at(ss_table *t, uint32_t i) {
    /* backward-shift deletion (linear probing) */
    uint32_t mask = t->slot_mask, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!t->slots[j].e) break;
        uint32_t k = (uint32_t)t->slots[j].hash & mask;
        int stays = (i <= j) ? (i < k && k <= j) : (i < k || k <= j);
        if (stays) continue;
        t->slots[i] = t->slots[j];
        i = j;
    }
    t->slots[i].e = NULL;
    t->slots[i].hash = 0;
}

/* ------------------------------------------------------------------ LPM prefix lengths */
static void rebuild_plens(ss_table *t) {
    t->n_plens = 0;
    for (int p = (int)t->lpm_width; p >= 0; p--)
        if (t->plen_count[p]) t->plens[t->n_plens++] = (uint8_t)p;
}

/* ------------------------------------------------------------------ scan order */
static int better(const ss_entry *a, const ss_entry *b) {  /* a before b */
    if (a->rank != b->rank) return a->rank > b->rank;
    if (a->plen != b->plen) return a->plen > b->plen;
    return a->seq < b->seq;
}

static void sorted_insert(ss_table *t, ss_entry *e) {
    /* first position whose entry is not better than e */
    uint32_t lo = 0, hi = t->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (better(t->sorted[mid], e)) lo = mid + 1; else hi = mid;
    }
    memmove(&t->sorted[lo + 1], &t->sorted[lo], (size_t)(t->count - lo) * sizeof(ss_entry *));
    t->sorted[lo] = e;
}

static void sorted_remove(ss_table *t, const ss_entry *e) {
    for (uint32_t i = 0; i < t->count; i++) {
        if (t->sorted[i] == e) {
            memmove(&t->sorted[i], &t->sorted[i + 1], (size_t)(t->count - i - 1) * sizeof(ss_entry *));
            return;
        }
    }
}

/* ------------------------------------------------------------------ definition */
int ss_define_table(struct ss_switch *sw, uint32_t table, uint32_t n_keys, const uint8_t *kinds,
                    const uint16_t *widths, uint32_t size, int has_direct_counter,
                    int32_t direct_meter, int largest_priority_wins) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = SS_OK;
    if (n_keys > SS_MAX_KEYS) {
        rc = ss__error(sw, SS_EINVAL, "table %u: %u key fields (at most %u)", table, n_keys, SS_MAX_KEYS);
        goto out;
    }
    if (n_keys && (!kinds || !widths)) {
        rc = ss__error(sw, SS_EINVAL, "table %u: kinds and widths are required", table);
        goto out;
    }
    if (table >= (1u << 20)) {
        rc = ss__error(sw, SS_EINVAL, "table number %u out of range", table);
        goto out;
    }
    if (direct_meter != -1 && (direct_meter < 0 || direct_meter >= 8)) {
        rc = ss__error(sw, SS_EINVAL, "table %u: direct meter %d out of range (0..7)", table, direct_meter);
        goto out;
    }
    if (size > (1u << 28)) {
        rc = ss__error(sw, SS_EINVAL, "table %u: size %u too large", table, size);
        goto out;
    }
    uint32_t n_lpm = 0, n_other = 0;
    for (uint32_t i = 0; i < n_keys; i++) {
        if (kinds[i] > SS_MATCH_LPM_NEXT) {
            rc = ss__error(sw, SS_EINVAL, "table %u: key %u has unknown match kind %u", table, i, kinds[i]);
            goto out;
        }
        if (widths[i] < 1 || widths[i] > 64) {
            rc = ss__error(sw, SS_EINVAL, "table %u: key %u width %u not in 1..64", table, i, widths[i]);
            goto out;
        }
        if (kinds[i] == SS_MATCH_RANGE_NEXT && (i == 0 || (kinds[i - 1] != SS_MATCH_RANGE &&
                                                           kinds[i - 1] != SS_MATCH_RANGE_NEXT))) {
            rc = ss__error(sw, SS_EINVAL, "table %u: key %u continues no range key", table, i);
            goto out;
        }
        if (kinds[i] == SS_MATCH_LPM_NEXT && (i == 0 || (kinds[i - 1] != SS_MATCH_LPM &&
                                                         kinds[i - 1] != SS_MATCH_LPM_NEXT))) {
            rc = ss__error(sw, SS_EINVAL, "table %u: key %u continues no lpm key", table, i);
            goto out;
        }
        if (kinds[i] == SS_MATCH_LPM) n_lpm++;
        else if (kinds[i] != SS_MATCH_EXACT && kinds[i] != SS_MATCH_LPM_NEXT) n_other++;
    }
    if (table < sw->n_tables && sw->tables[table]) {
        rc = ss__error(sw, SS_EEXIST, "table %u is already defined", table);
        goto out;
    }
    if (table >= sw->n_tables) {
        ss_table **nt = realloc(sw->tables, (size_t)(table + 1) * sizeof *nt);
        if (!nt) { rc = ss__error(sw, SS_ENOMEM, "out of memory"); goto out; }
        for (uint32_t i = sw->n_tables; i <= table; i++) nt[i] = NULL;
        sw->tables = nt;
        sw->n_tables = table + 1;
    }
    ss_table *t = calloc(1, sizeof *t);
    if (!t) { rc = ss__error(sw, SS_ENOMEM, "out of memory"); goto out; }
    t->n_keys = n_keys;
    t->size = size;
    for (uint32_t i = 0; i < n_keys; i++) {
        t->kinds[i] = kinds[i];
        t->widths[i] = widths[i];
        if (kinds[i] == SS_MATCH_LPM) {
            t->lpm_index = i;
            t->lpm_len = 1;
            t->lpm_width = widths[i];
            while (i + t->lpm_len < n_keys && kinds[i + t->lpm_len] == SS_MATCH_LPM_NEXT)
                t->lpm_width += widths[i + t->lpm_len++];
        }
        if (kinds[i] == SS_MATCH_RANGE) {
            uint32_t g = 1;
            while (i + g < n_keys && kinds[i + g] == SS_MATCH_RANGE_NEXT) g++;
            t->range_len[i] = (uint8_t)g;
            if (g > 1) t->wide_range = 1;
        }
    }
    t->has_direct_counter = has_direct_counter != 0;
    t->direct_meter = direct_meter;
    t->largest_priority_wins = largest_priority_wins != 0;
    t->needs_priority = n_other > 0;
    t->mode = (n_lpm == 0 && n_other == 0) ? SS_TMODE_EXACT
            : (n_lpm == 1 && n_other == 0 && t->lpm_width <= SS_LPM_MAX_BITS) ? SS_TMODE_LPM
            : SS_TMODE_SCAN;
    if (t->mode == SS_TMODE_SCAN && size) {
        t->sorted = calloc(size, sizeof(ss_entry *));
        if (!t->sorted) { free(t); rc = ss__error(sw, SS_ENOMEM, "out of memory"); goto out; }
    }
    t->default_action = SS_NO_ACTION;  /* until ss_table_set_default: no action (NoAction) */
    t->default_args = NULL;
    sw->tables[table] = t;
out:
    ss__unlock(sw);
    return rc;
}

int ss_define_action(struct ss_switch *sw, uint32_t action, uint32_t n_params) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = SS_OK;
    if (action >= (1u << 20) || n_params > 4096) {
        rc = ss__error(sw, SS_EINVAL, "action %u with %u parameters out of range", action, n_params);
        goto out;
    }
    if (action >= sw->n_actions) {
        uint32_t *na = realloc(sw->action_params, (size_t)(action + 1) * sizeof *na);
        if (!na) { rc = ss__error(sw, SS_ENOMEM, "out of memory"); goto out; }
        for (uint32_t i = sw->n_actions; i <= action; i++) na[i] = UINT32_MAX;
        sw->action_params = na;
        sw->n_actions = action + 1;
    }
    if (sw->action_params[action] != UINT32_MAX && sw->action_params[action] != n_params) {
        rc = ss__error(sw, SS_EEXIST, "action %u is already defined with %u parameters", action,
                       sw->action_params[action]);
        goto out;
    }
    sw->action_params[action] = n_params;
out:
    ss__unlock(sw);
    return rc;
}

void ss__table_free(ss_table *t) {
    if (!t) return;
    if (t->slots) {
        for (uint32_t i = 0; i <= t->slot_mask; i++) free(t->slots[i].e);
        free(t->slots);
    }
    free(t->sorted);
    free(t->default_args);
    free(t);
}

/* ------------------------------------------------------------------ entries */
typedef struct cand {
    uint64_t id[2 * SS_MAX_KEYS + 1];
    uint32_t idlen, plen;
    int32_t priority;
    int64_t rank;
    uint64_t v[SS_MAX_KEYS], m[SS_MAX_KEYS], lo[SS_MAX_KEYS], hi[SS_MAX_KEYS];
} cand;

static int normalize(struct ss_switch *sw, uint32_t table, const ss_table *t, const uint64_t *values,
                     const uint64_t *masks, int32_t priority, cand *k) {
    uint32_t n = t->n_keys;
    if (n && !values) return ss__error(sw, SS_EINVAL, "table %u: key values are required", table);
    if (n && !masks && t->mode != SS_TMODE_EXACT)
        return ss__error(sw, SS_EINVAL, "table %u: key masks are required", table);
    uint32_t plen_total = 0;
    k->idlen = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (t->kinds[i] == SS_MATCH_RANGE && t->range_len[i] > 1) {
            /* a range over several limbs: low and high compare as numbers, most significant first */
            uint32_t g = t->range_len[i];
            int cmp = 0;
            for (uint32_t j = 0; j < g; j++) {
                uint64_t full = full_mask(t->widths[i + j]);
                if ((values[i + j] & ~full) || (masks[i + j] & ~full))
                    return ss__error(sw, SS_EINVAL, "table %u: range of key %u does not fit its width", table, i);
                if (!cmp && values[i + j] != masks[i + j]) cmp = values[i + j] < masks[i + j] ? -1 : 1;
            }
            if (cmp > 0) return ss__error(sw, SS_EINVAL, "table %u: range of key %u has low > high", table, i);
            for (uint32_t j = 0; j < g; j++) {
                k->v[i + j] = 0;
                k->m[i + j] = 0;
                k->lo[i + j] = values[i + j];
                k->hi[i + j] = masks[i + j];
                k->id[k->idlen++] = values[i + j];
                k->id[k->idlen++] = masks[i + j];
            }
            i += g - 1;
            continue;
        }
        uint32_t w = t->widths[i];
        uint64_t full = full_mask(w), v = values[i], mk = masks ? masks[i] : 0;
        if (v & ~full)
            return ss__error(sw, SS_EINVAL, "table %u: value of key %u does not fit in %u bits", table, i, w);
        uint64_t m = full, lo = 0, hi = ~0ull, id2 = 0;
        switch (t->kinds[i]) {
        case SS_MATCH_EXACT:
            break;
        case SS_MATCH_LPM:
        case SS_MATCH_LPM_NEXT:
            if (mk > w)
                return ss__error(sw, SS_EINVAL, "table %u: prefix length %llu of key %u exceeds %u bits",
                                 table, (unsigned long long)mk, i, w);
            if (t->kinds[i] == SS_MATCH_LPM_NEXT && mk && masks[i - 1] != t->widths[i - 1])
                return ss__error(sw, SS_EINVAL, "table %u: prefix of key %u continues a partial prefix",
                                 table, i);
            m = prefix_mask(w, (uint32_t)mk);
            if (v & ~m)
                return ss__error(sw, SS_EINVAL, "table %u: lpm value of key %u has bits set beyond its prefix length",
                                 table, i);
            plen_total += (uint32_t)mk;
            id2 = mk;
            break;
        case SS_MATCH_TERNARY:
        case SS_MATCH_OPTIONAL:
            if (mk & ~full)
                return ss__error(sw, SS_EINVAL, "table %u: mask of key %u does not fit in %u bits", table, i, w);
            if (t->kinds[i] == SS_MATCH_OPTIONAL && mk != 0 && mk != full)
                return ss__error(sw, SS_EINVAL, "table %u: optional key %u takes an exact value or a wildcard", table, i);
            if (v & ~mk)
                return ss__error(sw, SS_EINVAL, "table %u: ternary value of key %u has bits set outside its mask", table, i);
            m = mk;
            id2 = mk;
            break;
        case SS_MATCH_RANGE:
            if (mk & ~full)
                return ss__error(sw, SS_EINVAL, "table %u: range high of key %u does not fit in %u bits", table, i, w);
            if (v > mk) return ss__error(sw, SS_EINVAL, "table %u: range of key %u has low > high", table, i);
            m = 0;
            lo = v;
            hi = mk;
            id2 = mk;
            v = 0;
            break;
        }
        k->v[i] = v;
        k->m[i] = m;
        k->lo[i] = lo;
        k->hi[i] = hi;
        if (t->mode == SS_TMODE_SCAN) {
            k->id[k->idlen++] = t->kinds[i] == SS_MATCH_RANGE ? lo : v;
            k->id[k->idlen++] = id2;
        } else {
            k->id[k->idlen++] = v;
        }
    }
    if (t->needs_priority) {
        if (priority <= 0)
            return ss__error(sw, SS_EINVAL,
                             "table %u has ternary/range/optional keys: entries need a priority > 0", table);
    } else {
        priority = 0;
    }
    k->priority = priority;
    k->rank = t->largest_priority_wins ? (int64_t)priority : -(int64_t)priority;
    if (t->mode == SS_TMODE_LPM) {
        k->plen = plen_total;
        k->id[k->idlen++] = plen_total;
    } else {
        k->plen = plen_total;
    }
    if (t->mode == SS_TMODE_SCAN) k->id[k->idlen++] = (uint64_t)(int64_t)priority;
    return SS_OK;
}

static int check_action(struct ss_switch *sw, uint32_t table, uint32_t action, const uint64_t *args,
                        uint32_t n_args, uint32_t *alloc) {
    if (action == SS_GROUP_ACTION) { /* a selector's group: [n, stride, members], read by generated code */
        if (n_args < 2 || n_args > (1u << 24) || !args || args[1] == 0 || args[0] > (n_args - 2) / args[1])
            return ss__error(sw, SS_EINVAL, "table %u: a group of %u words is malformed", table, n_args);
        for (uint64_t i = 0; i < args[0]; i++) { /* each member's parameters fit in its stride */
            uint64_t a = args[2 + i * args[1]];
            if (sw->n_actions && (a >= sw->n_actions || sw->action_params[a] == UINT32_MAX ||
                                  sw->action_params[a] >= args[1]))
                return ss__error(sw, SS_EINVAL, "table %u: group member %llu has a bad action", table,
                                 (unsigned long long)i);
        }
        *alloc = n_args;
        return SS_OK;
    }
    if (n_args > 4096) return ss__error(sw, SS_EINVAL, "table %u: %u action arguments", table, n_args);
    if (n_args && !args) return ss__error(sw, SS_EINVAL, "table %u: action arguments are required", table);
    if (sw->n_actions) {
        if (action >= sw->n_actions || sw->action_params[action] == UINT32_MAX)
            return ss__error(sw, SS_ENOENT, "action %u is not defined", action);
        if (sw->action_params[action] != n_args)
            return ss__error(sw, SS_EINVAL, "action %u takes %u arguments, not %u", action,
                             sw->action_params[action], n_args);
        *alloc = n_args ? n_args : 1;
    } else {
        *alloc = n_args > SS_MIN_ARGS ? n_args : SS_MIN_ARGS;
    }
    return SS_OK;
}

static ss_entry *find_entry(struct ss_switch *sw, uint32_t table, const uint64_t *values,
                            const uint64_t *masks, int32_t priority, ss_table **tp, uint32_t *where,
                            int *rc) {
    ss_table *t = get_table(sw, table);
    *tp = t;
    if (!t) { *rc = SS_ENOENT; return NULL; }
    cand k;
    *rc = normalize(sw, table, t, values, masks, priority, &k);
    if (*rc) return NULL;
    ss_entry *e = ht_find(t, hash_words(k.id, k.idlen), k.id, k.idlen, where);
    if (!e) *rc = ss__error(sw, SS_ENOENT, "table %u has no entry with this key", table);
    return e;
}

int ss_table_add(struct ss_switch *sw, uint32_t table, const uint64_t *values, const uint64_t *masks,
                 int32_t priority, uint32_t action, const uint64_t *args, uint32_t n_args) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc;
    cand k;
    uint32_t alloc = 0;
    ss_table *t = get_table(sw, table);
    if (!t) { rc = SS_ENOENT; goto out; }
    if ((rc = normalize(sw, table, t, values, masks, priority, &k))) goto out;
    if ((rc = check_action(sw, table, action, args, n_args, &alloc))) goto out;
    uint64_t h = hash_words(k.id, k.idlen);
    if (ht_find(t, h, k.id, k.idlen, NULL)) {
        rc = ss__error(sw, SS_EEXIST, "table %u already has an entry with this key", table);
        goto out;
    }
    if (t->count >= t->size) {
        rc = ss__error(sw, SS_ENOSPC, "table %u is full (%u entries)", table, t->size);
        goto out;
    }
    if ((rc = ht_reserve(sw, t, t->count + 1))) goto out;
    uint32_t n = t->n_keys, scan = t->mode == SS_TMODE_SCAN ? 4 * n : 0;
    size_t words = (size_t)k.idlen + scan + alloc;
    ss_entry *e = calloc(1, sizeof *e + words * sizeof(uint64_t));
    if (!e) { rc = ss__error(sw, SS_ENOMEM, "out of memory"); goto out; }
    e->hash = h;
    e->seq = t->next_seq++;
    e->rank = k.rank;
    e->plen = k.plen;
    e->priority = k.priority;
    e->action = action;
    e->n_args = n_args;
    e->args_cap = alloc;
    e->idlen = k.idlen;
    memcpy(e->id, k.id, (size_t)k.idlen * sizeof(uint64_t));
    uint64_t *p = e->id + k.idlen;
    if (scan) {
        e->v = p; p += n;
        e->m = p; p += n;
        e->lo = p; p += n;
        e->hi = p; p += n;
        memcpy(e->v, k.v, n * sizeof(uint64_t));
        memcpy(e->m, k.m, n * sizeof(uint64_t));
        memcpy(e->lo, k.lo, n * sizeof(uint64_t));
        memcpy(e->hi, k.hi, n * sizeof(uint64_t));
    }
    e->args = p;
    if (n_args) memcpy(e->args, args, (size_t)n_args * sizeof(uint64_t));
    ht_put(t->slots, t->slot_mask, e);
    if (t->mode == SS_TMODE_SCAN) sorted_insert(t, e);
    if (t->mode == SS_TMODE_LPM && t->plen_count[k.plen]++ == 0) rebuild_plens(t);
    t->count++;
    rc = SS_OK;
out:
    ss__unlock(sw);
    return rc;
}

int ss_table_modify(struct ss_switch *sw, uint32_t table, const uint64_t *values,
                    const uint64_t *masks, int32_t priority, uint32_t action, const uint64_t *args,
                    uint32_t n_args) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc;
    ss_table *t;
    uint32_t alloc = 0;
    ss_entry *e = find_entry(sw, table, values, masks, priority, &t, NULL, &rc);
    if (!e) goto out;
    if ((rc = check_action(sw, table, action, args, n_args, &alloc))) goto out;
    /* the argument storage was sized at add: keep it when it fits, else reallocate the entry */
    uint32_t have = e->args_cap;
    if (alloc > have) {
        size_t head = (size_t)(e->args - e->id);
        ss_entry *ne = malloc(sizeof *ne + (head + alloc) * sizeof(uint64_t));
        if (!ne) { rc = ss__error(sw, SS_ENOMEM, "out of memory"); goto out; }
        memcpy(ne, e, sizeof *ne + head * sizeof(uint64_t));
        /* re-point the arrays by their offsets inside the entry (subtracting pointers into two
         * different allocations, or moving one by that difference, is undefined behaviour) */
        if (e->v) {
            ne->v = ne->id + (e->v - e->id);
            ne->m = ne->id + (e->m - e->id);
            ne->lo = ne->id + (e->lo - e->id);
            ne->hi = ne->id + (e->hi - e->id);
        }
        ne->args = ne->id + head;
        uint32_t where = 0;
        ht_find(t, e->hash, e->id, e->idlen, &where);
        t->slots[where].e = ne;
        if (t->sorted)
            for (uint32_t i = 0; i < t->count; i++)
                if (t->sorted[i] == e) t->sorted[i] = ne;
        free(e);
        e = ne;
        e->args_cap = have = alloc;
    }
    memset(e->args, 0, (size_t)have * sizeof(uint64_t));
    if (n_args) memcpy(e->args, args, (size_t)n_args * sizeof(uint64_t));
    e->action = action;
    e->n_args = n_args;
    rc = SS_OK;
out:
    ss__unlock(sw);
    return rc;
}

int ss_table_delete(struct ss_switch *sw, uint32_t table, const uint64_t *values,
                    const uint64_t *masks, int32_t priority) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc;
    ss_table *t;
    uint32_t where = 0;
    ss_entry *e = find_entry(sw, table, values, masks, priority, &t, &where, &rc);
    if (!e) goto out;
    ht_remove_at(t, where);
    if (t->mode == SS_TMODE_SCAN) sorted_remove(t, e);
    if (t->mode == SS_TMODE_LPM && --t->plen_count[e->plen] == 0) rebuild_plens(t);
    t->count--;
    free(e);
    rc = SS_OK;
out:
    ss__unlock(sw);
    return rc;
}

int ss_table_clear(struct ss_switch *sw, uint32_t table) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc = SS_OK;
    ss_table *t = get_table(sw, table);
    if (!t) { rc = SS_ENOENT; goto out; }
    if (t->slots) {
        for (uint32_t i = 0; i <= t->slot_mask; i++) {
            free(t->slots[i].e);
            t->slots[i].e = NULL;
            t->slots[i].hash = 0;
        }
    }
    t->count = 0;
    memset(t->plen_count, 0, sizeof t->plen_count);
    t->n_plens = 0;
out:
    ss__unlock(sw);
    return rc;
}

int ss_table_set_default(struct ss_switch *sw, uint32_t table, uint32_t action, const uint64_t *args,
                         uint32_t n_args) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc;
    uint32_t alloc = 0;
    ss_table *t = get_table(sw, table);
    if (!t) { rc = SS_ENOENT; goto out; }
    if ((rc = check_action(sw, table, action, args, n_args, &alloc))) goto out;
    uint64_t *a = calloc(alloc, sizeof(uint64_t));
    if (!a) { rc = ss__error(sw, SS_ENOMEM, "out of memory"); goto out; }
    if (n_args) memcpy(a, args, (size_t)n_args * sizeof(uint64_t));
    free(t->default_args);
    t->default_args = a;
    t->default_action = action;
    t->default_n_args = n_args;
    rc = SS_OK;
out:
    ss__unlock(sw);
    return rc;
}

int ss_table_direct_counter(struct ss_switch *sw, uint32_t table, const uint64_t *values,
                            const uint64_t *masks, int32_t priority, uint64_t *bytes,
                            uint64_t *packets, int write) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc;
    ss_table *t;
    ss_entry *e = find_entry(sw, table, values, masks, priority, &t, NULL, &rc);
    if (!e) goto out;
    if (!t->has_direct_counter) {
        rc = ss__error(sw, SS_ENOENT, "table %u has no direct counter", table);
        goto out;
    }
    if (!bytes || !packets) { rc = ss__error(sw, SS_EINVAL, "bytes and packets are required"); goto out; }
    if (write) {
        e->bytes = *bytes;
        e->packets = *packets;
    } else {
        *bytes = e->bytes;
        *packets = e->packets;
    }
    rc = SS_OK;
out:
    ss__unlock(sw);
    return rc;
}

int ss_table_direct_meter_config(struct ss_switch *sw, uint32_t table, const uint64_t *values,
                                 const uint64_t *masks, int32_t priority, uint64_t cir,
                                 uint64_t cburst, uint64_t pir, uint64_t pburst) {
    if (!sw) return SS_EINVAL;
    ss__lock(sw);
    int rc;
    ss_table *t;
    ss_entry *e = find_entry(sw, table, values, masks, priority, &t, NULL, &rc);
    if (!e) goto out;
    if (t->direct_meter < 0) {
        rc = ss__error(sw, SS_ENOENT, "table %u has no direct meter", table);
        goto out;
    }
    if (pir < cir) {
        rc = ss__error(sw, SS_EINVAL, "meter peak rate must be at least the committed rate");
        goto out;
    }
    ss__meter_configure(&e->meter, cir, cburst, pir, pburst);
    rc = SS_OK;
out:
    ss__unlock(sw);
    return rc;
}

/* ------------------------------------------------------------------ lookup (data path) */
static inline int cmp_limbs(const uint64_t *a, const uint64_t *b, uint32_t g) {
    for (uint32_t j = 0; j < g; j++)
        if (a[j] != b[j]) return a[j] < b[j] ? -1 : 1;
    return 0;
}

/* scan mode with a range key of several limbs (values wider than 64 bits) */
static ss_entry *scan_wide_range(const ss_table *t, const uint64_t *keys) {
    uint32_t n = t->n_keys;
    for (uint32_t j = 0; j < t->count; j++) {
        ss_entry *e = t->sorted[j];
        uint32_t i = 0;
        while (i < n) {
            uint32_t g = t->kinds[i] == SS_MATCH_RANGE ? t->range_len[i] : 1;
            if (g > 1) {
                if (cmp_limbs(keys + i, e->lo + i, g) < 0 || cmp_limbs(keys + i, e->hi + i, g) > 0) break;
                i += g;
                continue;
            }
            uint64_t k = keys[i];
            if ((k & e->m[i]) != e->v[i] || k < e->lo[i] || k > e->hi[i]) break;
            i++;
        }
        if (i == n) return e;
    }
    return NULL;
}

static inline ss_entry *lookup(const ss_table *t, const uint64_t *keys) {
    uint32_t n = t->n_keys;
    if (t->mode == SS_TMODE_EXACT) {
        if (!t->count) return NULL;
        uint64_t h = hash_words(keys, n);
        uint32_t i = (uint32_t)h & t->slot_mask;
        for (;;) {
            ss_entry *e = t->slots[i].e;
            if (!e) return NULL;
            if (t->slots[i].hash == h && memcmp(e->id, keys, (size_t)n * sizeof(uint64_t)) == 0) return e;
            i = (i + 1) & t->slot_mask;
        }
    }
    if (t->mode == SS_TMODE_LPM) {
        if (!t->count) return NULL;
        uint64_t buf[SS_MAX_KEYS + 1];
        memcpy(buf, keys, (size_t)n * sizeof(uint64_t));
        uint32_t li = t->lpm_index, w = t->widths[li];
        if (t->lpm_len > 1) {  /* an lpm key of several limbs: each masked by its part of p */
            for (uint32_t j = 0; j < t->n_plens; j++) {
                uint32_t p = t->plens[j];
                for (uint32_t l = 0; l < t->lpm_len; l++) {
                    uint32_t wl = t->widths[li + l], pl = p < wl ? p : wl;
                    buf[li + l] = keys[li + l] & prefix_mask(wl, pl);
                    p -= pl;
                }
                buf[n] = t->plens[j];
                ss_entry *e = ht_find(t, hash_words(buf, n + 1), buf, n + 1, NULL);
                if (e) return e;
            }
            return NULL;
        }
        for (uint32_t j = 0; j < t->n_plens; j++) {
            uint32_t p = t->plens[j];
            buf[li] = keys[li] & prefix_mask(w, p);
            buf[n] = p;
            ss_entry *e = ht_find(t, hash_words(buf, n + 1), buf, n + 1, NULL);
            if (e) return e;
        }
        return NULL;
    }
    if (t->wide_range) return scan_wide_range(t, keys);
    for (uint32_t j = 0; j < t->count; j++) {
        ss_entry *e = t->sorted[j];
        uint32_t i = 0;
        for (; i < n; i++) {
            uint64_t k = keys[i];
            if ((k & e->m[i]) != e->v[i] || k < e->lo[i] || k > e->hi[i]) break;
        }
        if (i == n) return e;
    }
    return NULL;
}

int ss_table_apply(ss_ctx *c, uint32_t table, const uint64_t *keys, uint32_t *action,
                   const uint64_t **args) {
    struct ss_switch *sw = c->sw;
    if (table >= sw->n_tables || !sw->tables[table]) {
        *action = SS_NO_ACTION;
        *args = zero_args;
        return 0;
    }
    ss_table *t = sw->tables[table];
    ss_entry *e = lookup(t, keys);
    if (!e) {
        *action = t->default_action;
        *args = t->default_args ? t->default_args : zero_args;
        return 0;
    }
    e->packets++;
    e->bytes += c->len;
    if (t->direct_meter >= 0) {
        ss_dmeter *dm = &sw->dmeters[t->direct_meter];
        c->last_meter_color[t->direct_meter] =
            (uint32_t)ss__meter_mark(&e->meter, dm->bytes ? c->len : 1);
    }
    *action = e->action;
    *args = e->args;
    return 1;
}
