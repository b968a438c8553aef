#include "kmap.h"

#include <stdlib.h>

static size_t key_hash(const struct rs_key *k, size_t nbuckets)
{
    uint64_t h = ((uint64_t)k->ip << 16 | k->port) * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)k->request_id * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 29;
    return (size_t)h & (nbuckets - 1);
}

static int key_eq(const struct rs_key *a, const struct rs_key *b)
{
    return a->ip == b->ip && a->port == b->port && a->request_id == b->request_id;
}

int rs_kmap_init(struct rs_kmap *m, size_t nbuckets)
{
    size_t n = 1;
    while (n < nbuckets)
        n <<= 1;
    m->buckets = calloc(n, sizeof *m->buckets);
    m->nbuckets = n;
    m->head = m->tail = NULL;
    m->count = 0;
    return m->buckets ? 0 : -1;
}

void rs_kmap_free(struct rs_kmap *m)
{
    free(m->buckets);
    m->buckets = NULL;
}

struct rs_knode *rs_kmap_find(const struct rs_kmap *m, const struct rs_key *key)
{
    for (struct rs_knode *n = m->buckets[key_hash(key, m->nbuckets)]; n; n = n->hnext)
        if (key_eq(&n->key, key))
            return n;
    return NULL;
}

static void list_append(struct rs_kmap *m, struct rs_knode *n)
{
    n->next = NULL;
    n->prev = m->tail;
    if (m->tail)
        m->tail->next = n;
    else
        m->head = n;
    m->tail = n;
}

static void list_unlink(struct rs_kmap *m, struct rs_knode *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        m->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        m->tail = n->prev;
}

void rs_kmap_insert(struct rs_kmap *m, struct rs_knode *n)
{
    size_t b = key_hash(&n->key, m->nbuckets);
    n->hnext = m->buckets[b];
    m->buckets[b] = n;
    list_append(m, n);
    m->count++;
}

void rs_kmap_remove(struct rs_kmap *m, struct rs_knode *n)
{
    struct rs_knode **pp = &m->buckets[key_hash(&n->key, m->nbuckets)];
    while (*pp && *pp != n)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = n->hnext;
    list_unlink(m, n);
    m->count--;
}

void rs_kmap_touch(struct rs_kmap *m, struct rs_knode *n)
{
    list_unlink(m, n);
    list_append(m, n);
}
