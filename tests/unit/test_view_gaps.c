/* test_view_gaps.c — idle time split, largest gaps with host context, launch statistics and
 * queue length on a hand-made trace whose answers are known by construction. */
#include "insight_fixture.h"
#include "testlib.h"

#include <stdlib.h>

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/*
 * One host thread, one stream. Kernels (start, duration, launch call start):
 *   K1  1.000 ms  1 ms     0.5 ms   first op
 *   K2  7.000 ms  1 ms     6.9 ms   gap 2 -> 7 ms (5 ms): launched after K1 ended -> host wait
 *   K3  8.010 ms  5 us     7.5 ms   gap 10 us, launched in time, < 30 us      -> kernel wait
 *   K4  8.115 ms  1 ms     7.6 ms   gap 100 us, launched in time, >= 30 us    -> other
 * The host was inside "build_batched_past" [1 ms, 9 ms) during all of them.
 */
static void build(tl_trace *t)
{
    tl_trace_init(t);
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t st = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
    fx_ev(t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 20 * MS);
    fx_ev(t, th, TL_CAT_USER, "build_batched_past", 1 * MS, 8 * MS);
    fx_launch(t, th, st, "K1", 500 * US, 1 * MS, 1 * MS, 1);
    fx_launch(t, th, st, "K2", 6900 * US, 7 * MS, 1 * MS, 2);
    fx_launch(t, th, st, "K3", 7500 * US, 8010 * US, 5 * US, 3);
    fx_launch(t, th, st, "K4", 7600 * US, 8115 * US, 1 * MS, 4);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(idle_split_into_host_kernel_and_other_wait)
{
    tl_trace t;
    build(&t);
    tl_idle x;
    CHECK_EQ_INT(tl_idle_compute(&t, 0, 0, &x), 0);
    CHECK_EQ_INT(x.nstreams, 1);
    const tl_stream_stats *s = &x.streams[0];
    CHECK_EQ_INT(s->first, 1 * MS);
    CHECK_EQ_INT(s->last, 9115 * US);
    CHECK_EQ_INT(s->busy, 3005 * US);
    CHECK_EQ_INT(s->wait[TL_WAIT_HOST], 5 * MS);
    CHECK_EQ_INT(s->wait[TL_WAIT_KERNEL], 10 * US);
    CHECK_EQ_INT(s->wait[TL_WAIT_OTHER], 100 * US);
    CHECK_EQ_INT(s->busy + s->wait[0] + s->wait[1] + s->wait[2], s->last - s->first);
    CHECK_EQ_INT(x.ngaps, 3);
    CHECK_EQ_INT(x.gaps[0].e - x.gaps[0].s, 5 * MS); /* stream order */
    CHECK_EQ_INT(x.gaps[1].e - x.gaps[1].s, 10 * US);
    tl_idle_top_gaps(&x, 0);
    CHECK_EQ_INT(x.gaps[0].e - x.gaps[0].s, 5 * MS); /* longest first */
    CHECK_EQ_INT(x.gaps[1].e - x.gaps[1].s, 100 * US);
    CHECK_EQ_INT(x.gaps[2].e - x.gaps[2].s, 10 * US);
    tl_idle_free(&x);
    tl_trace_free(&t);
}

TEST(kernel_wait_threshold_is_in_real_units)
{
    tl_trace t;
    build(&t);
    tl_idle x;
    /* 200 us: the 100 us gap is now a kernel wait */
    CHECK_EQ_INT(tl_idle_compute(&t, 0, 200 * US, &x), 0);
    CHECK_EQ_INT(x.streams[0].wait[TL_WAIT_KERNEL], 110 * US);
    CHECK_EQ_INT(x.streams[0].wait[TL_WAIT_OTHER], 0);
    tl_idle_free(&x);
    /* 5 us: the 10 us gap is "other" */
    CHECK_EQ_INT(tl_idle_compute(&t, 0, 5 * US, &x), 0);
    CHECK_EQ_INT(x.streams[0].wait[TL_WAIT_KERNEL], 0);
    CHECK_EQ_INT(x.streams[0].wait[TL_WAIT_OTHER], 110 * US);
    tl_idle_free(&x);
    tl_trace_free(&t);
}

TEST(launch_delays_short_kernels_and_queue)
{
    tl_trace t;
    build(&t);
    tl_idle x;
    CHECK_EQ_INT(tl_idle_compute(&t, 0, 0, &x), 0);
    const tl_stream_stats *s = &x.streams[0];
    CHECK_EQ_INT(s->kernels, 4);
    CHECK_EQ_INT(s->linked, 4);
    CHECK_EQ_INT(s->ndelays, 4);
    CHECK_EQ_INT(s->delays[0], 500 * US); /* K1, in stream order */
    CHECK_EQ_INT(s->delays[1], 100 * US); /* K2 */
    int64_t d[4];
    memcpy(d, s->delays, sizeof d);
    qsort(d, 4, sizeof d[0], cmp_i64);
    CHECK_EQ_INT(tl_percentile(d, 4, 0.5), 500 * US);
    CHECK_EQ_INT(tl_percentile(d, 4, 0.95), 515 * US);
    CHECK_EQ_INT(s->short_kernels, 1); /* K3, 5 us < 10 us */
    CHECK_EQ_INT(s->short_time, 5 * US);
    /* in flight: K2, K3, K4 launched at 6.9/7.5/7.6 ms, none finished before 8 ms */
    CHECK_EQ_INT(s->queue_max, 3);
    /* area 4.63 ms*op over the span 0.5 .. 9.115 ms */
    CHECK_NEAR(s->queue_avg, 4.63 / 8.615, 1e-6);
    tl_idle_free(&x);
    tl_trace_free(&t);
}

TEST(view_tables_carry_the_numbers_and_the_host_range)
{
    tl_trace t;
    build(&t);
    tl_error err = {{0}};
    tl_table *tab = tl_view_gaps(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    const tl_table *idle = fx_table(tab, "gpu_idle");
    const tl_table *gaps = fx_table(tab, "gpu_gaps");
    const tl_table *launch = fx_table(tab, "kernel_launches");
    CHECK(idle && gaps && launch);
    if (!idle || !gaps || !launch)
        return;
    CHECK_EQ_INT(idle->nrows, 1);
    CHECK_EQ_INT(fx_i(idle, 0, "stream"), 7);
    CHECK_EQ_INT(fx_i(idle, 0, "idle_us"), 5110 * US);
    CHECK_EQ_INT(fx_i(idle, 0, "host_wait_us"), 5 * MS);
    CHECK_NEAR(fx_d(idle, 0, "idle_pct"), 100.0 * 5110 / 8115, 1e-9);
    CHECK_EQ_INT(gaps->nrows, 3);
    CHECK_EQ_INT(fx_i(gaps, 0, "length_us"), 5 * MS);
    CHECK_EQ_INT(fx_i(gaps, 0, "start_us"), 2 * MS); /* trace starts at 0 */
    CHECK_STR(fx_s(gaps, 0, "cause"), "host wait");
    CHECK_STR(fx_s(gaps, 0, "host_ranges"), "build_batched_past");
    CHECK_STR(fx_s(gaps, 1, "cause"), "other");
    CHECK_STR(fx_s(gaps, 2, "cause"), "kernel wait");
    CHECK_EQ_INT(launch->nrows, 1);
    CHECK_EQ_INT(fx_i(launch, 0, "kernels"), 4);
    CHECK_EQ_INT(fx_i(launch, 0, "launch_delay_avg_us"), 1625 * US / 4);
    CHECK_EQ_INT(fx_i(launch, 0, "launch_delay_p50_us"), 500 * US);
    CHECK_EQ_INT(fx_i(launch, 0, "launch_delay_max_us"), 515 * US);
    CHECK_EQ_INT(fx_i(launch, 0, "short_kernels"), 1);
    CHECK_NEAR(fx_d(launch, 0, "short_kernels_pct"), 25.0, 1e-9);
    tl_table_free(tab);

    tl_view_opts o = {0};
    o.top = 1;
    o.threshold_ns = 2 * MS; /* every kernel is "short" now */
    tab = tl_view_gaps(&t, &o, &err);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(fx_table(tab, "gpu_gaps")->nrows, 1);
        CHECK_EQ_INT(fx_i(fx_table(tab, "kernel_launches"), 0, "short_kernels"), 4);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

TEST(gap_context_is_the_innermost_range_spanning_it)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t th2 = tl_trace_track(&t, TL_TRACK_THREAD, 1, 2, -1);
    uint32_t st = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
    fx_ev(&t, th, TL_CAT_USER, "decode_step", 0, 10 * MS);
    fx_ev(&t, th, TL_CAT_USER, "sample", 3 * MS, 5 * MS);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::topk", 3500 * US, 100 * US); /* inside, too short */
    fx_ev(&t, th2, TL_CAT_DATALOADER, "next_batch", 2 * MS, 8 * MS);
    fx_launch(&t, th, st, "A", 0, 1 * MS, 2 * MS, 1);         /* ends at 3 ms */
    fx_launch(&t, th, st, "B", 7990 * US, 8 * MS, 1 * MS, 2); /* gap 3 .. 8 ms */
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_track_index ix;
    CHECK_EQ_INT(tl_track_index_build(&t, &ix), 0);
    char buf[256];
    tl_host_context(&t, &ix, 3 * MS, 8 * MS, buf, sizeof buf);
    CHECK_STR(buf, "sample; next_batch");
    tl_host_context(&t, &ix, 3550 * US, 3580 * US, buf, sizeof buf);
    CHECK_STR(buf, "aten::topk; next_batch");
    /* no range spans 8.5 .. 10.5 ms whole: the ranges at its middle (9.5 ms) */
    tl_host_context(&t, &ix, 8500 * US, 10500 * US, buf, sizeof buf);
    CHECK_STR(buf, "decode_step; next_batch");
    tl_host_context(&t, &ix, 20 * MS, 21 * MS, buf, sizeof buf);
    CHECK_STR(buf, "");
    tl_track_index_free(&ix);
    tl_trace_free(&t);
}

TEST(top_gaps_are_the_longest_in_order)
{
    enum { N = 1000 };
    tl_idle x = {0}, y = {0};
    x.gaps = malloc(N * sizeof *x.gaps);
    y.gaps = malloc(N * sizeof *y.gaps);
    if (!x.gaps || !y.gaps)
        return;
    uint32_t r = 12345;
    for (int i = 0; i < N; i++) {
        r = r * 1103515245u + 12345u;
        int64_t len = (r >> 8) % 500; /* many ties */
        x.gaps[i] = (tl_gap){i * 1000, i * 1000 + len, len, (uint32_t)(i % 3), 0};
    }
    x.ngaps = y.ngaps = N;
    memcpy(y.gaps, x.gaps, N * sizeof *x.gaps);
    tl_idle_top_gaps(&y, 0); /* full sort */
    for (int i = 1; i < N; i++)
        CHECK(y.gaps[i - 1].e - y.gaps[i - 1].s >= y.gaps[i].e - y.gaps[i].s);
    tl_idle_top_gaps(&x, 17);
    for (int i = 0; i < 17; i++) {
        CHECK_EQ_INT(x.gaps[i].s, y.gaps[i].s);
        CHECK_EQ_INT(x.gaps[i].e, y.gaps[i].e);
    }
    free(x.gaps);
    free(y.gaps);
}

/* Keeping only each stream's k longest gaps (tl_idle_compute_top: the gaps view keeps its --top,
 * findings none) lists the same top k as keeping every gap, on three streams of 2,000 kernels
 * with gaps of many equal lengths, some of them long; and each stream's long_max is the gap the
 * whole list gives: the longest of those of 1 ms or more, the earliest of equals. */
TEST(kept_gaps_give_the_same_top_and_longest)
{
    enum { N = 2000, NS = 3 };
    tl_trace t;
    tl_trace_init(&t);
    uint32_t st[NS];
    for (int k = 0; k < NS; k++)
        st[k] = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7 + k, 0);
    uint32_t r = 777;
    for (int k = 0; k < NS; k++) {
        int64_t ts = 0;
        for (int i = 0; i < N; i++) {
            r = r * 1103515245u + 12345u;
            int64_t gap = (int64_t)((r >> 8) % 7) * 400 * US; /* 0 to 2.4 ms, many equal */
            ts += gap;
            fx_ev(&t, st[k], TL_CAT_KERNEL, "k", ts, 50 * US);
            ts += 50 * US;
        }
    }
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_idle all;
    CHECK_EQ_INT(tl_idle_compute(&t, 0, 0, &all), 0);
    CHECK_EQ_INT(all.nstreams, NS);
    CHECK(all.ngaps > 1000);
    for (int k = 0; k < NS; k++) { /* long_max against the whole list, in stream order */
        const tl_gap *g = NULL;
        for (size_t i = 0; i < all.ngaps; i++)
            if (all.gaps[i].track == all.streams[k].track &&
                all.gaps[i].e - all.gaps[i].s >= TL_LONG_GAP_NS && (!g || all.gaps[i].len > g->len))
                g = &all.gaps[i];
        CHECK(g != NULL);
        if (g) {
            CHECK_EQ_INT(all.streams[k].long_max.s, g->s);
            CHECK_EQ_INT(all.streams[k].long_max.len, g->len);
        }
    }
    tl_idle_top_gaps(&all, 0);
    static const size_t keeps[] = {1, 3, 10, 64};
    for (size_t j = 0; j < sizeof keeps / sizeof *keeps; j++) {
        tl_idle kept;
        CHECK_EQ_INT(tl_idle_compute_top(&t, NULL, 0, 0, keeps[j], &kept), 0);
        CHECK_EQ_INT(kept.ngaps, NS * keeps[j]);
        for (int k = 0; k < NS; k++)
            CHECK_EQ_INT(kept.streams[k].long_max.s, all.streams[k].long_max.s);
        tl_idle_top_gaps(&kept, keeps[j]);
        for (size_t i = 0; i < keeps[j]; i++) {
            CHECK_EQ_INT(kept.gaps[i].s, all.gaps[i].s);
            CHECK_EQ_INT(kept.gaps[i].len, all.gaps[i].len);
            CHECK_EQ_INT(kept.gaps[i].track, all.gaps[i].track);
        }
        tl_idle_free(&kept);
    }
    tl_idle none;
    CHECK_EQ_INT(tl_idle_compute_top(&t, NULL, 0, 0, 0, &none), 0);
    CHECK_EQ_INT(none.ngaps, 0);
    CHECK_EQ_INT(none.streams[0].long_max.len, all.streams[0].long_max.len);
    tl_idle_free(&none);
    tl_idle_free(&all);
    tl_trace_free(&t);
}

TEST(cpu_only_trace_gets_empty_tables_with_a_note)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_ev(&t, th, TL_CAT_USER, "work", 0, 1 * MS);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_gaps(&t, NULL, &err);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 0);
        CHECK(tab->nnotes > 0);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

TEST(unknown_sort_key_is_an_error)
{
    tl_trace t;
    build(&t);
    tl_error err = {{0}};
    tl_view_opts o = {0};
    o.sort = "no_such_column";
    CHECK(tl_view_gaps(&t, &o, &err) == NULL);
    CHECK(strstr(err.msg, "no_such_column") != NULL);
    tl_trace_free(&t);
}

/* "Host was in" names the range whole, however long (--wide prints it so; it was cut at 511
 * bytes): a 3000-byte range name spanning a gap between two kernels. */
TEST(host_context_names_a_long_range_whole)
{
    static char name[3001];
    for (int i = 0; i < 3000; i++)
        name[i] = (char)('a' + i % 26);
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
    fx_launch(&t, th, s7, "k1", 0, 10 * US, 10 * US, 1);
    fx_ev(&t, th, TL_CAT_USER, name, 25 * US, 200 * US);
    fx_launch(&t, th, s7, "k2", 230 * US, 250 * US, 10 * US, 2);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_gaps(&t, NULL, &err);
    const tl_table *g = tab ? fx_table(tab, "gpu_gaps") : NULL;
    CHECK(g != NULL && g->nrows == 1);
    if (g && g->nrows == 1)
        CHECK_STR(fx_s(g, 0, "host_ranges"), name);
    tl_table_free(tab);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(idle_split_into_host_kernel_and_other_wait);
    RUN(kernel_wait_threshold_is_in_real_units);
    RUN(launch_delays_short_kernels_and_queue);
    RUN(view_tables_carry_the_numbers_and_the_host_range);
    RUN(gap_context_is_the_innermost_range_spanning_it);
    RUN(top_gaps_are_the_longest_in_order);
    RUN(kept_gaps_give_the_same_top_and_longest);
    RUN(cpu_only_trace_gets_empty_tables_with_a_note);
    RUN(unknown_sort_key_is_an_error);
    RUN(host_context_names_a_long_range_whole);
    return test_summary();
}
