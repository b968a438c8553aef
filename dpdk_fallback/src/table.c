#include "table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int rs_table_init(struct rs_table *t, const char *name, uint32_t max_size, double alpha,
                  enum rs_mode mode)
{
    memset(t, 0, sizeof *t);
    strncpy(t->name, name, RS_TABLE_NAME_MAX);
    t->max_size = max_size;
    t->alpha = alpha;
    t->mode = mode;
    t->slots = calloc(max_size, sizeof *t->slots);
    t->priority = calloc(max_size, sizeof *t->priority);
    if (!t->slots || !t->priority || (mode == RS_MODE_HOST && rs_sumtree_init(&t->tree, max_size))) {
        rs_table_free(t);
        return -1;
    }
    return 0;
}

void rs_table_free(struct rs_table *t)
{
    if (t->slots)
        for (uint32_t i = 0; i < t->max_size; i++)
            free(t->slots[i]);
    free(t->slots);
    free(t->priority);
    rs_sumtree_free(&t->tree);
    t->slots = NULL;
    t->priority = NULL;
}

uint64_t rs_table_size(const struct rs_table *t)
{
    return t->next_key < t->max_size ? t->next_key : t->max_size;
}

int rs_table_has_key(const struct rs_table *t, uint64_t key)
{
    return key < t->next_key && t->next_key - key <= t->max_size;
}

uint64_t rs_table_slot_key(const struct rs_table *t, uint32_t slot)
{
    /* the newest key k < next_key with k % max_size == slot */
    return slot + (uint64_t)t->max_size * ((t->next_key - 1 - slot) / t->max_size);
}

double rs_table_leaf(const struct rs_table *t, float priority)
{
    /* pow(0, 0) is 1, but a zero priority must never be sampled */
    return priority > 0 ? pow((double)priority, t->alpha) : 0.0;
}

uint64_t rs_table_insert(struct rs_table *t, struct rs_item *item, float priority)
{
    uint64_t key = t->next_key++;
    uint32_t slot = rs_table_slot(t, key);
    if (t->slots[slot]) {
        free(t->slots[slot]);
        t->evictions++;
    }
    t->slots[slot] = item;
    t->inserts++;
    rs_table_set_priority(t, slot, priority);
    return key;
}

void rs_table_set_priority(struct rs_table *t, uint32_t slot, float priority)
{
    if (t->mode != RS_MODE_HOST) {
        t->priority[slot] = 0; /* the switch holds it */
        return;
    }
    t->priority[slot] = priority;
    rs_sumtree_set(&t->tree, slot, rs_table_leaf(t, priority));
}

void rs_table_rebuild(struct rs_table *t)
{
    if (t->mode != RS_MODE_HOST)
        return;
    uint64_t size = rs_table_size(t);
    for (uint32_t s = 0; s < size; s++)
        rs_sumtree_set(&t->tree, s, rs_table_leaf(t, t->priority[s]));
}
