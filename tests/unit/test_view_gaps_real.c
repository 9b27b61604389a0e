/* test_view_gaps_real.c — invariants of the insight views (gaps, distributed, findings, diff)
 * on the real PyTorch traces in shared/traces: idle = host wait + kernel wait + other, idle and
 * busy within the span, every device op counted once, overlap within both sets, communication
 * found in the NCCL traces, findings ranked, a trace diffed with itself unchanged. */
#include "insight_fixture.h"
#include "shared_trace.h"
#include "testlib.h"

#include <stdlib.h>
#include <unistd.h>

static const char *const traces[] = {
    "hta_sampled_rank-0.json.gz",
    "hta_sampled_rank-1.json.gz",
    "hta_nccl_data.json.gz",
    "hta_df_index_resolver.json.gz",
    "hta_mtia_rank_0.json.gz",
    "hta_ns_resolution_rank-0.pt.trace.json.gz",
    "hta_cpu_only_rank-34.pt.trace.json.gz",
    "hta_amd_mi250_minitoy_train_kineto.json.gz",
    "kineto_resnet50_nw0_worker0.1623143089861.pt.trace.json.gz",
    "kineto_resnet50_nw4_worker0.1623212756351.pt.trace.json.gz",
};

static int is_op(const tl_event *e)
{
    return e->cat == TL_CAT_KERNEL || e->cat == TL_CAT_MEMCPY || e->cat == TL_CAT_MEMSET;
}

static int load(tl_trace *t, const char *name)
{
    return shared_trace_load(t, name, 1);
}

static void check_idle(const tl_trace *t, const char *name)
{
    tl_idle x;
    CHECK_EQ_INT(tl_idle_compute(t, 0, 0, &x), 0);
    int64_t ops = 0, kernels = 0;
    for (size_t i = 0; i < t->nev; i++) {
        ops += is_op(&t->ev[i]);
        kernels += t->ev[i].cat == TL_CAT_KERNEL;
    }
    int64_t seen_ops = 0, seen_kernels = 0;
    for (size_t i = 0; i < x.nstreams; i++) {
        const tl_stream_stats *s = &x.streams[i];
        int64_t span = s->last - s->first;
        int64_t idle = s->wait[0] + s->wait[1] + s->wait[2];
        CHECK(s->wait[0] >= 0 && s->wait[1] >= 0 && s->wait[2] >= 0);
        CHECK(s->busy >= 0 && s->busy <= span);
        CHECK_EQ_INT(s->busy + idle, span);
        CHECK(s->linked <= s->kernels);
        CHECK(s->short_kernels <= s->kernels);
        CHECK_EQ_INT((int64_t)s->ndelays, s->linked);
        for (size_t k = 0; k < s->ndelays; k++)
            CHECK(s->delays[k] >= 0);
        CHECK(s->queue_max >= 0 && s->queue_avg >= 0 && s->queue_avg <= (double)s->queue_max);
        /* the stream's gaps add up to its idle time */
        int64_t gsum = 0;
        for (size_t g = 0; g < x.ngaps; g++)
            if (x.gaps[g].track == s->track)
                gsum += x.gaps[g].e - x.gaps[g].s;
        CHECK_EQ_INT(gsum, idle);
        seen_ops += s->ops;
        seen_kernels += s->kernels;
    }
    tl_gap longest = {0, 0, 0, 0, 0};
    for (size_t g = 0; g < x.ngaps; g++)
        if (x.gaps[g].e - x.gaps[g].s > longest.e - longest.s)
            longest = x.gaps[g];
    tl_idle_top_gaps(&x, 3);
    CHECK(x.ngaps == 0 || x.gaps[0].e - x.gaps[0].s == longest.e - longest.s);
    for (size_t g = 1; g < x.ngaps && g < 3; g++)
        CHECK(x.gaps[g - 1].e - x.gaps[g - 1].s >= x.gaps[g].e - x.gaps[g].s);
    /* every op on a stream track counted once */
    int64_t on_streams = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (is_op(&t->ev[i]) && t->tracks[t->ev[i].track].kind == TL_TRACK_STREAM)
            on_streams++;
    CHECK_EQ_INT(seen_ops, on_streams);
    CHECK(seen_kernels <= kernels);
    if (test_failures)
        fprintf(stderr, "  (in %s)\n", name);
    tl_idle_free(&x);
}

static void check_comm(const tl_trace *t, const char *name)
{
    tl_comm c;
    CHECK_EQ_INT(tl_comm_compute(t, &c), 0);
    CHECK(c.overlap <= c.comm && c.overlap <= c.comp);
    CHECK_EQ_INT(c.exposed, c.comm - c.overlap);
    CHECK(c.comm <= c.window.t1 - c.window.t0);
    CHECK(c.comp <= c.window.t1 - c.window.t0);
    if (strstr(name, "nccl") || strstr(name, "df_index") || strstr(name, "sampled")) {
        CHECK(c.ncomm > 0);
        CHECK(c.comm > 0);
        CHECK(c.nhost > 0);
    }
    if (strstr(name, "cpu_only") || strstr(name, "resnet50"))
        CHECK_EQ_INT(c.ncomm, 0);
}

static void check_tables(const tl_trace *t, const char *name)
{
    tl_error err = {{0}};
    tl_table *g = tl_view_gaps(t, NULL, &err);
    CHECK(g != NULL);
    tl_table_free(g);
    tl_table *d = tl_view_distributed(t, NULL, &err);
    CHECK(d != NULL);
    tl_table_free(d);
    tl_table *f = tl_view_findings(t, NULL, &err);
    CHECK(f != NULL);
    if (f) {
        /* up to 5 findings of time, ranked by it, then up to 3 of memory, ranked by bytes */
        int ntime = 0, nmem = 0;
        for (int r = 0; r < f->nrows; r++) {
            int mem = fx_i(f, r, "at_stake_us") == -999999;
            CHECK(mem != (fx_i(f, r, "at_stake_bytes") == -999999)); /* one stake or the other */
            const char *key = mem ? "at_stake_bytes" : "at_stake_us";
            CHECK(fx_i(f, r, key) >= 0);
            CHECK(!mem || !nmem || fx_i(f, r - 1, key) >= fx_i(f, r, key));
            CHECK(mem || !ntime || fx_i(f, r - 1, key) >= fx_i(f, r, key));
            CHECK(mem || !nmem); /* time first */
            mem ? nmem++ : ntime++;
        }
        CHECK(ntime <= 5);
        CHECK(nmem <= 3);
        if (getenv("TALLY_TEST_VERBOSE")) {
            tl_out o;
            fprintf(stderr, "== %s\n", name);
            tl_out_begin(&o, stderr, TL_FMT_TEXT, TL_UNIT_AUTO);
            tl_out_table(&o, f);
            tl_out_end(&o);
        }
        tl_table_free(f);
    }
    tl_table *x = tl_view_diff(t, t, "ranges", NULL, &err);
    CHECK(x != NULL);
    for (const tl_table *k = x; k; k = k->next)
        if (k->key && !strcmp(k->key, "ranges_diff"))
            for (int r = 0; r < k->nrows; r++)
                CHECK_STR(fx_s(k, r, "change"), "same");
    tl_table_free(x);
}

TEST(real_traces_keep_the_invariants)
{
    int loaded = 0;
    for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
        tl_trace t;
        if (load(&t, traces[i]) != 0) {
            tl_trace_free(&t);
            continue;
        }
        loaded++;
        check_idle(&t, traces[i]);
        check_comm(&t, traces[i]);
        check_tables(&t, traces[i]);
        tl_trace_free(&t);
    }
    if (!loaded)
        fprintf(stderr, "skipped: no traces under %s/traces\n", TALLY_SHARED_DIR);
}

TEST(cpu_only_trace_has_no_streams)
{
    tl_trace t;
    if (load(&t, "hta_cpu_only_rank-34.pt.trace.json.gz") != 0) {
        tl_trace_free(&t);
        return;
    }
    tl_idle x;
    CHECK_EQ_INT(tl_idle_compute(&t, 0, 0, &x), 0);
    CHECK_EQ_INT(x.nstreams, 0);
    tl_idle_free(&x);
    tl_trace_free(&t);
}

TEST(two_ranks_diff)
{
    tl_trace a, b;
    int ra = load(&a, "hta_sampled_rank-0.json.gz"), rb = load(&b, "hta_sampled_rank-1.json.gz");
    if (ra == 0 && rb == 0) {
        tl_error err = {{0}};
        tl_table *x = tl_view_diff(&a, &b, NULL, NULL, &err);
        CHECK(x != NULL);
        if (!x)
            fprintf(stderr, "%s\n", err.msg);
        const tl_table *st = x ? fx_table(x, "step_time") : NULL;
        CHECK(st && st->nrows >= 1);
        tl_table_free(x);
    }
    tl_trace_free(&a);
    tl_trace_free(&b);
}

int main(void)
{
    if (!test_have_shared_traces())
        return TEST_SKIPPED;
    RUN(real_traces_keep_the_invariants);
    RUN(cpu_only_trace_has_no_streams);
    RUN(two_ranks_diff);
    return test_summary();
}
