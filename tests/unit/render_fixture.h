/*
 * render_fixture.h — a view's tables as the report writes them, for tests that compare two
 * ways of making a table by what they write.
 */
#ifndef TALLY_TEST_RENDER_FIXTURE_H
#define TALLY_TEST_RENDER_FIXTURE_H

#include "report/table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tables of a view (a chain) as tl_out writes them in fmt (auto unit); free() it. */
static inline char *fx_render(const tl_table *tab, tl_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    tl_out out;
    tl_out_begin(&out, f, fmt, TL_UNIT_AUTO);
    for (const tl_table *x = tab; x; x = x->next)
        tl_out_table(&out, x);
    tl_out_end(&out);
    fclose(f);
    return buf;
}

/* 1 when a and b (chains) write the same text, CSV and JSON. */
static inline int fx_same_writes(const tl_table *a, const tl_table *b)
{
    int same = 1;
    for (int f = TL_FMT_TEXT; f <= TL_FMT_JSON; f++) {
        char *p = fx_render(a, (tl_format)f), *q = fx_render(b, (tl_format)f);
        same &= p && q && strcmp(p, q) == 0;
        free(p);
        free(q);
    }
    return same;
}

#endif
