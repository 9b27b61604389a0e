/*
 * u64map.c — the 64-bit key to 64-bit value hash map (see u64map.h).
 */
#include "trace/u64map.h"

#include <stdlib.h>
#include <string.h>

static int grow(tl_u64map *m)
{
    size_t nc = m->cap ? m->cap * 2 : 64;
    tl_u64map g = {malloc(nc * sizeof *g.pair), calloc(nc, 1), nc, m->n};
    if (!g.pair || !g.used) {
        free(g.pair);
        free(g.used);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->used[i]) {
            size_t h = tl_u64map_slot(&g, m->pair[i].key);
            g.pair[h] = m->pair[i];
            g.used[h] = 1;
        }
    free(m->pair);
    free(m->used);
    *m = g;
    return 0;
}

int tl_u64map_put(tl_u64map *m, uint64_t key, uint64_t val)
{
    if ((m->n + 1) * 2 > m->cap && grow(m) != 0)
        return -1;
    size_t h = tl_u64map_slot(m, key);
    if (!m->used[h]) {
        m->used[h] = 1;
        m->pair[h].key = key;
        m->n++;
    }
    m->pair[h].val = val;
    return 0;
}

int tl_u64map_del(tl_u64map *m, uint64_t key)
{
    if (!m->n)
        return 0;
    size_t mask = m->cap - 1, i = tl_u64map_slot(m, key);
    if (!m->used[i])
        return 0;
    /* shift back the entries of the probe run after the hole that may move into it: those
     * whose home slot is not cyclically within (hole, j] */
    for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
        size_t home = tl_u64map_mix(m->pair[j].key) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->pair[i] = m->pair[j];
            i = j;
        }
    }
    m->used[i] = 0;
    m->n--;
    return 1;
}

void tl_u64map_clear(tl_u64map *m)
{
    if (m->cap)
        memset(m->used, 0, m->cap);
    m->n = 0;
}

void tl_u64map_free(tl_u64map *m)
{
    free(m->pair);
    free(m->used);
    memset(m, 0, sizeof *m);
}
