/* A named replay table: a ring of max_size item slots with FIFO eviction. Keys count the
 * items ever pushed (never reused); key k lives in slot k % max_size while it is among the
 * newest max_size keys. Host-mode tables keep priority^alpha in a sum-tree/min-tree; switch
 * mode tables keep items only (the switch holds their priorities). */
#ifndef RS_TABLE_H
#define RS_TABLE_H

#include <stdint.h>

#include "sumtree.h"

#define RS_TABLE_NAME_MAX 63
/* Largest max_size a table may have (the CLI's and a checkpoint's bound). */
#define RS_TABLE_MAX_SIZE (1u << 28)
#define RS_ALPHA_MAX 4.0 /* keeps p^alpha of any finite f32 (and sums of them) finite */

enum rs_mode { RS_MODE_HOST = 0, RS_MODE_SWITCH = 1 };

struct rs_item {
    uint32_t len;
    uint8_t data[];
};

struct rs_table {
    char name[RS_TABLE_NAME_MAX + 1];
    uint32_t max_size;
    double alpha;
    enum rs_mode mode;
    uint64_t next_key;        /* keys issued so far */
    struct rs_item **slots;   /* max_size slots, NULL until first filled */
    float *priority;          /* raw priority per slot (host mode; kept for checkpoints) */
    struct rs_sumtree tree;   /* host mode: leaves priority^alpha */
    uint64_t inserts, evictions, samples, updates, ignored_updates;
};

int rs_table_init(struct rs_table *t, const char *name, uint32_t max_size, double alpha,
                  enum rs_mode mode); /* 0 ok, -1 out of memory */
void rs_table_free(struct rs_table *t);
uint64_t rs_table_size(const struct rs_table *t);
int rs_table_has_key(const struct rs_table *t, uint64_t key);
static inline uint32_t rs_table_slot(const struct rs_table *t, uint64_t key)
{
    return (uint32_t)(key % t->max_size);
}
/* Key stored in an occupied slot (slot < size). */
uint64_t rs_table_slot_key(const struct rs_table *t, uint32_t slot);
/* Store item (ownership passes to the table), evicting the oldest at capacity; returns its key. */
uint64_t rs_table_insert(struct rs_table *t, struct rs_item *item, float priority);
/* Host mode: set a slot's priority (finite, >= 0). */
void rs_table_set_priority(struct rs_table *t, uint32_t slot, float priority);
double rs_table_leaf(const struct rs_table *t, float priority); /* priority^alpha, 0 for 0 */
/* Recompute every leaf (after alpha changes, e.g. on restore with a new --table alpha). */
void rs_table_rebuild(struct rs_table *t);

#endif
