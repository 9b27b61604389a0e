/*
 * attrib.c — device work attributed to the host spans that launched it. See attrib.h.
 */
#include "analysis/attrib.h"
#include "analysis/analysis.h"

#include <stdlib.h>
#include <string.h>

int32_t tl_launch_owner(const tl_trace *t, size_t i, uint32_t mask)
{
    tl_launch_prefetch(t, i, 1); /* for the calls to come: the views call it in event order */
    const tl_event *e = &t->ev[i];
    if (e->link == TL_NONE || (size_t)e->link >= t->nev)
        return TL_NONE;
    const tl_event *call = &t->ev[e->link];
    int32_t p = call->parent;
    /* a kernel linked to something that is not a call on a host track has no owner */
    if (tl_cat_is_device((tl_cat)call->cat))
        return TL_NONE;
    for (int guard = 0; p != TL_NONE && guard < 100000; guard++) {
        const tl_event *pe = &t->ev[p];
        if (pe->cat < 32 && (mask & TL_CATBIT(pe->cat)))
            return p;
        p = pe->parent;
    }
    return TL_NONE;
}

/* ---- keymap ------------------------------------------------------------------------------ */

static size_t slot_of(uint64_t key, size_t nslots)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (nslots - 1);
}

int32_t tl_keymap_get(const tl_keymap *m, uint64_t key)
{
    if (!m->nslots)
        return -1;
    for (size_t h = slot_of(key, m->nslots);; h = (h + 1) & (m->nslots - 1)) {
        if (m->vals[h] < 0)
            return -1;
        if (m->keys[h] == key)
            return m->vals[h];
    }
}

static int keymap_grow(tl_keymap *m)
{
    size_t ns = m->nslots ? m->nslots * 2 : 256;
    uint64_t *nk = malloc(ns * sizeof *nk);
    int32_t *nv = malloc(ns * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    for (size_t i = 0; i < ns; i++)
        nv[i] = -1;
    for (size_t i = 0; i < m->nslots; i++) {
        if (m->vals[i] < 0)
            continue;
        size_t h = slot_of(m->keys[i], ns);
        while (nv[h] >= 0)
            h = (h + 1) & (ns - 1);
        nk[h] = m->keys[i];
        nv[h] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->nslots = ns;
    return 0;
}

int tl_keymap_put(tl_keymap *m, uint64_t key, int32_t val)
{
    if ((m->n + 1) * 2 > m->nslots && keymap_grow(m) != 0)
        return -1;
    size_t h = slot_of(key, m->nslots);
    while (m->vals[h] >= 0 && m->keys[h] != key)
        h = (h + 1) & (m->nslots - 1);
    if (m->vals[h] < 0)
        m->n++;
    m->keys[h] = key;
    m->vals[h] = val;
    return 0;
}

void tl_keymap_free(tl_keymap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
