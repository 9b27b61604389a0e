/*
 * test_findings_real.c — invariants of every finding on the ten real traces in
 * ../shared/traces (skipped, exit 77, when the folder is missing):
 *   - the time at stake is at most the profiled window;
 *   - a finding that names "GPU d stream s" names a stream of that device with device ops,
 *     and the one its evidence comes from: launch-bound and long gaps are recomputed here from
 *     that stream's ops alone (a plain walk, not insight_idle.c); exposed communication names
 *     "GPU d streams s1, s2": each runs collectives, and every stream of the device that ran
 *     collectives in the window is named (its evidence is the device's communication);
 *   - launch-bound only where that stream's kernels are short (>= 50 and >= 30% under 10 us),
 *     the stream is no communication stream (collectives are at most half its kernel time), and
 *     the time at stake is its launch gaps: host or kernel waits under 1 ms before a kernel.
 */
#include "analysis/insight.h"
#include "insight_fixture.h"
#include "shared_trace.h"
#include "testlib.h"

#include <stdlib.h>

static const char *const files[] = {
    "hta_amd_mi250_minitoy_train_kineto.json.gz",
    "hta_cpu_only_rank-34.pt.trace.json.gz",
    "hta_df_index_resolver.json.gz",
    "hta_mtia_rank_0.json.gz",
    "hta_nccl_data.json.gz",
    "hta_ns_resolution_rank-0.pt.trace.json.gz",
    "hta_sampled_rank-0.json.gz",
    "hta_sampled_rank-1.json.gz",
    "kineto_resnet50_nw0_worker0.1623143089861.pt.trace.json.gz",
    "kineto_resnet50_nw4_worker0.1623212756351.pt.trace.json.gz",
};

/* |[a, b) ∩ w|, w normalized. */
static int64_t inside(const tl_ivset *w, int64_t a, int64_t b)
{
    int64_t n = 0;
    for (size_t k = 0; k < w->n; k++) {
        int64_t x = w->v[k].s > a ? w->v[k].s : a, y = w->v[k].e < b ? w->v[k].e : b;
        if (y > x)
            n += y - x;
    }
    return n;
}

static int is_op(const tl_event *e)
{
    return e->cat == TL_CAT_KERNEL || e->cat == TL_CAT_MEMCPY || e->cat == TL_CAT_MEMSET;
}

/* What one stream's ops say, walked here from scratch. */
typedef struct walk {
    int64_t ops, kernels, nshort, comm, ktime, launch_gaps, long_gaps;
} walk;

static walk walk_stream(const tl_trace *t, uint32_t track, const tl_ivset *w)
{
    walk r = {0};
    int64_t prev = INT64_MIN;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->track != track || !is_op(e) || !inside(w, e->ts, e->ts + (e->dur ? e->dur : 1)))
            continue;
        r.ops++;
        int64_t end = e->ts + e->dur;
        if (prev != INT64_MIN && e->ts > prev) {
            int64_t raw = e->ts - prev, in = inside(w, prev, e->ts);
            const tl_event *call = e->link != TL_NONE ? &t->ev[e->link] : NULL;
            int host = call && call->ts > prev, kwait = !host && raw < 30 * US;
            if (raw >= 1 * MS)
                r.long_gaps += in;
            else if ((host || kwait) && e->cat == TL_CAT_KERNEL)
                r.launch_gaps += in;
        }
        if (end > prev)
            prev = end;
        if (e->cat == TL_CAT_KERNEL) {
            r.kernels++;
            r.ktime += e->dur;
            r.nshort += e->dur < 10 * US;
            if (tl_is_comm_kernel_name(tl_str(&t->strings, e->name)))
                r.comm += e->dur;
        }
    }
    return r;
}

static void check_trace(const char *name)
{
    tl_trace t;
    if (shared_trace_load(&t, name, 0) != 0) {
        tl_trace_free(&t);
        return;
    }
    tl_error err = {{0}};
    tl_window w;
    tl_profiled_window(&t, &w);
    tl_ivset win = {0};
    tl_profiled_window_set(&t, &win);
    tl_table *tab = tl_view_findings(&t, NULL, &err);
    CHECK(tab != NULL);
    for (int r = 0; tab && r < tab->nrows; r++) {
        const char *what = fx_s(tab, r, "finding");
        int64_t stake = fx_i(tab, r, "at_stake_us");
        fprintf(stderr, "  %s: %s | %lld ns\n", name, what, (long long)stake);
        if (fx_cell(tab, r, "at_stake_us")->set)
            CHECK(stake >= 0 && stake <= w.total);
        /* "GPU d stream s" or "GPU d streams s1, s2, ..." */
        const char *at = strstr(what, "GPU ");
        int dev = -1, used = 0;
        if (!at || sscanf(at, "GPU %d stream%n", &dev, &used) != 1 || !used)
            continue;
        const char *p = at + used + (at[used] == 's');
        long long sid[16];
        int nsid = 0;
        for (int got = 0; nsid < 16 && sscanf(p, " %lld%n", &sid[nsid], &got) == 1;) {
            nsid++;
            p += got;
            if (*p != ',')
                break;
            p++;
        }
        CHECK(nsid >= 1);
        int comm_finding = !strncmp(what, "Communication not overlapped", 28);
        for (int k = 0; k < nsid; k++) {
            uint32_t track = UINT32_MAX;
            for (uint32_t j = 0; j < t.ntracks; j++)
                if (t.tracks[j].kind == TL_TRACK_STREAM && t.tracks[j].device == dev &&
                    t.tracks[j].tid == sid[k])
                    track = j;
            CHECK(track != UINT32_MAX);
            if (track == UINT32_MAX)
                continue;
            walk s = walk_stream(&t, track, &win);
            CHECK(s.ops > 0);
            if (!strncmp(what, "Launch-bound", 12)) {
                CHECK_EQ_INT(nsid, 1);
                CHECK(s.nshort >= 50 && 100 * s.nshort >= 30 * s.kernels);
                CHECK(2 * s.comm <= s.ktime);
                CHECK_EQ_INT(stake, s.launch_gaps);
            } else if (strstr(what, "GPU gap")) {
                CHECK_EQ_INT(nsid, 1);
                CHECK(2 * s.comm <= s.ktime);
                CHECK_EQ_INT(stake, s.long_gaps);
            } else if (comm_finding) {
                CHECK(s.comm > 0);
            }
        }
        /* exposed communication is the device's: every stream of it that ran collectives in
         * the window is named (hta_sampled: 84 and 203, not 84 alone) */
        for (uint32_t j = 0; comm_finding && j < t.ntracks; j++) {
            if (t.tracks[j].kind != TL_TRACK_STREAM || t.tracks[j].device != dev ||
                walk_stream(&t, j, &win).comm == 0)
                continue;
            int named = 0;
            for (int k = 0; k < nsid; k++)
                named |= sid[k] == t.tracks[j].tid;
            if (!named)
                fprintf(stderr, "  stream %lld ran collectives, not named\n",
                        (long long)t.tracks[j].tid);
            CHECK(named);
        }
    }
    tl_table_free(tab);
    tl_ivset_free(&win);
    tl_trace_free(&t);
}

TEST(findings_hold_on_real_traces)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/traces/hta_nccl_data.json.gz", TALLY_SHARED_DIR);
    FILE *f = fopen(dir, "rb");
    if (!f)
        TEST_SKIP("no real traces under %s/traces", TALLY_SHARED_DIR);
    fclose(f);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        int before = test_failures;
        check_trace(files[i]);
        if (test_failures != before)
            fprintf(stderr, "  (in %s)\n", files[i]);
    }
}

/* The CPU-only trace (gloo collectives on two threads, no GPU): the host-communication finding's
 * time is the Communication of TensorBoard's PyTorch profiler plugin on this file
 * (tests/data/tensorboard/breakdown.json: 178777.427 us), and the only finding. */
TEST(host_communication_on_the_cpu_only_trace_is_the_plugins)
{
    tl_trace t;
    char path[512];
    snprintf(path, sizeof path, "%s/traces/hta_cpu_only_rank-34.pt.trace.json.gz",
             TALLY_SHARED_DIR);
    if (access(path, R_OK) != 0)
        TEST_SKIP("no real traces under %s/traces", TALLY_SHARED_DIR);
    if (shared_trace_load(&t, "hta_cpu_only_rank-34.pt.trace.json.gz", 0) != 0) {
        tl_trace_free(&t);
        return; /* (a failed check) */
    }
    tl_error err = {{0}};
    tl_table *tab = tl_view_findings(&t, NULL, &err);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 1);
        CHECK(tab->nrows >= 1 &&
              !strcmp(fx_s(tab, 0, "finding"), "Host communication takes 85% of the step time"));
        CHECK_EQ_INT(fx_i(tab, 0, "at_stake_us"), 178777427);
        CHECK(tab->nrows >= 1 && strstr(fx_s(tab, 0, "evidence"), "gloo:all_reduce") &&
              strstr(fx_s(tab, 0, "evidence"), "threads 3553, 3554"));
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(findings_hold_on_real_traces);
    RUN(host_communication_on_the_cpu_only_trace_is_the_plugins);
    return test_summary();
}
