/*
 * analysis.c — interval algebra and the other small pieces every view shares.
 *
 * Interval sets are kept as plain arrays; normalize sorts and merges them, after which union,
 * intersection and difference are linear merges. Times of "a type of event" in the views are
 * always lengths of normalized sets, so overlapping events are never counted twice.
 */
#include "analysis/analysis.h"
#include "analysis/steps.h"
#include "trace/checked.h"
#include "trace/natsort.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void tl_ivset_add(tl_ivset *set, int64_t s, int64_t e)
{
    if (e <= s)
        return;
    if (set->n == set->cap) {
        size_t nc = set->cap ? set->cap * 2 : 64;
        tl_iv *nv = tl_big_realloc(set->v, nc * sizeof *nv);
        if (!nv) {
            set->oom = 1;
            return;
        }
        set->v = nv;
        set->cap = nc;
    }
    set->v[set->n].s = s;
    set->v[set->n].e = e;
    set->n++;
}

void tl_ivset_extend(tl_ivset *set, int64_t s, int64_t e)
{
    if (e <= s)
        return;
    if (set->n && s >= set->v[set->n - 1].s && s <= set->v[set->n - 1].e) {
        if (e > set->v[set->n - 1].e)
            set->v[set->n - 1].e = e;
        return;
    }
    tl_ivset_add(set, s, e);
}

void tl_ivset_append(tl_ivset *set, const tl_ivset *from)
{
    for (size_t i = 0; i < from->n; i++)
        tl_ivset_add(set, from->v[i].s, from->v[i].e);
}

int tl_view_parts(const tl_trace *t, size_t n)
{
    int k = tl_trace_threads(t);
    if (k > 16)
        k = 16;
    if (n / TL_VIEW_PART_MIN < (size_t)k)
        k = (int)(n / TL_VIEW_PART_MIN);
    return k < 1 ? 1 : k;
}

static int iv_cmp(const void *pa, const void *pb)
{
    const tl_iv *a = pa, *b = pb;
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    return (a->e > b->e) - (a->e < b->e);
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

static int iv_before(const tl_iv *a, const tl_iv *b, const void *unused)
{
    (void)unused;
    return a->s != b->s ? a->s < b->s : a->e < b->e;
}

TL_NATURAL_MERGE_SORT(iv_sort, tl_iv, const void *, iv_before)

/* Sets are mostly filled track after track, so they come in a few runs sorted by start: a
 * natural merge sort costs little (the order is the same as iv_cmp's: by start, then end).
 * qsort when there is no memory for the merge. */
static void ivset_sort(tl_ivset *set)
{
    size_t n = set->n, i = 1;
    while (i < n && !iv_before(&set->v[i], &set->v[i - 1], NULL))
        i++;
    if (i >= n)
        return; /* already in order */
    tl_iv *tmp = tl_big_alloc(n * sizeof *tmp);
    tl_iv *res = tmp ? iv_sort(set->v, tmp, n, NULL) : NULL;
    if (!res)
        qsort(set->v, n, sizeof *set->v, iv_cmp);
    else if (res != set->v)
        memcpy(set->v, res, n * sizeof *res);
    free(tmp);
}

void tl_ivset_normalize(tl_ivset *set)
{
    if (set->n < 2)
        return;
    ivset_sort(set);
    size_t w = 0;
    for (size_t i = 1; i < set->n; i++) {
        if (set->v[i].s <= set->v[w].e) {
            if (set->v[i].e > set->v[w].e)
                set->v[w].e = set->v[i].e;
        } else {
            set->v[++w] = set->v[i];
        }
    }
    set->n = w + 1;
}

int64_t tl_ivset_length(const tl_ivset *set)
{
    int64_t total = 0;
    for (size_t i = 0; i < set->n; i++)
        total += set->v[i].e - set->v[i].s;
    return total;
}

int64_t tl_ivset_union_length(const tl_ivset *const *sets, int k)
{
    size_t at[TL_IVSET_UNION_MAX] = {0};
    if (k > TL_IVSET_UNION_MAX)
        return -1;                   /* a caller's mistake, not a length */
    int64_t total = 0, s = 0, e = 0; /* the run being merged: [s, e) */
    int open = 0;
    for (;;) {
        int m = -1; /* the set whose next interval starts first */
        for (int j = 0; j < k; j++)
            if (at[j] < sets[j]->n && (m < 0 || sets[j]->v[at[j]].s < sets[m]->v[at[m]].s))
                m = j;
        if (m < 0)
            break;
        const tl_iv *iv = &sets[m]->v[at[m]++];
        if (open && iv->s <= e) {
            e = iv->e > e ? iv->e : e;
            continue;
        }
        if (open)
            total += e - s;
        s = iv->s;
        e = iv->e;
        open = 1;
    }
    return open ? total + (e - s) : total;
}

void tl_ivset_union(const tl_ivset *a, const tl_ivset *b, tl_ivset *out)
{
    tl_ivset_clear(out);
    for (size_t i = 0; i < a->n; i++)
        tl_ivset_add(out, a->v[i].s, a->v[i].e);
    for (size_t i = 0; i < b->n; i++)
        tl_ivset_add(out, b->v[i].s, b->v[i].e);
    tl_ivset_normalize(out);
}

void tl_ivset_intersect(const tl_ivset *a, const tl_ivset *b, tl_ivset *out)
{
    tl_ivset_clear(out);
    size_t i = 0, j = 0;
    while (i < a->n && j < b->n) {
        int64_t s = a->v[i].s > b->v[j].s ? a->v[i].s : b->v[j].s;
        int64_t e = a->v[i].e < b->v[j].e ? a->v[i].e : b->v[j].e;
        tl_ivset_add(out, s, e);
        if (a->v[i].e < b->v[j].e)
            i++;
        else
            j++;
    }
}

void tl_ivset_subtract(const tl_ivset *a, const tl_ivset *b, tl_ivset *out)
{
    tl_ivset_clear(out);
    size_t j = 0;
    for (size_t i = 0; i < a->n; i++) {
        int64_t s = a->v[i].s, e = a->v[i].e;
        while (j < b->n && b->v[j].e <= s)
            j++;
        size_t k = j;
        while (k < b->n && b->v[k].s < e) {
            if (b->v[k].s > s)
                tl_ivset_add(out, s, b->v[k].s);
            if (b->v[k].e > s)
                s = b->v[k].e;
            if (s >= e)
                break;
            k++;
        }
        tl_ivset_add(out, s, e);
    }
}

void tl_ivset_clip(tl_ivset *set, int64_t s, int64_t e)
{
    size_t w = 0;
    for (size_t i = 0; i < set->n; i++) {
        int64_t a = set->v[i].s > s ? set->v[i].s : s;
        int64_t b = set->v[i].e < e ? set->v[i].e : e;
        if (b > a) {
            set->v[w].s = a;
            set->v[w].e = b;
            w++;
        }
    }
    set->n = w;
}

void tl_ivset_clear(tl_ivset *set)
{
    set->n = 0;
    set->oom = 0;
}

void tl_ivset_free(tl_ivset *set)
{
    free(set->v);
    memset(set, 0, sizeof *set);
}

void tl_profiled_window(const tl_trace *t, tl_window *w)
{
    tl_steps st;
    memset(w, 0, sizeof *w);
    if (tl_steps_load(t, &st) == 0) {
        tl_steps_window(&st, w);
        tl_steps_free(&st);
    } else { /* out of memory: the whole trace */
        tl_trace_span(t, &w->t0, &w->t1);
        w->total = w->t1 - w->t0;
    }
}

void tl_profiled_window_set(const tl_trace *t, tl_ivset *set)
{
    tl_steps st;
    if (tl_steps_load(t, &st) == 0) {
        tl_steps_set(&st, set);
        tl_steps_free(&st);
    } else {
        int64_t t0, t1;
        tl_trace_span(t, &t0, &t1);
        tl_ivset_add(set, t0, t1);
        tl_ivset_normalize(set);
    }
}

void tl_sort_i64(int64_t *a, size_t n)
{
    if (n < 64) { /* insertion sort */
        for (size_t i = 1; i < n; i++) {
            int64_t x = a[i];
            size_t j = i;
            for (; j > 0 && a[j - 1] > x; j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    uint64_t *tmp = tl_big_alloc(n * sizeof *tmp);
    if (!tmp) {
        qsort(a, n, sizeof *a, cmp_i64);
        return;
    }
    /* LSD radix sort, a byte at a time, on the values with the sign bit flipped (so that
     * unsigned order is signed order); bytes that are the same in every value are skipped. */
    uint64_t *src = (uint64_t *)a, *dst = tmp, all_or = 0, all_and = ~(uint64_t)0;
    for (size_t i = 0; i < n; i++) {
        src[i] ^= (uint64_t)1 << 63;
        all_or |= src[i];
        all_and &= src[i];
    }
    for (int shift = 0; shift < 64; shift += 8) {
        if ((((all_or ^ all_and) >> shift) & 0xff) == 0)
            continue;
        size_t count[256] = {0};
        for (size_t i = 0; i < n; i++)
            count[(src[i] >> shift) & 0xff]++;
        for (size_t b = 0, at = 0; b < 256; b++) {
            size_t c = count[b];
            count[b] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & 0xff]++] = src[i];
        uint64_t *sw = src;
        src = dst;
        dst = sw;
    }
    if (src != (uint64_t *)a)
        memcpy(a, src, n * sizeof *a);
    for (size_t i = 0; i < n; i++)
        a[i] = (int64_t)((uint64_t)a[i] ^ (uint64_t)1 << 63);
    free(tmp);
}

static inline unsigned char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + ('a' - 'A')) : (unsigned char)c;
}

int tl_has_ci(const char *s, const char *needle)
{
    /* a byte compare where strncasecmp was a call at every position of a kernel's long name
     * (4 % of reading a 10 MB trace: once per distinct name, for the communication kernels) */
    if (!*needle)
        return 1;
    unsigned char first = ascii_lower(needle[0]);
    for (; *s; s++) {
        if (ascii_lower(*s) != first)
            continue;
        size_t k = 1;
        while (needle[k] && ascii_lower(s[k]) == ascii_lower(needle[k]))
            k++;
        if (!needle[k])
            return 1;
    }
    return 0;
}

/* Whether e's duration is taken from its parent's self time: a child with a length. */
static int takes_from_parent(const tl_event *e)
{
    return e->parent != TL_NONE && !(e->flags & TL_EV_INSTANT) && e->dur > 0;
}

void tl_self_times(const tl_trace *t, int64_t *out)
{
    for (size_t i = 0; i < t->nev; i++)
        out[i] = t->ev[i].dur;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (takes_from_parent(e))
            out[e->parent] = tl_sub_sat(out[e->parent], e->dur);
    }
}

int tl_evrank_build(const tl_trace *t, uint32_t cats, tl_evrank *r)
{
    size_t words = t->nev / 64 + 1;
    r->n = 0;
    r->bits = calloc(words, sizeof *r->bits);
    r->before = malloc(words * sizeof *r->before);
    if (!r->bits || !r->before || t->nev > UINT32_MAX) {
        tl_evrank_free(r);
        return -1;
    }
    for (size_t i = 0; i < t->nev; i++)
        if (tl_cat_in(cats, t->ev[i].cat))
            r->bits[i >> 6] |= (uint64_t)1 << (i & 63);
    uint32_t n = 0;
    for (size_t w = 0; w < words; w++) {
        r->before[w] = n;
        n += tl_popcount64(r->bits[w]);
    }
    r->n = n;
    return 0;
}

void tl_evrank_free(tl_evrank *r)
{
    free(r->bits);
    free(r->before);
    r->bits = NULL;
    r->before = NULL;
    r->n = 0;
}

void tl_self_times_of(const tl_trace *t, const tl_evrank *r, int64_t *out)
{
    for (size_t i = 0, k = 0; i < t->nev; i++)
        if (tl_evrank_of(r, i) >= 0)
            out[k++] = t->ev[i].dur;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (!takes_from_parent(e))
            continue;
        int64_t k = tl_evrank_of(r, (size_t)e->parent);
        if (k >= 0)
            out[k] = tl_sub_sat(out[k], e->dur);
    }
}

int tl_view_sort(tl_table *tab, const tl_view_opts *o, const char *default_key, int from,
                 tl_error *err)
{
    const char *key = o && o->sort ? o->sort : default_key;
    if (key) {
        int col = tl_table_find_col(tab, key);
        if (col < 0) {
            if (o && o->sort) {
                char cols[400];
                size_t n = 0;
                cols[0] = 0;
                for (int c = 0; c < tab->ncols && n + 1 < sizeof cols; c++)
                    n += (size_t)snprintf(cols + n, sizeof cols - n, "%s%s", c ? ", " : "",
                                          tab->cols[c].key);
                tl_error_setc(err, TL_ERR_USAGE,
                              "unknown sort key '%s' for %s; expected one of: %s", key, tab->title,
                              cols);
                return -1;
            }
        } else {
            tl_table_sort(tab, col, !(o && o->ascending), from);
        }
    }
    if (o && o->top > 0)
        tl_table_truncate(tab, from + o->top);
    return 0;
}

/* ---- the scope of the GPU views ----------------------------------------------------------- */

int tl_gpu_scope_init(const tl_trace *t, const tl_view_opts *o, tl_gpu_scope *s)
{
    memset(s, 0, sizeof *s);
    s->all = o && o->window_all;
    s->linked_only = o && o->linked_only;
    tl_profiled_window(t, &s->w);
    if (s->all) {
        int64_t t0, t1;
        tl_trace_span(t, &t0, &t1);
        tl_ivset_add(&s->window, t0, t1);
    } else {
        tl_profiled_window_set(t, &s->window);
    }
    s->total = tl_ivset_length(&s->window);
    int64_t t0, t1;
    tl_trace_span(t, &t0, &t1);
    return t1 > t0 && !s->window.n ? -1 : 0; /* the window could not be stored */
}

void tl_gpu_scope_free(tl_gpu_scope *s)
{
    tl_ivset_free(&s->window);
}

int tl_gpu_scope_linked(const tl_gpu_scope *s, const tl_event *e)
{
    return !s->linked_only || e->link != TL_NONE;
}

int tl_copy_is_sync(const tl_trace *t, const tl_event *e)
{
    if (e->flags & TL_EV_SYNC_COPY)
        return 1;
    if (e->link == TL_NONE || (size_t)e->link >= t->nev)
        return 0;
    const char *call = tl_str(&t->strings, t->ev[e->link].name);
    return strstr(call, "Memcpy") && !strstr(call, "Async");
}

int tl_copy_is_pageable(const tl_trace *t, const tl_event *e)
{
    return (e->flags & TL_EV_PAGEABLE) || strstr(tl_str(&t->strings, e->name), "Pageable");
}

size_t tl_ivset_from(const tl_ivset *w, int64_t x)
{
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->v[mid].e <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int tl_ivset_has(const tl_ivset *w, int64_t x)
{
    size_t k = tl_ivset_from(w, x);
    return k < w->n && w->v[k].s <= x;
}

/* Whether the moment x is in the window: inside a step, or anywhere in a trace without steps,
 * its last moment included (the span [first, last) has no room for an op of no length at its
 * end, and none at all when every op is at one moment). */
static int scope_has(const tl_gpu_scope *s, int64_t x)
{
    return tl_ivset_has(&s->window, x) || (!s->w.nsteps && x == s->w.t1);
}

int tl_gpu_scope_counts(const tl_trace *t, const tl_gpu_scope *s, const tl_event *e)
{
    if (!tl_gpu_scope_linked(s, e))
        return 0;
    if (s->all)
        return 1;
    uintptr_t at0 = (uintptr_t)t->ev, ae = (uintptr_t)e; /* an event of the trace's array */
    if (ae >= at0 && ae < at0 + t->nev * sizeof *t->ev)
        tl_launch_prefetch(t, (ae - at0) / sizeof *t->ev, 0);
    int64_t at = e->link != TL_NONE ? t->ev[e->link].ts : e->ts;
    return scope_has(s, at);
}

int64_t tl_gpu_scope_len(const tl_gpu_scope *s, int64_t a, int64_t b)
{
    if (b <= a)
        return 0;
    if (s->all)
        return b - a;
    int64_t n = 0;
    for (size_t k = tl_ivset_from(&s->window, a); k < s->window.n && s->window.v[k].s < b; k++) {
        int64_t x = s->window.v[k].s > a ? s->window.v[k].s : a;
        int64_t y = s->window.v[k].e < b ? s->window.v[k].e : b;
        if (y > x)
            n += y - x;
    }
    return n;
}

int tl_gpu_scope_touches(const tl_gpu_scope *s, const tl_event *e)
{
    if (!tl_gpu_scope_linked(s, e))
        return 0;
    if (s->all)
        return 1;
    if (e->dur > 0)
        return tl_gpu_scope_len(s, e->ts, e->ts + e->dur) > 0;
    return scope_has(s, e->ts); /* an op of no length */
}

void tl_gpu_scope_clip(const tl_gpu_scope *s, tl_ivset *set)
{
    if (s->all)
        return;
    tl_ivset tmp = {0};
    tl_ivset_intersect(set, &s->window, &tmp);
    tmp.oom |= set->oom;
    tl_ivset_free(set);
    *set = tmp;
}

const char *tl_gpu_scope_name(const tl_gpu_scope *s)
{
    return s->all ? "the whole file" : s->w.nsteps ? "the steps" : "the span of the trace";
}
