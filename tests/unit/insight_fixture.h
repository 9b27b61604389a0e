/* insight_fixture.h — building small traces by hand for the insight views' tests. */
#ifndef TALLY_TEST_INSIGHT_FIXTURE_H
#define TALLY_TEST_INSIGHT_FIXTURE_H

#include "analysis/insight.h"

#include <string.h>

#define MS 1000000LL
#define US 1000LL

static inline tl_event *fx_ev(tl_trace *t, uint32_t track, int cat, const char *name, int64_t ts,
                              int64_t dur)
{
    tl_event *e = tl_trace_add(t);
    e->track = track;
    e->cat = (uint16_t)cat;
    e->name = name ? tl_intern(&t->strings, name, strlen(name)) : 0; /* NULL: no name */
    e->ts = ts;
    e->dur = dur;
    return e;
}

/* A runtime call on host track th at call_ts (10 us long) launching a kernel on stream st. */
static inline void fx_launch(tl_trace *t, uint32_t th, uint32_t st, const char *kernel,
                             int64_t call_ts, int64_t k_ts, int64_t k_dur, int64_t corr)
{
    fx_ev(t, th, TL_CAT_RUNTIME, "cudaLaunchKernel", call_ts, 10 * US)->corr = corr;
    fx_ev(t, st, TL_CAT_KERNEL, kernel, k_ts, k_dur)->corr = corr;
}

/* Cell accessors by column key. */
static inline const tl_cell *fx_cell(const tl_table *tab, int row, const char *key)
{
    int c = tl_table_find_col(tab, key);
    if (c < 0 || row < 0 || row >= tab->nrows)
        return NULL;
    return &tab->cells[(size_t)row * tab->ncols + c];
}
static inline int64_t fx_i(const tl_table *tab, int row, const char *key)
{
    const tl_cell *c = fx_cell(tab, row, key);
    return c && c->set ? c->i : -999999;
}
static inline double fx_d(const tl_table *tab, int row, const char *key)
{
    const tl_cell *c = fx_cell(tab, row, key);
    return c && c->set ? c->d : -999999.0;
}
static inline const char *fx_s(const tl_table *tab, int row, const char *key)
{
    const tl_cell *c = fx_cell(tab, row, key);
    return c && c->set && c->s ? c->s : "";
}
/* Row whose column key holds string s, or -1. */
static inline int fx_row(const tl_table *tab, const char *key, const char *s)
{
    for (int r = 0; r < tab->nrows; r++)
        if (!strcmp(fx_s(tab, r, key), s))
            return r;
    return -1;
}
/* Table of the chain with this json key. */
static inline const tl_table *fx_table(const tl_table *tab, const char *key)
{
    for (; tab; tab = tab->next)
        if (tab->key && !strcmp(tab->key, key))
            return tab;
    return NULL;
}

#endif
