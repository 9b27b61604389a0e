/* test_model.c — the trace model: interning, ordering, nesting, correlation links, intervals. */
#include "analysis/analysis.h"
#include "analysis/steps.h"
#include "span_fixture.h"
#include "testlib.h"
#include "trace/model.h"
#include "views_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int find(const tl_trace *t, const char *name)
{
    for (size_t i = 0; i < t->nev; i++)
        if (!strcmp(tl_str(&t->strings, t->ev[i].name), name))
            return (int)i;
    return -1;
}

TEST(intern_returns_same_id_for_same_string)
{
    tl_strtab s;
    tl_strtab_init(&s);
    CHECK_EQ_INT(tl_intern(&s, "", 0), 0);
    uint32_t a = tl_intern(&s, "aten::mm", 8);
    uint32_t b = tl_intern(&s, "aten::add", 9);
    CHECK(a != b);
    CHECK_EQ_INT(tl_intern(&s, "aten::mm", 8), a);
    char buf[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(buf, sizeof buf, "name%d", i);
        tl_intern(&s, buf, (size_t)n);
    }
    CHECK_EQ_INT(tl_intern(&s, "name4321", 8), tl_intern(&s, "name4321", 8));
    CHECK_STR(tl_str(&s, a), "aten::mm");
    CHECK_EQ_INT(s.count, 5003);
    tl_strtab_free(&s);
}

/* Many names of one length that differ in a few digits (what a trace of a million distinct
 * operator names holds): each interned once, found again as itself through the table's growth,
 * and a name that differs from one of them only at its end is another string. */
TEST(many_names_alike_are_each_found_again)
{
    enum { N = 200000 };
    tl_strtab s;
    tl_strtab_init(&s);
    char buf[64];
    for (int i = 0; i < N; i++) {
        int n = snprintf(buf, sizeof buf, "aten::custom_op_%07d_forward", i);
        CHECK_EQ_INT(tl_intern(&s, buf, (size_t)n), i + 1);
    }
    size_t wrong = 0;
    for (int i = N - 1; i >= 0; i--) {
        int n = snprintf(buf, sizeof buf, "aten::custom_op_%07d_forward", i);
        wrong += tl_intern(&s, buf, (size_t)n) != (uint32_t)(i + 1);
        wrong += strcmp(tl_str(&s, (uint32_t)(i + 1)), buf) != 0;
    }
    CHECK_EQ_INT((long long)wrong, 0);
    CHECK_EQ_INT(s.count, N + 1);
    CHECK_EQ_INT(tl_intern(&s, "aten::custom_op_0000007_forwarD", 31), N + 1);
    CHECK_EQ_INT(s.count, N + 2);
    tl_strtab_free(&s);
}

/* A table emptied with tl_strtab_reset is an empty table again ("" alone, id 0) that holds the
 * same strings the same way when filled again (ids from 1, each found again, a string longer
 * than a block whole), in the blocks it kept: filled with what it held before, it makes no new
 * one. A new table ("" alone) holds no block of strings: a few kilobytes, not a megabyte. */
TEST(a_string_table_reset_is_filled_again_in_its_own_blocks)
{
    tl_strtab s;
    tl_strtab_init(&s);
    CHECK(tl_strtab_bytes(&s) < 64 << 10);
    CHECK_EQ_INT(s.nblocks, 0);
    enum { N = 30000, BIG = (3 << 20) / 2 };
    char *big = malloc(BIG + 1);
    CHECK(big != NULL);
    if (!big)
        return;
    memset(big, 'x', BIG);
    big[BIG] = 0;
    char buf[64], *kept[64];
    size_t blocks = 0;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            int n = snprintf(buf, sizeof buf, "round_independent_name_%06d", i);
            CHECK_EQ_INT(tl_intern(&s, buf, (size_t)n), i + (i > N / 2) + 1);
            if (i == N / 2)
                CHECK_EQ_INT(tl_intern(&s, big, BIG), N / 2 + 2);
        }
        CHECK_EQ_INT(s.count, N + 2);
        size_t wrong = 0;
        for (int i = 0; i < N; i++) {
            int n = snprintf(buf, sizeof buf, "round_independent_name_%06d", i);
            wrong += tl_intern(&s, buf, (size_t)n) != (uint32_t)(i + (i > N / 2) + 1);
            wrong += strcmp(tl_str(&s, (uint32_t)(i + (i > N / 2) + 1)), buf) != 0;
        }
        CHECK_EQ_INT((long long)wrong, 0);
        CHECK(strcmp(tl_str(&s, N / 2 + 2), big) == 0);
        if (round == 0) {
            blocks = s.nblocks < 64 ? s.nblocks : 64;
            memcpy(kept, s.blocks, blocks * sizeof *kept);
        }
        CHECK_EQ_INT(s.nblocks, blocks); /* the kept blocks took it all */
        for (size_t k = 0; k < blocks && k < s.nblocks; k++)
            CHECK(s.blocks[k] == kept[k]);
        tl_strtab_reset(&s);
        CHECK_EQ_INT(s.count, 1);
        CHECK_STR(tl_str(&s, 0), "");
        CHECK_EQ_INT(tl_intern(&s, "", 0), 0);
        CHECK_EQ_INT(tl_intern(&s, "round_independent_name_000007", 29), 1); /* not its old id */
        tl_strtab_reset(&s);
    }
    free(big);
    tl_strtab_free(&s);
}

TEST(tracks_are_found_again)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t a = tl_trace_track(&t, TL_TRACK_THREAD, 10, 11, -1);
    uint32_t b = tl_trace_track(&t, TL_TRACK_STREAM, 10, 7, 0);
    for (int i = 0; i < 300; i++)
        tl_trace_track(&t, TL_TRACK_THREAD, 10, 1000 + i, -1);
    CHECK(a != b);
    CHECK_EQ_INT(tl_trace_track(&t, TL_TRACK_THREAD, 10, 11, -1), a);
    CHECK_EQ_INT(tl_trace_track(&t, TL_TRACK_STREAM, 10, 7, 0), b);
    CHECK_EQ_INT(t.ntracks, 302);
    tl_trace_free(&t);
}

TEST(finish_sorts_and_nests)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t th2 = tl_trace_track(&t, TL_TRACK_THREAD, 1, 2, -1);
    /* added out of order on purpose */
    fx_span(&t, th, TL_CAT_OPERATOR, "child", 200, 100);
    fx_span(&t, th, TL_CAT_STEP, "step", 0, 1000);
    fx_span(&t, th, TL_CAT_OPERATOR, "grandchild", 220, 50);
    fx_span(&t, th, TL_CAT_USER, "same_start_outer", 500, 400);
    fx_span(&t, th, TL_CAT_USER, "same_start_inner", 500, 100);
    fx_span(&t, th, TL_CAT_USER, "partial", 850, 300); /* crosses the end of same_start_outer */
    fx_span(&t, th2, TL_CAT_USER, "other_thread", 250, 10);
    tl_event *m = fx_span(&t, th, TL_CAT_MEMORY, "[memory]", 230, 0);
    m->flags = TL_EV_INSTANT;
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    for (size_t i = 1; i < t.nev; i++)
        CHECK(t.ev[i - 1].track < t.ev[i].track ||
              (t.ev[i - 1].track == t.ev[i].track && t.ev[i - 1].ts <= t.ev[i].ts));
    int step = find(&t, "step"), child = find(&t, "child"), gc = find(&t, "grandchild");
    int so = find(&t, "same_start_outer"), si = find(&t, "same_start_inner");
    int partial = find(&t, "partial"), other = find(&t, "other_thread"), mem = find(&t, "[memory]");
    CHECK_EQ_INT(t.ev[step].parent, TL_NONE);
    CHECK_EQ_INT(t.ev[child].parent, step);
    CHECK_EQ_INT(t.ev[gc].parent, child);
    CHECK_EQ_INT(t.ev[gc].depth, 2);
    CHECK_EQ_INT(t.ev[so].parent, step);
    CHECK_EQ_INT(t.ev[si].parent, so);
    CHECK_EQ_INT(t.ev[partial].parent, TL_NONE); /* sticks out of the step too */
    CHECK_EQ_INT(t.ev[other].parent, TL_NONE);
    CHECK_EQ_INT(t.ev[mem].parent, gc);

    int64_t *self = calloc(t.nev, sizeof *self);
    tl_self_times(&t, self);
    CHECK_EQ_INT(self[step], 1000 - 100 - 400);
    CHECK_EQ_INT(self[child], 50);
    CHECK_EQ_INT(self[so], 300);
    free(self);
    tl_trace_free(&t);
}

/* The events of some categories numbered in event order across words of 64 (130 events, every
 * third a range), and their self times the same as tl_self_times gives them. */
TEST(evrank_numbers_the_chosen_events_and_their_self_times)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    static const int64_t at[3] = {0, 10, 50}, dur[3] = {90, 30, 20};
    for (int i = 0; i < 130; i++) /* by threes: a range holding two operators side by side */
        fx_span(&t, th, i % 3 == 0 ? TL_CAT_USER : TL_CAT_OPERATOR, "x", (i / 3) * 100 + at[i % 3],
                dur[i % 3]);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_evrank r;
    CHECK_EQ_INT(tl_evrank_build(&t, 1u << TL_CAT_USER, &r), 0);
    CHECK_EQ_INT(r.n, 44);
    int64_t *all = calloc(t.nev, sizeof *all), *some = calloc(r.n, sizeof *some);
    tl_self_times(&t, all);
    tl_self_times_of(&t, &r, some);
    size_t k = 0;
    for (size_t i = 0; i < t.nev; i++) {
        if (t.ev[i].cat != TL_CAT_USER) {
            CHECK_EQ_INT(tl_evrank_of(&r, i), -1);
            continue;
        }
        CHECK_EQ_INT(tl_evrank_of(&r, i), (long long)k);
        CHECK_EQ_INT(some[k], all[i]);
        k++;
    }
    CHECK_EQ_INT(k, r.n);
    CHECK_EQ_INT(some[0], 90 - 30 - 20); /* the first range less its two operators */
    tl_evrank_free(&r);
    CHECK_EQ_INT(tl_evrank_build(&t, 0, &r), 0); /* none chosen */
    CHECK_EQ_INT(r.n, 0);
    CHECK_EQ_INT(tl_evrank_of(&r, t.nev - 1), -1);
    tl_evrank_free(&r);
    free(all);
    free(some);
    tl_trace_free(&t);
}

TEST(finish_links_runtime_calls_to_device_work)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
    tl_event *k1 = fx_span(&t, s7, TL_CAT_KERNEL, "k1", 500, 100);
    k1->corr = 42;
    tl_event *k2 = fx_span(&t, s7, TL_CAT_KERNEL, "k2", 700, 100);
    k2->corr = 42; /* graph launch: two kernels, one call */
    tl_event *k3 = fx_span(&t, s7, TL_CAT_KERNEL, "k3", 900, 10);
    k3->corr = 99; /* no call for it */
    fx_span(&t, th, TL_CAT_OPERATOR, "aten::mm", 0, 300);
    tl_event *r = fx_span(&t, th, TL_CAT_RUNTIME, "cudaGraphLaunch", 100, 50);
    r->corr = 42;
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    int ik1 = find(&t, "k1"), ik2 = find(&t, "k2"), ik3 = find(&t, "k3");
    int ir = find(&t, "cudaGraphLaunch"), iop = find(&t, "aten::mm");
    CHECK_EQ_INT(t.ev[ik1].link, ir);
    CHECK_EQ_INT(t.ev[ik2].link, ir);
    CHECK_EQ_INT(t.ev[ik3].link, TL_NONE);
    CHECK_EQ_INT(t.ev[ir].link, ik1);
    CHECK_EQ_INT(t.ev[ir].parent, iop);
    CHECK_EQ_INT(t.ev[ik1].parent, TL_NONE); /* device work never nests on host tracks */
    tl_trace_free(&t);
}

/* Equal spans: a step is the outer one, in whichever order the file lists them (the streaming
 * export writes an inner range first, at its end; Kineto writes in begin order). */
TEST(a_step_is_the_outermost_of_equal_spans)
{
    for (int order = 0; order < 2; order++) {
        tl_trace t;
        tl_trace_init(&t);
        uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
        if (order)
            fx_span(&t, th, TL_CAT_STEP, "ProfilerStep#0", 0, 1000);
        fx_span(&t, th, TL_CAT_FORWARD, "fwd", 0, 1000);
        if (!order)
            fx_span(&t, th, TL_CAT_STEP, "ProfilerStep#0", 0, 1000);
        fx_span(&t, th, TL_CAT_OPERATOR, "op", 100, 10);
        CHECK_EQ_INT(tl_trace_finish(&t), 0);
        /* each one's parent is the one before it */
        static const char *const chain[] = {"ProfilerStep#0", "fwd", "op"};
        for (int k = 0; k < 3; k++)
            CHECK_EQ_INT(t.ev[find(&t, chain[k])].parent, k ? find(&t, chain[k - 1]) : TL_NONE);
        tl_trace_free(&t);
    }
}

/* Two runtime calls with one correlation id (merged processes, a hand-made file): the one that
 * started last owns the device work, whatever order the threads' tracks came in. */
TEST(a_shared_correlation_id_links_the_call_started_last)
{
    for (int order = 0; order < 2; order++) {
        tl_trace t;
        tl_trace_init(&t);
        uint32_t t100, t200;
        fx_two_threads(&t, order, &t100, &t200);
        uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
        fx_span(&t, t100, TL_CAT_RUNTIME, "early", 260, 10)->corr = 4;
        fx_span(&t, t200, TL_CAT_RUNTIME, "late", 280, 10)->corr = 4;
        fx_span(&t, s7, TL_CAT_KERNEL, "k4", 900, 100)->corr = 4;
        CHECK_EQ_INT(tl_trace_finish(&t), 0);
        int k = find(&t, "k4"), late = find(&t, "late"), early = find(&t, "early");
        CHECK_EQ_INT(t.ev[k].link, late);
        CHECK_EQ_INT(t.ev[late].link, k);
        CHECK_EQ_INT(t.ev[early].link, TL_NONE);
        tl_trace_free(&t);
    }
}

/* A copy or memset without a name gets PyTorch's, as the export writes it. */
TEST(unnamed_copies_and_memsets_get_pytorchs_names)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
    tl_event *c = fx_span(&t, s7, TL_CAT_MEMCPY, "", 0, 10);
    c->copy = TL_COPY_HTOD;
    c->flags = TL_EV_PAGEABLE;
    fx_span(&t, s7, TL_CAT_MEMCPY, "", 20, 10)->copy = TL_COPY_DTOH;
    fx_span(&t, s7, TL_CAT_MEMSET, "", 40, 10);
    fx_span(&t, s7, TL_CAT_MEMCPY, "my copy", 60, 10)->copy = TL_COPY_DTOD;
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    CHECK_STR(tl_str(&t.strings, t.ev[0].name), "Memcpy HtoD (Pageable -> Device)");
    CHECK_STR(tl_str(&t.strings, t.ev[1].name), "Memcpy DtoH (Device -> Pinned)");
    CHECK_STR(tl_str(&t.strings, t.ev[2].name), "Memset (Device)");
    CHECK_STR(tl_str(&t.strings, t.ev[3].name), "my copy");
    tl_trace_free(&t);
}

TEST(many_events_sort_like_a_reference_order)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t tr[3];
    for (int i = 0; i < 3; i++)
        tr[i] = tl_trace_track(&t, TL_TRACK_THREAD, 1, i, -1);
    srand(7);
    for (int i = 0; i < 20000; i++)
        fx_span(&t, tr[rand() % 3], TL_CAT_USER, "x", rand() % 100000, rand() % 50);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    int bad = 0;
    for (size_t i = 1; i < t.nev; i++) {
        const tl_event *a = &t.ev[i - 1], *b = &t.ev[i];
        if (a->track > b->track || (a->track == b->track && a->ts > b->ts) ||
            (a->track == b->track && a->ts == b->ts && a->dur < b->dur))
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
    tl_trace_free(&t);
}

/* The reference order: tl_sorts_before on the fields as added, by qsort (a total order, since
 * the index breaks every tie). */
typedef struct ref_ev {
    uint32_t track;
    int64_t ts, dur;
    int step;
    uint64_t idx;
} ref_ev;

static int ref_cmp(const void *a, const void *b)
{
    const ref_ev *x = a, *y = b;
    if (tl_sorts_before(x->track, x->ts, x->dur, x->step, x->idx, y->track, y->ts, y->dur, y->step,
                        y->idx))
        return -1;
    return tl_sorts_before(y->track, y->ts, y->dur, y->step, y->idx, x->track, x->ts, x->dur,
                           x->step, x->idx);
}

/* Finish t, whose events carry the order they were added in as their value, and check that
 * they come in the reference order of ref[n] (sorted here). */
static void finish_in_reference_order(tl_trace *t, ref_ev *ref, size_t n)
{
    qsort(ref, n, sizeof *ref, ref_cmp);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
    size_t bad = 0;
    for (size_t i = 0; i < n && i < t->nev; i++)
        bad += t->ev[i].value != (int64_t)ref[i].idx;
    CHECK_EQ_INT(t->nev, n);
    CHECK_EQ_INT(bad, 0);
}

/* n events on 4 tracks, each track's events partly in order (runs, as readers add them) and
 * partly shuffled, with few distinct starts and lengths (many ties) and some steps; finish must
 * put them in exactly the reference order, ties included. */
static void check_order_against_reference(size_t n, unsigned seed)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t tr[4];
    for (int i = 0; i < 4; i++)
        tr[i] = tl_trace_track(&t, TL_TRACK_THREAD, 1, i, -1);
    ref_ev *ref = malloc(n * sizeof *ref);
    CHECK(ref != NULL);
    if (!ref)
        return;
    srand(seed);
    int64_t clock[4] = {0};
    for (size_t i = 0; i < n; i++) {
        int k = rand() % 4;
        int64_t ts, dur = rand() % 4;
        if (k < 2) { /* in order on tracks 0 and 1, with repeated starts */
            clock[k] += rand() % 2;
            ts = clock[k];
        } else {
            ts = rand() % 64;
        }
        int step = rand() % 16 == 0;
        tl_event *e = fx_span(&t, tr[k], step ? TL_CAT_STEP : TL_CAT_USER, "x", ts, dur);
        e->value = (int64_t)i; /* where it was added, to be found again after the sort */
        ref[i] = (ref_ev){tr[k], ts, dur, step, i};
    }
    finish_in_reference_order(&t, ref, n);
    free(ref);
    tl_trace_free(&t);
}

/* tl_permute_events in segments (the big arrays' way: their moves in 1 to 16 threads) and one
 * cycle after another: position i receives the event that was at perm[i], whatever the cycles
 * look like. */
static void check_permutation(const uint32_t *perm, size_t n)
{
    static const int threads[] = {0, 1, 2, 3, 16}; /* 0: one cycle after another */
    tl_event *a = malloc((n ? n : 1) * sizeof *a);
    uint32_t *pa = malloc((n ? n : 1) * sizeof *pa);
    CHECK(a && pa);
    for (size_t k = 0; a && pa && k < sizeof threads / sizeof *threads; k++) {
        for (size_t i = 0; i < n; i++) {
            memset(&a[i], 0, sizeof a[i]);
            a[i].ts = (int64_t)i;
            a[i].value = -(int64_t)i;
        }
        memcpy(pa, perm, n * sizeof *pa);
        CHECK_EQ_INT(tl_permute_events(a, pa, n, threads[k] > 0, threads[k]), 0);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += a[i].ts != (int64_t)perm[i] || a[i].value != -(int64_t)perm[i] || pa[i] != i;
        CHECK_EQ_INT(bad, 0);
    }
    free(a);
    free(pa);
}

/* tl_trace_finish on a big trace (over 65 536 events to sort: the tracks are sorted, the events
 * moved and nested in threads) gives the same events in the same order with the same parents
 * for any thread count, and that order is the model's: by track, then start, the longer first,
 * then the order added. */
static void big_unsorted_trace(tl_trace *t, int threads)
{
    tl_trace_init(t);
    t->read_threads = threads;
    uint32_t tr[9];
    for (int k = 0; k < 8; k++)
        tr[k] = tl_trace_track(t, TL_TRACK_THREAD, 1, 100 + k, -1);
    tr[8] = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
    uint64_t x = 88172645463325252ull; /* xorshift: the same trace every time */
    for (int i = 0; i < 400000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* tracks of every size (track k gets about 2^-k of the events), times mostly rising with
         * some far back, equal starts and equal spans */
        int k = 0;
        while (k < 8 && (x >> (20 + k) & 1))
            k++;
        int64_t ts = (x % 16 == 0) ? (int64_t)(x >> 40) % 1000 : i / 3;
        tl_event *e = tl_trace_add(t);
        e->track = tr[k];
        e->ts = ts;
        e->dur = (int64_t)(x >> 50) % 4;
        e->value = i; /* the order added */
        e->cat = k == 8 ? TL_CAT_KERNEL : TL_CAT_OPERATOR;
    }
}

TEST(finish_in_threads_is_the_same_order)
{
    tl_trace a;
    big_unsorted_trace(&a, 1);
    CHECK_EQ_INT(tl_trace_finish(&a), 0);
    size_t bad = 0;
    for (size_t i = 1; i < a.nev; i++) {
        const tl_event *p = &a.ev[i - 1], *e = &a.ev[i];
        bad +=
            p->track > e->track ||
            (p->track == e->track &&
             (p->ts > e->ts ||
              (p->ts == e->ts && (p->dur < e->dur || (p->dur == e->dur && p->value > e->value)))));
    }
    CHECK_EQ_INT(bad, 0);
    size_t nested = 0; /* the nesting was computed too (in ranges of tracks, by threads) */
    for (size_t i = 0; i < a.nev; i++)
        nested += a.ev[i].parent != TL_NONE;
    CHECK(nested > 1000);
    static const int threads[] = {2, 3, 16};
    for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
        tl_trace b;
        big_unsorted_trace(&b, threads[k]);
        CHECK_EQ_INT(tl_trace_finish(&b), 0);
        CHECK_EQ_INT(b.nev, a.nev);
        CHECK(b.nev == a.nev && memcmp(a.ev, b.ev, a.nev * sizeof *a.ev) == 0);
        tl_trace_free(&b);
    }
    tl_trace_free(&a);
}

/* Two host threads whose events come in two runs each (the second run's starts fall between
 * the first's, some equal), the break where the parts of the finish's count meet or inside one:
 * big enough that each track's two runs are merged by threads (the merge cut at positions found
 * by binary search), in the model's order and the same for any thread count. */
static void two_run_trace(tl_trace *t, int threads, size_t brk)
{
    tl_trace_init(t);
    t->read_threads = threads;
    uint32_t a = tl_trace_track(t, TL_TRACK_THREAD, 1, 100, -1);
    uint32_t b = tl_trace_track(t, TL_TRACK_THREAD, 1, 101, -1);
    const size_t n = 600000;
    for (size_t i = 0; i < n; i++) {
        tl_event *e = tl_trace_add(t);
        int second = i >= brk;
        size_t k = second ? i - brk : i;
        e->track = i % 2 ? b : a;
        e->ts = (int64_t)k * 2 + (second && k % 5 ? 1 : 0); /* every fifth: equal starts */
        e->dur = (int64_t)(i % 3);
        e->value = (int64_t)i;
        e->cat = TL_CAT_OPERATOR;
    }
}

TEST(two_run_tracks_merged_in_threads_are_the_same)
{
    static const size_t brks[] = {300000, 200001};
    for (size_t v = 0; v < sizeof brks / sizeof *brks; v++) {
        tl_trace r;
        two_run_trace(&r, 1, brks[v]);
        CHECK_EQ_INT(tl_trace_finish(&r), 0);
        size_t bad = 0;
        for (size_t i = 1; i < r.nev; i++) {
            const tl_event *p = &r.ev[i - 1], *e = &r.ev[i];
            bad +=
                p->track > e->track ||
                (p->track == e->track &&
                 (p->ts > e->ts || (p->ts == e->ts && (p->dur < e->dur || (p->dur == e->dur &&
                                                                           p->value > e->value)))));
        }
        CHECK_EQ_INT(bad, 0);
        static const int threads[] = {2, 7, 16};
        for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
            tl_trace b;
            two_run_trace(&b, threads[k], brks[v]);
            CHECK_EQ_INT(tl_trace_finish(&b), 0);
            CHECK(b.nev == r.nev && memcmp(r.ev, b.ev, r.nev * sizeof *r.ev) == 0);
            tl_trace_free(&b);
        }
        tl_trace_free(&r);
    }
}

/* Runtime and driver calls on 8 threads and kernels on 2 streams, in time order, with
 * correlation ids that repeat (a driver call inside its runtime call, two runtime calls of one
 * id with equal or different starts, several kernels of one launch, kernels of no call), dense
 * or spread out (ids times 2^40: the hash table); and memory events in a few runs out of order.
 * Enough of both that tl_trace_finish links and sorts them in threads. */
static void big_linked_trace(tl_trace *t, int threads, int sparse)
{
    tl_trace_init(t);
    t->read_threads = threads;
    uint32_t th[8], st[2];
    for (int k = 0; k < 8; k++)
        th[k] = tl_trace_track(t, TL_TRACK_THREAD, 1, 100 + k, -1);
    for (int k = 0; k < 2; k++)
        st[k] = tl_trace_track(t, TL_TRACK_STREAM, 1, 7 + k, 0);
    uint64_t x = 2463534242ull;
    int64_t mul = sparse ? (int64_t)1 << 40 : 1, last = 1;
    for (int i = 0; i < 300000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        tl_event *e = tl_trace_add(t);
        /* an odd event can take its even neighbour's id: two calls, one start */
        int64_t id = i % 2 && (x >> 56 & 1) ? last : 1 + (int64_t)(x >> 8) % 40000;
        last = id;
        e->ts = i / 2;
        e->dur = 1 + (int64_t)(x >> 30) % 3;
        e->corr = id * mul;
        e->value = i;
        switch (x >> 40 & 7) {
        case 0:
        case 1:
        case 2:
            e->cat = TL_CAT_RUNTIME;
            e->track = th[x >> 50 & 7];
            break;
        case 3:
            e->cat = TL_CAT_DRIVER;
            e->track = th[x >> 50 & 7];
            break;
        default:
            e->cat = TL_CAT_KERNEL;
            e->track = st[x >> 50 & 1];
            e->corr = (id + (x >> 52 & 1) * 40000) * mul; /* half of no call */
        }
    }
    for (int i = 0; i < 120000; i++) { /* ts rising in three interleaved runs */
        tl_memev *m = tl_trace_add_mem(t);
        m->ts = (i % 3) * 1000 + i / 3;
        m->bytes = i % 2 ? 512 : -512;
        m->addr = 4096 + (uint64_t)(i / 2) * 512;
        m->track = th[i % 8];
    }
}

/* The call a device event must link to, found the slow way: of the calls with its id, a runtime
 * call over a driver call, then the latest start, then the first in event order. */
static int32_t expected_call(const tl_trace *t, const tl_event *dev)
{
    int32_t best = TL_NONE;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->corr != dev->corr || (e->cat != TL_CAT_RUNTIME && e->cat != TL_CAT_DRIVER))
            continue;
        const tl_event *b = best == TL_NONE ? NULL : &t->ev[best];
        if (!b || (b->cat != e->cat ? e->cat == TL_CAT_RUNTIME : e->ts > b->ts))
            best = (int32_t)i;
    }
    return best;
}

TEST(links_and_memory_in_threads_are_the_same)
{
    for (int sparse = 0; sparse <= 1; sparse++) {
        tl_trace a;
        big_linked_trace(&a, 1, sparse);
        CHECK_EQ_INT(tl_trace_finish(&a), 0);
        /* against the slow way, for some device events; every call links back to its first */
        size_t checked = 0, linked = 0, bad = 0;
        for (size_t i = 0; i < a.nev; i++) {
            const tl_event *e = &a.ev[i];
            if (e->cat != TL_CAT_KERNEL)
                continue;
            linked += e->link != TL_NONE;
            if (e->link != TL_NONE) {
                const tl_event *call = &a.ev[e->link];
                bad += call->link == TL_NONE || call->link > (int32_t)i;
            }
            if (i % 997 == 0) {
                bad += e->link != expected_call(&a, e);
                checked++;
            }
        }
        CHECK(checked > 50);
        CHECK(linked > 50000);
        CHECK_EQ_INT(bad, 0);
        size_t unsorted = 0;
        for (size_t i = 1; i < a.nmem; i++)
            unsorted += a.mem[i].ts < a.mem[i - 1].ts ||
                        (a.mem[i].ts == a.mem[i - 1].ts && a.mem[i].addr < a.mem[i - 1].addr);
        CHECK_EQ_INT(unsorted, 0);
        static const int threads[] = {2, 7, 16};
        for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
            tl_trace b;
            big_linked_trace(&b, threads[k], sparse);
            CHECK_EQ_INT(tl_trace_finish(&b), 0);
            CHECK(b.nev == a.nev && memcmp(a.ev, b.ev, a.nev * sizeof *a.ev) == 0);
            CHECK(b.nmem == a.nmem && memcmp(a.mem, b.mem, a.nmem * sizeof *a.mem) == 0);
            tl_trace_free(&b);
        }
        tl_trace_free(&a);
    }
}

/* tl_trace_finish lists what every view asks for: the span of the events (counters left out)
 * and the step spans in order; the same as reading the events, which is what a changed trace
 * falls back to. */
TEST(finish_knows_the_span_and_the_steps)
{
    for (int threads = 1; threads <= 3; threads += 2) {
        tl_trace t;
        big_unsorted_trace(&t, threads);
        uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 100, -1);
        for (int k = 0; k < 7; k++) { /* steps, one of no duration (not a step), out of order */
            tl_event *e = tl_trace_add(&t);
            e->track = th;
            e->ts = 1000 * (7 - k);
            e->dur = k == 3 ? 0 : 900;
            e->cat = TL_CAT_STEP;
            e->value = 7 - k;
        }
        tl_event *c = tl_trace_add(&t); /* a counter far outside: not in the span */
        c->track = th;
        c->ts = INT64_C(1) << 50;
        c->cat = TL_CAT_COUNTER;
        CHECK_EQ_INT(tl_trace_finish(&t), 0);
        int64_t a = INT64_MAX, b = INT64_MIN;
        size_t nsteps = 0, n = 0, bad = 0;
        for (size_t i = 0; i < t.nev; i++) {
            const tl_event *e = &t.ev[i];
            if (e->cat != TL_CAT_COUNTER) {
                a = e->ts < a ? e->ts : a;
                b = e->ts + e->dur > b ? e->ts + e->dur : b;
            }
            nsteps += e->cat == TL_CAT_STEP;
        }
        const uint32_t *at = tl_trace_step_spans(&t, &n);
        CHECK(at != NULL);
        CHECK_EQ_INT(n, nsteps);
        CHECK_EQ_INT(n, 7);
        for (size_t k = 0; at && k < n; k++)
            bad += t.ev[at[k]].cat != TL_CAT_STEP || (k && at[k] <= at[k - 1]);
        CHECK_EQ_INT(bad, 0);
        int64_t t0, t1;
        tl_trace_span(&t, &t0, &t1);
        CHECK_EQ_INT(t0, a);
        CHECK_EQ_INT(t1, b);
        tl_steps known, read;
        CHECK_EQ_INT(tl_steps_load(&t, &known), 0);
        tl_trace_memo_drop(&t); /* as any change to the trace does */
        CHECK(tl_trace_step_spans(&t, &n) == NULL);
        tl_trace_span(&t, &t0, &t1);
        CHECK_EQ_INT(t0, a);
        CHECK_EQ_INT(t1, b);
        CHECK_EQ_INT(tl_steps_load(&t, &read), 0);
        CHECK_EQ_INT(known.n, 6);
        CHECK_EQ_INT(read.n, known.n);
        CHECK_EQ_INT(read.left_out, known.left_out);
        CHECK_EQ_INT(read.total, known.total);
        CHECK(known.n == read.n && memcmp(known.v, read.v, (size_t)known.n * sizeof *known.v) == 0);
        tl_steps_free(&known);
        tl_steps_free(&read);
        tl_trace_free(&t);
    }
}

/* tl_run_each runs every item once, the first in the caller, the others in threads that take
 * no signals (they may run inside a profiled program, whose handlers expect its own threads) */
typedef struct each_item {
    pthread_t by;
    int runs, blocked;
} each_item;

static void *run_item(void *arg)
{
    each_item *it = arg;
    sigset_t cur;
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    it->by = pthread_self();
    it->runs++;
    it->blocked = sigismember(&cur, SIGUSR1) && sigismember(&cur, SIGINT);
    return NULL;
}

/* A reader reserves events by the file's size; what the file did not fill goes back at the
 * finish (on huge pages the last one held up to 2 MB past the last event). The room is touched
 * here, as a huge page would be: after the finish none of its whole pages is resident, and
 * the events are intact. */
TEST(finish_gives_back_the_room_no_event_took)
{
    tl_trace t;
    tl_trace_init(&t);
    CHECK_EQ_INT(tl_trace_reserve(&t, 200000), 0); /* 12.8 MB */
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    for (int i = 0; i < 1000; i++) {
        tl_event *e = tl_trace_add(&t);
        e->track = th;
        e->ts = 10 * i;
        e->dur = 5;
        e->cat = TL_CAT_USER;
    }
    size_t used = t.nev * sizeof *t.ev, cap = t.cap_ev * sizeof *t.ev;
    memset((char *)t.ev + used, 1, cap - used);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)t.ev + used + (uintptr_t)ps - 1) & ~((uintptr_t)ps - 1);
    uintptr_t b = ((uintptr_t)t.ev + cap) & ~((uintptr_t)ps - 1);
    size_t pages = (b - a) / (size_t)ps, resident = 0;
    unsigned char *vec = malloc(pages);
    CHECK(vec && pages > 1000);
    if (vec && mincore((void *)a, b - a, vec) == 0)
        for (size_t i = 0; i < pages; i++)
            resident += vec[i] & 1;
    CHECK_EQ_INT((long long)resident, 0);
    free(vec);
    CHECK_EQ_INT((long long)t.nev, 1000);
    for (size_t i = 0; i < t.nev; i++)
        CHECK_EQ_INT(t.ev[i].ts, 10 * (int64_t)i);
    tl_trace_free(&t);
}

TEST(run_each_runs_every_item_once)
{
    each_item items[5];
    memset(items, 0, sizeof items);
    tl_run_each(run_item, items, sizeof *items, 5);
    for (int k = 0; k < 5; k++) {
        CHECK_EQ_INT(items[k].runs, 1);
        CHECK(!!pthread_equal(items[k].by, pthread_self()) == (k == 0));
        CHECK_EQ_INT(items[k].blocked, k != 0);
    }
    sigset_t cur; /* the caller's mask is as it was */
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    CHECK(!sigismember(&cur, SIGUSR1));
    tl_run_each(run_item, items, sizeof *items, 0); /* nothing */
    CHECK_EQ_INT(items[0].runs, 1);
}

/* tl_share: items taken in turn, each once, by at most `workers` threads, the caller among them.
 * Item 0 is slow: the thread that took it (first, as items go in order) takes no other, and
 * the rest are done meanwhile by the others, which a thread an item fixed in advance would not
 * do (its first thread would have items 0, 2, 4...). */
typedef struct share_item {
    pthread_t by;
    int runs, slow;
} share_item;

static void *share_item_run(void *arg)
{
    share_item *it = arg;
    it->by = pthread_self();
    it->runs++;
    if (it->slow)
        usleep(100 * 1000);
    return NULL;
}

TEST(shared_items_are_taken_in_turn)
{
    tl_pool *pool = tl_pool_new();
    CHECK(pool != NULL);
    for (int round = 0; round < 4; round++) {
        tl_pool *p = round < 3 ? pool : NULL; /* the last round: threads of their own */
        int workers = round == 0 ? 1 : 3;
        share_item items[16];
        memset(items, 0, sizeof items);
        items[0].slow = 1;
        tl_share sh;
        tl_share_start(&sh, p, share_item_run, items, sizeof *items, 16, workers);
        tl_share_wait(&sh);
        pthread_t seen[16];
        int nseen = 0;
        for (int k = 0; k < 16; k++) {
            CHECK_EQ_INT(items[k].runs, 1);
            int j = 0;
            while (j < nseen && !pthread_equal(seen[j], items[k].by))
                j++;
            if (j == nseen)
                seen[nseen++] = items[k].by;
            if (workers > 1 && k > 0) /* not the slow item's thread */
                CHECK(!pthread_equal(items[k].by, items[0].by));
        }
        CHECK(nseen <= workers);
        if (workers == 1) /* the caller alone */
            CHECK(nseen == 1 && pthread_equal(seen[0], pthread_self()));
    }
    share_item none[1] = {{0}};
    tl_share sh;
    tl_share_start(&sh, pool, share_item_run, none, sizeof *none, 0, 3); /* nothing */
    tl_share_wait(&sh);
    CHECK_EQ_INT(none[0].runs, 0);
    tl_pool_free(pool);
}

/* The pages that lie whole inside [p, p + n): their count, and how many are resident */
static size_t whole_pages(const char *p, size_t n, uintptr_t *a, uintptr_t *b)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    *a = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    *b = ((uintptr_t)p + n) & ~(uintptr_t)(page - 1);
    return *b > *a ? (*b - *a) / page : 0;
}

static size_t resident_pages(const char *p, size_t n)
{
    uintptr_t a, b;
    size_t np = whole_pages(p, n, &a, &b), in = 0;
    if (!np)
        return 0;
    unsigned char *v = malloc(np);
    if (v && mincore((void *)a, b - a, v) == 0)
        for (size_t i = 0; i < np; i++)
            in += v[i] & 1;
    free(v);
    return in;
}

/* The thread that makes a big array's pages ahead of its writer: it makes them (up to its lead
 * past what the writer reached, not further), never changes what the writer wrote, and stops. */
TEST(prefault_makes_pages_ahead_of_the_writer)
{
    const size_t len = (size_t)64 << 20, lead = (size_t)16 << 20;
    char *a = tl_big_alloc(len);
    CHECK(a != NULL);
    if (!a)
        return;
    tl_prefault pf;
    tl_prefault_start(&pf, a, len, lead, 2);
#ifdef MADV_POPULATE_WRITE
    CHECK(pf.running);
#endif
    /* the writer has written nothing: the thread makes the first 16 MB (and 2 MB more at most)
     * and waits; give it up to 10 s on a loaded machine */
    uintptr_t lo, hi;
    size_t want = whole_pages(a, lead, &lo, &hi);
    for (int i = 0; i < 1000 && pf.running && resident_pages(a, lead) < want; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    if (pf.running) {
        CHECK_EQ_INT(resident_pages(a, lead), want);
        /* none past the lead and one step (a huge page may bring its 2 MB whole) */
        size_t past = lead + ((size_t)4 << 20);
        CHECK_EQ_INT(resident_pages(a + past, len - past), 0);
    }
    /* the writer fills the array front to back, saying how far it got now and then */
    for (size_t off = 0; off < len; off += 4096) {
        memset(a + off, (int)(off / 4096 % 251) + 1, 4096);
        if ((off & ((1u << 20) - 1)) == 0)
            tl_prefault_reached(&pf, off);
    }
    tl_prefault_stop(&pf);
    CHECK(!pf.running);
    int same = 1;
    for (size_t off = 0; off < len && same; off += 4096)
        for (size_t j = 0; j < 4096; j += 512)
            same &= a[off + j] == (char)((int)(off / 4096 % 251) + 1);
    CHECK(same);
    free(a);
    /* one core, or too small to matter: no thread */
    char b[64];
    tl_prefault_start(&pf, b, sizeof b, 16, 2);
    CHECK(!pf.running);
    tl_prefault_stop(&pf);
    char *c = tl_big_alloc(len);
    tl_prefault_start(&pf, c, len, lead, 1);
    CHECK(!pf.running);
    tl_prefault_stop(&pf);
    free(c);
}

TEST(permutations_of_every_shape)
{
    static const size_t sizes[] = {0, 1, 2, 3, 17, 1000, 70001, 300000};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        uint32_t *p = malloc((n ? n : 1) * sizeof *p);
        CHECK(p != NULL);
        if (!p)
            return;
        srand((unsigned)n + 1);
        for (int shape = 0; shape < 6; shape++) {
            for (size_t i = 0; i < n; i++)
                p[i] = (uint32_t)i;
            switch (shape) {
            case 0: /* identity */
                break;
            case 1: /* uniform: a few long cycles */
                for (size_t i = n; i > 1; i--) {
                    size_t j = (size_t)rand() % i;
                    uint32_t x = p[i - 1];
                    p[i - 1] = p[j];
                    p[j] = x;
                }
                break;
            case 2: /* one cycle through everything */
                for (size_t i = 0; i < n; i++)
                    p[i] = (uint32_t)((i + 1) % n);
                break;
            case 3: /* reversed: 2-cycles */
                for (size_t i = 0; i < n; i++)
                    p[i] = (uint32_t)(n - 1 - i);
                break;
            case 4: /* mostly in place, a few swapped far apart */
                for (size_t k = 0; k < n / 50 + 1 && n > 1; k++) {
                    size_t i = (size_t)rand() % n, j = (size_t)rand() % n;
                    uint32_t x = p[i];
                    p[i] = p[j];
                    p[j] = x;
                }
                break;
            case 5: /* a stable bucket sort by 7 interleaved "tracks", as finish builds */
                for (size_t i = 0, at = 0; i < 7; i++)
                    for (size_t k = i; k < n; k += 7)
                        p[at++] = (uint32_t)k;
                break;
            }
            check_permutation(p, n);
            if (test_failures) {
                fprintf(stderr, "  n %zu, shape %d\n", n, shape);
                free(p);
                return;
            }
        }
        free(p);
    }
}

TEST(finish_order_is_the_reference_order)
{
    /* 20 000 and 600 000 events (38 MB, more than the cache holds), permuted in place */
    check_order_against_reference(20000, 11);
    check_order_against_reference(600000, 12);
}

/* Events added with each track's together, tracks ascending (as the .tally reader lays them out):
 * the finish merges each track's runs in place. Track 0: its own events in order, then a tenth as
 * many interleaved with them (a thread's ranges, then the runtime calls of it); track 1: in order
 * but every 4000th event a little late; ties everywhere (equal starts and lengths, steps); with
 * big, a track 2 of two interleaved halves of 200 000 events each, longer than a thread's buffer
 * (the general way's index array, 4 MB here, shared by the threads): at one thread merged in four
 * pieces; at 4 (3 tracks: 3 threads, 21 845 events a buffer) it would take more than eight, and
 * the finish goes the general way after what it merged. The order must be the reference order. */
static void check_grouped(int big, int threads)
{
    tl_trace t;
    tl_trace_init(&t);
    t.read_threads = threads;
    uint32_t tr[3];
    for (int k = 0; k < 3; k++)
        tr[k] = tl_trace_track(&t, TL_TRACK_THREAD, 1, 10 + k, -1);
    size_t n = big ? 760000 : 360000;
    ref_ev *ref = malloc(n * sizeof *ref);
    CHECK(ref != NULL);
    if (!ref)
        return;
    size_t i = 0;
#define ADD(K, TS, DUR, STEP)                                                                      \
    do {                                                                                           \
        tl_event *e_ = fx_span(&t, tr[K], (STEP) ? TL_CAT_STEP : TL_CAT_USER, "x", (TS), (DUR));   \
        e_->value = (int64_t)i;                                                                    \
        ref[i] = (ref_ev){tr[K], (TS), (DUR), (STEP), i};                                          \
        i++;                                                                                       \
    } while (0)
    for (size_t j = 0; j < 200000; j++) /* track 0: ranges in pairs starting together */
        ADD(0, (int64_t)(j / 2), j % 2 ? 1 : 3, 0);
    for (size_t j = 0; j < 20000; j++) /* then the calls, among them, some tied with them */
        ADD(0, (int64_t)(j * 5), (int64_t)(j % 4), 0);
    for (size_t j = 0; j < 140000; j++) { /* track 1, a step first among equals now and then */
        int64_t ts = (int64_t)(j / 2);
        if (j % 4000 == 3999)
            ts -= 3; /* late */
        ADD(1, ts, j % 2 ? 1 : 2, j % 50 == 0);
    }
    if (big) {
        for (size_t j = 0; j < 200000; j++)
            ADD(2, (int64_t)(2 * j), 1, 0);
        for (size_t j = 0; j < 200000; j++)
            ADD(2, (int64_t)(2 * j + 1), 1, 0);
    }
#undef ADD
    CHECK_EQ_INT(i, n);
    finish_in_reference_order(&t, ref, n);
    if (big && threads > 1) {
        CHECK_EQ_INT(t.read_stats.permuted, n);
    } else {
        CHECK_EQ_INT(t.read_stats.permuted, 0);
        CHECK_EQ_INT(t.read_stats.merged, n);
    }
    free(ref);
    tl_trace_free(&t);
}

TEST(tracks_together_merge_in_place_in_the_reference_order)
{
    for (int threads = 1; threads <= 4; threads += 3) {
        check_grouped(0, threads);
        check_grouped(1, threads);
    }
}

TEST(interval_algebra)
{
    tl_ivset a = {0}, b = {0}, out = {0};
    tl_ivset_add(&a, 10, 20);
    tl_ivset_add(&a, 0, 5);
    tl_ivset_add(&a, 15, 30); /* overlaps 10..20 */
    tl_ivset_add(&a, 40, 40); /* empty, ignored */
    tl_ivset_normalize(&a);
    CHECK_EQ_INT(a.n, 2);
    CHECK_EQ_INT(tl_ivset_length(&a), 5 + 20);
    tl_ivset_add(&b, 3, 12);
    tl_ivset_add(&b, 25, 50);
    tl_ivset_normalize(&b);
    tl_ivset_intersect(&a, &b, &out);
    CHECK_EQ_INT(tl_ivset_length(&out), 2 + 2 + 5); /* 3..5, 10..12, 25..30 */
    tl_ivset_union(&a, &b, &out);
    CHECK_EQ_INT(tl_ivset_length(&out), 50); /* 0..50 */
    tl_ivset_subtract(&a, &b, &out);
    CHECK_EQ_INT(tl_ivset_length(&out), 3 + 13); /* 0..3, 12..25 */
    CHECK_EQ_INT(out.n, 2);
    tl_ivset_clip(&out, 1, 20);
    CHECK_EQ_INT(tl_ivset_length(&out), 2 + 8);
    tl_ivset_free(&a);
    tl_ivset_free(&b);
    tl_ivset_free(&out);
}

/* The length of a union without making it: against tl_ivset_union on random sets that touch,
 * nest, overlap and are empty. */
TEST(union_length_is_the_unions_length)
{
    CHECK_EQ_INT(tl_ivset_union_length(NULL, 0), 0);
    CHECK_EQ_INT(tl_ivset_union_length(NULL, TL_IVSET_UNION_MAX + 1), -1);
    for (int round = 0; round < 300; round++) {
        tl_ivset s[3] = {{0}, {0}, {0}}, u = {0}, tmp = {0};
        for (int k = 0; k < 3; k++) {
            int n = (int)(test_rand() % 40);
            if (k == round % 3)
                n = 0; /* one set empty in turn */
            for (int i = 0; i < n; i++) {
                int64_t a = (int64_t)(test_rand() % 1000), len = (int64_t)(test_rand() % 60);
                tl_ivset_add(&s[k], a, a + len);
            }
            tl_ivset_normalize(&s[k]);
        }
        tl_ivset_union(&s[0], &s[1], &tmp);
        tl_ivset_union(&tmp, &s[2], &u);
        const tl_ivset *each[3] = {&s[0], &s[1], &s[2]};
        CHECK_EQ_INT(tl_ivset_union_length(each, 3), tl_ivset_length(&u));
        CHECK_EQ_INT(tl_ivset_union_length(each, 1), tl_ivset_length(&s[0]));
        for (int k = 0; k < 3; k++)
            tl_ivset_free(&s[k]);
        tl_ivset_free(&u);
        tl_ivset_free(&tmp);
    }
}

TEST(profiled_window_is_union_of_steps)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_span(&t, th, TL_CAT_STEP, "ProfilerStep#0", 100, 1000);
    fx_span(&t, th, TL_CAT_STEP, "ProfilerStep#1", 1500, 500); /* 400 ns gap between steps */
    fx_span(&t, th, TL_CAT_USER, "outside", 0, 5000);
    tl_trace_finish(&t);
    tl_window w;
    tl_profiled_window(&t, &w);
    CHECK_EQ_INT(w.nsteps, 2);
    CHECK_EQ_INT(w.total, 1500);
    CHECK_EQ_INT(w.t0, 100);
    CHECK_EQ_INT(w.t1, 2000);
    tl_trace_free(&t);
}

/* tl_has_ci against strncasecmp at every position (the C locale's ASCII folding): needles at
 * the start, the middle, the end, cut short by the end, in every case, and absent. */
static int has_ci_ref(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (;; s++) {
        if (strncasecmp(s, needle, n) == 0)
            return 1;
        if (!*s)
            return 0;
    }
}

TEST(has_ci_finds_what_strncasecmp_finds)
{
    static const char *const hay[] = {
        "",
        "ncclKernel_AllReduce_RING_LL_Sum_float",
        "void at::native::NCCL_dummy<float>(float*)",
        "ncc",
        "xNcCl",
        "nnccl",
        "rccl_all_gather",
        "ampere_sgemm_128x64_nn",
        "cross_device_reduce_2stage<__nv_bfloat16, 8>",
        "CROSS_DEVICE_REDUCE",
        "cross_device_reduc",
        "Memcpy HtoD (Pageable -> Device)",
        "_Z12ncclDevKernel_Generic_4v",
        "a_b_c_nccl",
    };
    static const char *const needles[] = {"nccl", "rccl", "xccl", "hccl", "cross_device_reduce",
                                          "_",    "a",    "NCCL", ""};
    int agree = 0, found = 0;
    for (size_t i = 0; i < sizeof hay / sizeof hay[0]; i++)
        for (size_t j = 0; j < sizeof needles / sizeof needles[0]; j++) {
            int want = has_ci_ref(hay[i], needles[j]);
            agree += tl_has_ci(hay[i], needles[j]) == want;
            found += want;
        }
    CHECK_EQ_INT(agree, (int)(sizeof hay / sizeof hay[0] * (sizeof needles / sizeof needles[0])));
    CHECK(found > 20); /* the table has hits, not only misses */
    CHECK(tl_has_ci("void ncclDevKernel", "NcCl"));
    CHECK(!tl_has_ci("ncc", "nccl"));
}

/* Runs of tracks of every length from 1 to 300 (galloping steps and their bisection at every
 * offset), against the event-by-event scan it replaces. */
TEST(track_end_is_where_the_tracks_events_end)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t run = 1, tr = 0;
    while (t.nev < 50000) {
        for (uint32_t k = 0; k < run; k++) {
            tl_event *e = tl_trace_add(&t);
            if (!e)
                break;
            e->track = tr;
        }
        tr++;
        run = run % 300 + 1 + (run * 7) % 5;
    }
    size_t agree = 0, n = 0;
    for (size_t i = 0; i < t.nev; i++, n++) {
        size_t j = i;
        while (j < t.nev && t.ev[j].track == t.ev[i].track)
            j++;
        agree += tl_trace_track_end(&t, i) == j;
    }
    CHECK_EQ_INT((int)agree, (int)n);
    CHECK(tr > 100);
    tl_trace_free(&t);
}

/* A walk over some categories visits, in index order, every event of the tracks that hold one of
 * them and no other event: for each category alone, the device work, mixes, all and none; on a
 * trace finished at 1, 3 and 16 threads (its runs found in parts), before the finish (every
 * event), and after the links are made again (the runs still known). */
static void mixed_trace(tl_trace *t, int threads)
{
    tl_trace_init(t);
    t->read_threads = threads;
    static const uint16_t host[] = {TL_CAT_OPERATOR, TL_CAT_RUNTIME, TL_CAT_PYTHON,
                                    TL_CAT_STEP,     TL_CAT_USER,    TL_CAT_DATALOADER,
                                    TL_CAT_MEMORY,   TL_CAT_INSTANT, TL_CAT_COMMUNICATION};
    static const uint16_t dev[] = {TL_CAT_KERNEL, TL_CAT_MEMCPY, TL_CAT_MEMSET, TL_CAT_GPU_USER};
    uint32_t tr[40];
    for (int k = 0; k < 40; k++)
        tr[k] = k < 24 ? tl_trace_track(t, TL_TRACK_THREAD, 1, 100 + k, -1)
                       : tl_trace_track(t, TL_TRACK_STREAM, 1, k, k % 2);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 120000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int k = (int)(x % 40);
        if (k % 7 == 3 && x % 5) /* some tracks with few events */
            k = (int)((x >> 8) % 3);
        tl_event *e = tl_trace_add(t);
        e->track = tr[k];
        e->ts = (int64_t)(i / 2) + (int64_t)(x >> 60);
        e->dur = (int64_t)(x >> 40) % 50;
        /* a track holds only some categories: which ones depends on the track */
        int j = (int)((x >> 20) % 3) + k;
        e->cat = k < 24 ? host[j % 9] : dev[j % (k % 5 == 0 ? 1 : 4)];
    }
}

static void check_walks(const tl_trace *t, int skips)
{
    static const uint32_t masks[] = {
        TL_DEVICE_WORK, TL_CATBIT(TL_CAT_KERNEL) | TL_CATBIT(TL_CAT_STEP),
        TL_CATBIT(TL_CAT_RUNTIME) | TL_CATBIT(TL_CAT_DRIVER), UINT32_MAX, 0};
    for (int m = 0; m < TL_CAT_COUNT + 5; m++) {
        uint32_t mask = m < TL_CAT_COUNT ? TL_CATBIT(m) : masks[m - TL_CAT_COUNT];
        uint8_t has[64] = {0};
        size_t want = 0, of_tracks = 0, seen = 0, outside = 0, order_bad = 0, prev = 0;
        for (size_t i = 0; i < t->nev; i++)
            if (mask >> t->ev[i].cat & 1) {
                has[t->ev[i].track] = 1;
                want++;
            }
        for (size_t i = 0; i < t->nev; i++)
            of_tracks += has[t->ev[i].track];
        tl_cat_walk w;
        for (size_t i = tl_cat_walk_begin(&w, t, mask); i < t->nev; i = tl_cat_walk_step(&w, i)) {
            order_bad += seen && i <= prev;
            prev = i;
            seen += (mask >> t->ev[i].cat & 1) != 0;
            outside += !has[t->ev[i].track];
        }
        CHECK_EQ_INT((int)order_bad, 0);
        CHECK_EQ_INT((int)seen, (int)want);
        CHECK_EQ_INT(tl_trace_has_cats(t, mask), want > 0);
        if (skips) { /* only the tracks that hold one: every event of theirs */
            size_t visited = 0;
            for (size_t i = tl_cat_walk_begin(&w, t, mask); i < t->nev; i = tl_cat_walk_step(&w, i))
                visited++;
            CHECK_EQ_INT((int)outside, 0);
            CHECK_EQ_INT((int)visited, (int)of_tracks);
        } else { /* every event */
            size_t visited = 0;
            for (size_t i = tl_cat_walk_begin(&w, t, mask); i < t->nev; i = tl_cat_walk_step(&w, i))
                visited++;
            CHECK_EQ_INT((int)visited, (int)t->nev);
        }
    }
}

TEST(a_walk_by_category_skips_only_the_tracks_without_them)
{
    static const int threads[] = {1, 3, 16};
    for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
        tl_trace t;
        mixed_trace(&t, threads[k]);
        check_walks(&t, 0);
        CHECK_EQ_INT(tl_trace_finish(&t), 0);
        CHECK(t.nruns_ >= 30 && t.nruns_ <= 40); /* a run a track that has events */
        check_walks(&t, 1);
        CHECK_EQ_INT(tl_trace_relink(&t), 0);
        check_walks(&t, 1);
        tl_trace_free(&t);
    }
    tl_trace e;
    tl_trace_init(&e);
    CHECK_EQ_INT(tl_trace_finish(&e), 0);
    check_walks(&e, 1);
    tl_trace_free(&e);
}

/* The inline bit count against one bit at a time, on words of every density. */
TEST(popcount_counts_the_bits)
{
    uint64_t x = 0x2545f4914f6cdd1dull;
    size_t bad = 0;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t w = i % 3 == 0   ? x
                     : i % 3 == 1 ? x & (x >> 1) & (x >> 2)
                                  : x | (x << 1) | (x >> 3);
        unsigned n = 0;
        for (int b = 0; b < 64; b++)
            n += (unsigned)(w >> b & 1);
        bad += tl_popcount64(w) != n;
    }
    bad += tl_popcount64(0) != 0 || tl_popcount64(UINT64_MAX) != 64;
    CHECK_EQ_INT((int)bad, 0);
}

int main(void)
{
    RUN(track_end_is_where_the_tracks_events_end);
    RUN(a_walk_by_category_skips_only_the_tracks_without_them);
    RUN(popcount_counts_the_bits);
    RUN(intern_returns_same_id_for_same_string);
    RUN(many_names_alike_are_each_found_again);
    RUN(has_ci_finds_what_strncasecmp_finds);
    RUN(a_string_table_reset_is_filled_again_in_its_own_blocks);
    RUN(tracks_are_found_again);
    RUN(finish_sorts_and_nests);
    RUN(evrank_numbers_the_chosen_events_and_their_self_times);
    RUN(permutations_of_every_shape);
    RUN(prefault_makes_pages_ahead_of_the_writer);
    RUN(finish_in_threads_is_the_same_order);
    RUN(two_run_tracks_merged_in_threads_are_the_same);
    RUN(links_and_memory_in_threads_are_the_same);
    RUN(run_each_runs_every_item_once);
    RUN(shared_items_are_taken_in_turn);
    RUN(finish_knows_the_span_and_the_steps);
    RUN(finish_gives_back_the_room_no_event_took);
    RUN(finish_links_runtime_calls_to_device_work);
    RUN(a_step_is_the_outermost_of_equal_spans);
    RUN(a_shared_correlation_id_links_the_call_started_last);
    RUN(unnamed_copies_and_memsets_get_pytorchs_names);
    RUN(many_events_sort_like_a_reference_order);
    RUN(finish_order_is_the_reference_order);
    RUN(tracks_together_merge_in_place_in_the_reference_order);
    RUN(interval_algebra);
    RUN(union_length_is_the_unions_length);
    RUN(profiled_window_is_union_of_steps);
    return test_summary();
}
