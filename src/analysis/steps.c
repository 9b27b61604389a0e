/*
 * steps.c — the one definition of the steps of a trace (see steps.h for the rule).
 *
 * Sample counts come from the .tally reader (t->step_samples): one per step span it kept, in
 * the order of step numbers. They are matched to the steps by number, so a step left out here
 * (the one tally_stop closed, which has no count) takes no other step's count.
 */
#include "analysis/steps.h"
#include "trace/checked.h"

#include <stdlib.h>
#include <string.h>

static int step_cmp(const void *a, const void *b)
{
    const tl_step *x = a, *y = b;
    if (x->s != y->s)
        return (x->s > y->s) - (x->s < y->s);
    return (x->number > y->number) - (x->number < y->number);
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int is_step(const tl_event *e)
{
    return e->dur > 0 && !(e->flags & TL_EV_UNCLOSED);
}

/* The sample count of step number num: t->step_samples is one count per step span of the
 * trace, in number order (nums: those numbers, sorted). */
static int64_t samples_of(const tl_trace *t, const int64_t *nums, size_t nnums, int64_t num)
{
    const int64_t *hit = bsearch(&num, nums, nnums, sizeof *nums, i64_cmp);
    return hit ? t->step_samples[hit - nums] : 0;
}

/* Steps of one thread that overlap (a trace with its events twice, steps written over each
 * other): a step that starts before the one before it on its thread ends begins where that one
 * ended, and one that ends by then is no step; so every view counts each moment of a thread's
 * steps once and the steps never add up to more than the trace. Steps of different threads may
 * overlap (two processes in one file). out->v sorted by start; 0, or -1 out of memory. */
static int merge_overlaps(const tl_trace *t, tl_steps *out)
{
    struct last {
        uint32_t track;
        int64_t end;
    } *last = NULL;
    size_t nlast = 0;
    int kept = 0;
    for (int k = 0; k < out->n; k++) {
        tl_step s = out->v[k];
        uint32_t tr = t->ev[s.ev].track;
        size_t j = 0;
        while (j < nlast && last[j].track != tr)
            j++;
        if (j == nlast) {
            struct last *nl = realloc(last, (nlast + 1) * sizeof *nl);
            if (!nl) {
                free(last);
                tl_steps_free(out);
                return -1;
            }
            last = nl;
            last[nlast++] = (struct last){tr, INT64_MIN};
        }
        if (s.s < last[j].end) {
            out->overlapped++;
            s.s = last[j].end;
            if (s.e <= s.s)
                continue; /* inside the one before: none */
        }
        last[j].end = s.e > last[j].end ? s.e : last[j].end;
        out->v[kept++] = s;
    }
    free(last);
    if (!out->overlapped)
        return 0;
    out->n = kept;
    out->total = 0;
    out->with_samples = 0;
    for (int k = 0; k < kept; k++) {
        out->total = tl_add_sat(out->total, out->v[k].e - out->v[k].s);
        out->with_samples |= out->v[k].samples > 0;
    }
    return 0;
}

int tl_steps_load(const tl_trace *t, tl_steps *out)
{
    memset(out, 0, sizeof *out);
    /* Every view loads the steps, so this runs about ten times a report: tl_trace_finish lists
     * the step spans once, and what follows reads only those; a trace changed since (or not
     * finished) has its events read once for them. (Reading the events three times, as this
     * did, cost 0.2 ms per MB of JSON once they outgrow the cache.) */
    size_t spans = 0, cap = 0, n = 0;
    uint32_t *own = NULL; /* the list read here, when finish's is not known */
    const uint32_t *at = tl_trace_step_spans(t, &spans);
    for (size_t k = 0; at && k < spans; k++)
        n += is_step(&t->ev[at[k]]);
    for (size_t i = 0; !at && i < t->nev; i++) {
        if (t->ev[i].cat != TL_CAT_STEP)
            continue;
        if (spans == cap) {
            cap = cap ? 2 * cap : 64;
            uint32_t *na = realloc(own, cap * sizeof *na);
            if (!na) {
                free(own);
                return -1;
            }
            own = na;
        }
        own[spans++] = (uint32_t)i;
        n += is_step(&t->ev[i]);
    }
    if (!at)
        at = own;
    out->v = calloc(n ? n : 1, sizeof *out->v);
    if (!out->v) {
        free(own);
        return -1;
    }
    if (n == 0) {
        free(own);
        out->left_out = (int)spans;
        if (t->nev == 0)
            return 0;
        out->pseudo = 1;
        out->n = 1;
        tl_trace_span(t, &out->v[0].s, &out->v[0].e);
        out->v[0].ev = TL_NONE;
        out->total = out->v[0].e - out->v[0].s;
        return 0;
    }
    int64_t *nums = NULL;
    if (t->nsteps_samples == spans) {
        nums = malloc(spans * sizeof *nums);
        if (!nums) {
            free(own);
            tl_steps_free(out);
            return -1;
        }
        for (size_t k = 0; k < spans; k++)
            nums[k] = t->ev[at[k]].value;
        qsort(nums, spans, sizeof *nums, i64_cmp);
    }
    for (size_t k = 0; k < spans; k++) {
        const tl_event *e = &t->ev[at[k]];
        if (!is_step(e))
            continue;
        tl_step *s = &out->v[out->n++];
        s->s = e->ts;
        s->e = e->ts + e->dur;
        s->number = e->value;
        s->name = e->name;
        s->ev = (int32_t)at[k];
        s->samples = nums ? samples_of(t, nums, spans, e->value) : 0;
        out->total = tl_add_sat(out->total, e->dur);
        if (s->samples > 0)
            out->with_samples = 1;
    }
    free(nums);
    free(own);
    out->left_out = (int)(spans - n);
    qsort(out->v, n, sizeof *out->v, step_cmp);
    return merge_overlaps(t, out);
}

void tl_steps_note(const tl_steps *st, tl_table *tab)
{
    if (st->left_out)
        tl_table_note(tab,
                      "%d step(s) closed by the end of profiling (tally_stop, the end of the "
                      "trace) rather than by the program are not steps and are left out.",
                      st->left_out);
    if (st->overlapped)
        tl_table_note(tab,
                      "%d step span(s) began before the one before them on their thread had "
                      "ended (the trace holds its events twice, or steps written over each "
                      "other): each begins where that one ended, and one inside it is no step.",
                      st->overlapped);
}

void tl_steps_free(tl_steps *st)
{
    free(st->v);
    memset(st, 0, sizeof *st);
}

int64_t tl_steps_avg(const tl_steps *st)
{
    return st->n > 0 ? st->total / st->n : 0;
}

int tl_steps_from(const tl_steps *st, int64_t x)
{
    /* Steps are sorted by start; when they do not overlap their ends are sorted too. With
     * overlapping steps (rare: steps on two threads) step back over any that still end after
     * x. */
    int lo = 0, hi = st->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (st->v[mid].e <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo > 0 && st->v[lo - 1].e > x)
        lo--;
    return lo;
}

int tl_steps_at(const tl_steps *st, int64_t x)
{
    int lo = 0, hi = st->n;
    while (lo < hi) { /* lo = first step starting after x */
        int mid = (lo + hi) / 2;
        if (st->v[mid].s <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int k = lo - 1; k >= 0 && k >= lo - 4; k--)
        if (x >= st->v[k].s && x < st->v[k].e)
            return k;
    return -1;
}

void tl_steps_set(const tl_steps *st, tl_ivset *set)
{
    for (int k = 0; k < st->n; k++)
        tl_ivset_add(set, st->v[k].s, st->v[k].e);
    tl_ivset_normalize(set);
}

void tl_steps_window(const tl_steps *st, tl_window *w)
{
    memset(w, 0, sizeof *w);
    if (st->n == 0)
        return;
    w->nsteps = st->pseudo ? 0 : st->n;
    w->t0 = st->v[0].s;
    w->t1 = st->v[0].e;
    for (int k = 1; k < st->n; k++)
        if (st->v[k].e > w->t1)
            w->t1 = st->v[k].e;
    tl_ivset set = {0};
    tl_steps_set(st, &set);
    w->total = tl_ivset_length(&set);
    tl_ivset_free(&set);
}
