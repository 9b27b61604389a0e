/* test_view_findings.c — findings triggered by construction, ranked by time at stake, and
 * silent on a healthy trace. */
#include "insight_fixture.h"
#include "testlib.h"

/* Row whose finding starts with prefix, or -1. */
static int finding_row(const tl_table *tab, const char *prefix)
{
    for (int r = 0; r < tab->nrows; r++)
        if (!strncmp(fx_s(tab, r, "finding"), prefix, strlen(prefix)))
            return r;
    return -1;
}

static void dump(const tl_table *tab)
{
    tl_out out;
    tl_out_begin(&out, stderr, TL_FMT_TEXT, TL_UNIT_AUTO);
    tl_out_table(&out, tab);
    tl_out_end(&out);
}

/*
 * The second seed's decode step: [0, 10 ms). "build_batched_past" [0, 8 ms) launches 200
 * kernels of 2 us (aten::zeros / aten::cat alternately), one every 40 us, each 20 us after its
 * launch call: the GPU waits 38 us on the host before each. "model.forward" [8, 10 ms) launches
 * aten::mm's 1 ms kernel at 8.5 ms. A pageable 100 us copy at 9.6 ms behind a 200 us
 * cudaMemcpyAsync. Busy = 200 x 2 us + 1 ms + 100 us = 1.5 ms: GPU idle 85% (8.5 ms).
 * Host wait = 199 x 38 us + (8.5 ms - 7.982 ms) + (9.6 - 9.5 ms) = 8.180 ms; the launch gaps
 * (host waits under 1 ms before a kernel) are those less the one before the copy: 8.080 ms.
 */
static void build_seed(tl_trace *t)
{
    tl_trace_init(t);
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t st = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
    fx_ev(t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 10 * MS);
    fx_ev(t, th, TL_CAT_USER, "build_batched_past", 0, 8 * MS);
    for (int i = 0; i < 200; i++) {
        int64_t t0 = i * 40 * US;
        fx_ev(t, th, TL_CAT_OPERATOR, i % 2 ? "aten::cat" : "aten::zeros", t0, 15 * US);
        fx_launch(t, th, st, i % 2 ? "CatArrayBatchedCopy" : "fill_kernel", t0 + 1 * US,
                  t0 + 20 * US, 2 * US, 1 + i);
    }
    fx_ev(t, th, TL_CAT_USER, "model.forward", 8 * MS, 2 * MS);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::mm", 8490 * US, 20 * US);
    fx_launch(t, th, st, "sgemm", 8490 * US, 8500 * US, 1 * MS, 1000);
    fx_ev(t, th, TL_CAT_RUNTIME, "cudaMemcpyAsync", 9550 * US, 200 * US)->corr = 1001;
    tl_event *cp =
        fx_ev(t, st, TL_CAT_MEMCPY, "Memcpy HtoD (Pageable -> Device)", 9600 * US, 100 * US);
    cp->corr = 1001;
    cp->flags = TL_EV_PAGEABLE;
    cp->value = 4 << 20;
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(seed_trace_findings_ranked_by_time_at_stake)
{
    tl_trace t;
    build_seed(&t);
    tl_error err = {{0}};
    tl_table *tab = tl_view_findings(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    int idle = finding_row(tab, "GPU idle 85% of the step time");
    int launch = finding_row(
        tab, "Launch-bound on GPU 0 stream 7 in build_batched_past: 100% of kernels < 10 us");
    int dom = finding_row(tab, "aten::mm takes");
    int copy = finding_row(tab, "1 pageable copy blocks the host");
    CHECK_EQ_INT(idle, 0);
    CHECK_EQ_INT(launch, 1);
    CHECK_EQ_INT(dom, 2);
    CHECK_EQ_INT(copy, 3);
    CHECK_EQ_INT(tab->nrows, 4);
    CHECK_EQ_INT(fx_i(tab, idle, "at_stake_us"), 8500 * US);
    CHECK_EQ_INT(fx_i(tab, launch, "at_stake_us"), 8080 * US);
    CHECK_EQ_INT(fx_i(tab, dom, "at_stake_us"), 1 * MS);
    CHECK_EQ_INT(fx_i(tab, copy, "at_stake_us"), 200 * US);
    CHECK_EQ_INT(fx_i(tab, 0, "rank"), 1);
    CHECK(strstr(fx_s(tab, launch, "evidence"), "200/201 kernels short; avg 6.9") != NULL);
    if (test_failures)
        dump(tab);
    tl_table_free(tab);

    tl_view_opts o = {0};
    o.top = 2;
    tab = tl_view_findings(&t, &o, &err);
    CHECK(tab && tab->nrows == 2);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* 10 ms step, four operators each launching one 2.4 ms kernel back to back from 0.2 ms:
 * GPU busy 96%, no short kernels, no gaps, no copies, no operator above 25%. */
TEST(healthy_trace_has_no_findings)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t st = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
    fx_ev(&t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 10 * MS);
    const char *ops[] = {"aten::mm", "aten::conv2d", "aten::bmm", "aten::addmm"};
    for (int i = 0; i < 4; i++) {
        fx_ev(&t, th, TL_CAT_OPERATOR, ops[i], i * 20 * US, 15 * US);
        fx_launch(&t, th, st, ops[i], i * 20 * US + 1 * US, 200 * US + i * 2400 * US, 2400 * US,
                  i + 1);
    }
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_findings(&t, NULL, &err);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 0);
        CHECK(tab->nnotes == 1);
        if (tab->nrows)
            dump(tab);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

/* CPU only: two 10 ms steps, each waiting 4 ms in the DataLoader, then four 1.5 ms ops. */
TEST(cpu_only_dataloader_bound)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    for (int s = 0; s < 2; s++) {
        int64_t b = s * 10 * MS;
        fx_ev(&t, th, TL_CAT_STEP, s ? "ProfilerStep#2" : "ProfilerStep#1", b, 10 * MS);
        fx_ev(&t, th, TL_CAT_USER, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", b,
              4 * MS);
        const char *ops[] = {"aten::conv2d", "aten::relu", "aten::add", "aten::mul"};
        for (int i = 0; i < 4; i++)
            fx_ev(&t, th, TL_CAT_OPERATOR, ops[i], b + 4 * MS + i * 1500 * US, 1500 * US);
    }
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_findings(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    CHECK_EQ_INT(tab->nrows, 1);
    CHECK_STR(fx_s(tab, 0, "finding"), "Data loading takes 40% of the step time");
    CHECK_EQ_INT(fx_i(tab, 0, "at_stake_us"), 8 * MS);
    CHECK_STR(fx_s(tab, 0, "evidence"), "4 ms of 10 ms per step waiting for the next batch");
    if (tab->nrows != 1)
        dump(tab);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* CPU only, no operators: one user range dominating the self time. */
TEST(cpu_only_range_dominating)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_ev(&t, th, TL_CAT_USER, "attention", 0, 6 * MS);
    fx_ev(&t, th, TL_CAT_USER, "mlp", 6 * MS, 2 * MS);
    fx_ev(&t, th, TL_CAT_USER, "norm", 8 * MS, 2 * MS);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_findings(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    CHECK_EQ_INT(tab->nrows, 1);
    CHECK_STR(fx_s(tab, 0, "finding"), "attention takes 60% of range self time");
    CHECK_EQ_INT(fx_i(tab, 0, "at_stake_us"), 6 * MS);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* The same operator on two threads at once: its self time sums to 12 ms, but it covers 7 ms of
 * the 10 ms trace (threads overlap on [1, 6) ms); the time at stake is the 7 ms. */
TEST(dominating_operator_stake_is_wall_time)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t a = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t b = tl_trace_track(&t, TL_TRACK_THREAD, 1, 2, -1);
    fx_ev(&t, a, TL_CAT_OPERATOR, "matmul", 0, 6 * MS);
    fx_ev(&t, b, TL_CAT_OPERATOR, "matmul", 1 * MS, 6 * MS);
    fx_ev(&t, a, TL_CAT_OPERATOR, "norm", 7 * MS, 3 * MS);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_findings(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    CHECK_EQ_INT(tab->nrows, 1);
    CHECK_STR(fx_s(tab, 0, "finding"), "matmul takes 80% of operator self CPU time");
    CHECK_EQ_INT(fx_i(tab, 0, "at_stake_us"), 7 * MS);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* The NCCL layout of test_view_distributed: a 30 ms step, compute [6, 14) on stream 7, an
 * all-reduce [10, 20) on stream 9 and a broadcast [25, 26) on stream 9, or with apart on a
 * second NCCL stream 11. */
static void build_comm(tl_trace *t, int apart)
{
    tl_trace_init(t);
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
    uint32_t s9 = tl_trace_track(t, TL_TRACK_STREAM, 1, 9, 0);
    uint32_t sb = apart ? tl_trace_track(t, TL_TRACK_STREAM, 1, 11, 0) : s9;
    fx_ev(t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 30 * MS);
    fx_launch(t, th, s7, "volta_sgemm_128x64_nn", 5 * MS, 6 * MS, 8 * MS, 1);
    fx_launch(t, th, s9, "ncclKernel_AllReduce_RING_LL_Sum_float", 9500 * US, 10 * MS, 10 * MS, 2);
    fx_ev(t, th, TL_CAT_USER, "optimizer.zero_grad", 20 * MS, 3 * MS);
    fx_launch(t, th, sb, "ncclKernel_Broadcast", 22 * MS, 25 * MS, 1 * MS, 3);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

/* Exposed communication and a long gap. */
TEST(exposed_communication_and_long_gap)
{
    tl_trace t;
    build_comm(&t, 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_findings(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    /* comm = [10,20) + [25,26) = 11 ms; compute [6,14): exposed 7 ms of 30 = 23%, named by the
     * stream that communicates */
    int r =
        finding_row(tab, "Communication not overlapped on GPU 0 stream 9: 23% of the step time");
    CHECK(r >= 0);
    CHECK_EQ_INT(fx_i(tab, r, "at_stake_us"), 7 * MS);
    /* stream 9 idles from 20 to 25 ms, but it is the communication stream: waiting for the next
     * collective is no gap to fix. GPU idle and exposed communication only (no "dominating"
     * range: only one launched kernels). */
    CHECK(finding_row(tab, "1 GPU gap") < 0);
    CHECK_EQ_INT(tab->nrows, 2);
    if (test_failures)
        dump(tab);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* The same with the broadcast on a second NCCL stream: the 7 ms exposed are the device's
 * communication on both, and both are named (not the busier one alone). */
TEST(exposed_communication_names_every_stream_it_ran_on)
{
    tl_trace t;
    build_comm(&t, 1);
    tl_error err = {{0}};
    tl_table *tab = tl_view_findings(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    int r = finding_row(
        tab, "Communication not overlapped on GPU 0 streams 9, 11: 23% of the step time");
    CHECK(r >= 0);
    CHECK_EQ_INT(fx_i(tab, r, "at_stake_us"), 7 * MS);
    if (test_failures)
        dump(tab);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* record_param_comms launches a 20 ms all-reduce (on stream 9), aten::mm an 8 ms and aten::add
 * a 2 ms kernel (stream 7), in a 40 ms step: the dominating operator is aten::mm, 80 % of the
 * computation; the wrapper of the collective is not named for its NCCL time (67 % of all
 * kernel time), which is the communication finding's. */
TEST(a_collective_does_not_make_its_operator_dominate)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
    uint32_t s9 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 9, 0);
    fx_ev(&t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 40 * MS);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::mm", 1 * MS, 1 * MS);
    fx_launch(&t, th, s7, "volta_sgemm_128x64_nn", 1100 * US, 2 * MS, 8 * MS, 1);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::add", 3 * MS, 1 * MS);
    fx_launch(&t, th, s7, "vectorized_elementwise_kernel", 3100 * US, 10 * MS, 2 * MS, 2);
    fx_ev(&t, th, TL_CAT_OPERATOR, "record_param_comms", 5 * MS, 1 * MS);
    fx_launch(&t, th, s9, "ncclKernel_AllReduce_RING_LL_Sum_float", 5100 * US, 12 * MS, 20 * MS, 3);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_findings(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    int r = finding_row(tab, "aten::mm takes 80% of GPU computation kernel time");
    CHECK(r >= 0);
    CHECK_EQ_INT(fx_i(tab, r, "at_stake_us"), 8 * MS);
    CHECK(finding_row(tab, "record_param_comms") < 0);
    if (test_failures)
        dump(tab);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* The same layout with the 5 ms wait on the compute stream instead: a long gap there is a
 * finding, named by its device and stream. */
TEST(long_gap_on_the_compute_stream)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
    fx_ev(&t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 30 * MS);
    fx_launch(&t, th, s7, "volta_sgemm_128x64_nn", 5 * MS, 6 * MS, 14 * MS, 1);
    fx_ev(&t, th, TL_CAT_USER, "optimizer.zero_grad", 20 * MS, 3 * MS);
    fx_launch(&t, th, s7, "volta_sgemm_128x64_nn", 22 * MS, 25 * MS, 5 * MS, 2);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_findings(&t, NULL, &err);
    int r = finding_row(tab, "1 GPU gap >= 1 ms on GPU 0 stream 7 (longest 5 ms)");
    CHECK(r >= 0);
    CHECK_EQ_INT(fx_i(tab, r, "at_stake_us"), 5 * MS);
    CHECK_STR(fx_s(tab, r, "evidence"),
              "longest at +20 ms, host wait, host in optimizer.zero_grad");
    if (test_failures)
        dump(tab);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* Two steps with a hole between them, [0, 10) and [20, 30) ms; the stream idles from 9.9 to
 * 21 ms: the title gives the gap as long as it was (11.1 ms, not the 1.1 ms of it in the steps,
 * which read "gap >= 1 ms ... (longest 1.1 ms)" and could read "longest 92.4 us"), the evidence
 * and the time at stake the part in the steps. */
TEST(a_long_gap_is_named_by_its_length_and_staked_by_its_part_in_the_steps)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
    fx_ev(&t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 10 * MS);
    fx_ev(&t, th, TL_CAT_STEP, "ProfilerStep#2", 20 * MS, 10 * MS);
    fx_launch(&t, th, s7, "volta_sgemm_128x64_nn", 500 * US, 1 * MS, 8900 * US, 1);
    fx_launch(&t, th, s7, "volta_sgemm_128x64_nn", 20500 * US, 21 * MS, 8 * MS, 2);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_findings(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    int r = finding_row(tab, "1 GPU gap >= 1 ms on GPU 0 stream 7 (longest 11.1 ms)");
    CHECK(r >= 0);
    if (r >= 0) {
        CHECK_EQ_INT(fx_i(tab, r, "at_stake_us"), 1100 * US);
        CHECK(strstr(fx_s(tab, r, "evidence"), "1.1 ms of it in the steps") != NULL);
    }
    if (test_failures)
        dump(tab);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* A copy is synchronous by its name ("Sync") or by the call that launched it (cudaMemcpy, not
 * Async), and only copies launched in the steps count, in the memcpy view and the findings
 * alike: one step [0, 10) ms; a 2 ms HtoD copy launched by cudaMemcpy at 1 ms (synchronous:
 * the memcpy view said Sync 0, the findings 1); a pageable copy launched at 15 ms, after the
 * step (the findings counted it, the memcpy view did not). */
/*
 * A CPU-only job (gloo): step [0, 100 ms) on thread 1 with an operator; collectives on threads 2
 * and 3: gloo:all_reduce [10, 40) and [50, 90) on 2, [20, 50) on 3, gloo:broadcast [95, 97) on
 * 2, and an all_reduce after the step [120, 150). In the step their union is [10, 90) + [95, 97)
 * = 82 ms; all_reduce has most time (3 calls in the step). kernel: add a kernel (device work).
 * small: only the broadcast (2 %, under the threshold).
 */
static void build_host_comm(tl_trace *t, int kernel, int small)
{
    tl_trace_init(t);
    uint32_t t1 = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t t2 = tl_trace_track(t, TL_TRACK_THREAD, 1, 2, -1);
    uint32_t t3 = tl_trace_track(t, TL_TRACK_THREAD, 1, 3, -1);
    fx_ev(t, t1, TL_CAT_STEP, "ProfilerStep#1", 0, 100 * MS);
    fx_ev(t, t1, TL_CAT_OPERATOR, "aten::add", 0, 10 * MS);
    if (!small) {
        fx_ev(t, t2, TL_CAT_USER, "gloo:all_reduce", 10 * MS, 30 * MS);
        fx_ev(t, t2, TL_CAT_USER, "gloo:all_reduce", 50 * MS, 40 * MS);
        fx_ev(t, t3, TL_CAT_USER, "gloo:all_reduce", 20 * MS, 30 * MS);
        fx_ev(t, t2, TL_CAT_USER, "gloo:all_reduce", 120 * MS, 30 * MS);
    }
    fx_ev(t, t2, TL_CAT_USER, "gloo:broadcast", 95 * MS, 2 * MS);
    if (kernel) {
        uint32_t s7 = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
        fx_launch(t, t1, s7, "volta_sgemm_128x64_nn", 1 * MS, 2 * MS, 5 * MS, 1);
    }
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

/* --window all reaches the GPU findings too: a step [0, 100 ms) with a kernel [10, 20) in it and
 * one after it [150, 170): idle 90 ms of the step by default, 140 ms of the 170 ms file with
 * --window all. */
TEST(gpu_idle_follows_window_all)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
    fx_ev(&t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 100 * MS);
    fx_launch(&t, th, s7, "sgemm", 5 * MS, 10 * MS, 10 * MS, 1);
    fx_launch(&t, th, s7, "sgemm", 140 * MS, 150 * MS, 20 * MS, 2);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_view_opts o = {0};
    for (int all = 0; all < 2; all++) {
        o.window_all = all;
        tl_error err = {{0}};
        tl_table *tab = tl_view_findings(&t, &o, &err);
        int r = tab ? finding_row(tab, "GPU idle") : -1;
        CHECK(r >= 0);
        if (r >= 0) {
            CHECK_STR(fx_s(tab, r, "finding"),
                      all ? "GPU idle 82% of the trace" : "GPU idle 90% of the step time");
            CHECK_EQ_INT(fx_i(tab, r, "at_stake_us"), all ? 140 * MS : 90 * MS);
        }
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

/* 60 short kernels (2 us), each launched 18 us after the one before ended (host waits: launch
 * gaps of ~1.1 ms). In a 50 ms step that is 2 % of the window: launch-bound. In a 1 s step whose
 * stream is busy 900 ms with one kernel first, 0.1 %: the stream has little to gain, no
 * finding (hta_ns_resolution: a stream 98 % busy got one for 0.9 %). */
TEST(launch_gaps_under_one_percent_are_no_finding)
{
    for (int big = 0; big < 2; big++) {
        tl_trace t;
        tl_trace_init(&t);
        uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
        uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
        int64_t len = big ? 1000 * MS : 50 * MS, base = big ? 900 * MS : 10 * MS;
        fx_ev(&t, th, TL_CAT_STEP, "ProfilerStep#1", 0, len);
        if (big)
            fx_launch(&t, th, s7, "long_gemm", 0, 1 * US, 900 * MS - 2 * US, 1000);
        for (int i = 0; i < 60; i++)
            fx_launch(&t, th, s7, "tiny_add", base + i * 20 * US, base + i * 20 * US + 12 * US,
                      2 * US, 1 + i);
        CHECK_EQ_INT(tl_trace_finish(&t), 0);
        tl_error err = {{0}};
        tl_table *tab = tl_view_findings(&t, NULL, &err);
        CHECK(tab != NULL);
        int r = tab ? finding_row(tab, "Launch-bound") : -1;
        if (big)
            CHECK_EQ_INT(r, -1);
        else
            CHECK(r >= 0);
        if (tab && (big ? r >= 0 : r < 0))
            dump(tab);
        tl_table_free(tab);
        tl_trace_free(&t);
    }
}

TEST(host_communication_on_a_cpu_only_trace)
{
    for (int k = 0; k < 3; k++) {
        tl_trace t;
        build_host_comm(&t, k == 1, k == 2);
        tl_error err = {{0}};
        tl_table *tab = tl_view_findings(&t, NULL, &err);
        CHECK(tab != NULL);
        if (!tab) {
            tl_trace_free(&t);
            return;
        }
        int r = finding_row(tab, "Host communication");
        if (k == 0) {
            CHECK(r >= 0);
            CHECK_STR(fx_s(tab, r, "finding"), "Host communication takes 82% of the step time");
            CHECK_EQ_INT(fx_i(tab, r, "at_stake_us"), 82 * MS);
            CHECK_STR(fx_s(tab, r, "evidence"),
                      "collectives on the host cover 82 ms of 100 ms per step (3 calls of "
                      "gloo:all_reduce, on threads 2, 3); the trace has no GPU work");
            /* what the distributed view shows: the same union, the calls in the window */
            tl_comm c;
            CHECK_EQ_INT(tl_comm_compute(&t, &c), 0);
            CHECK_EQ_INT(c.host_comm, 82 * MS);
            CHECK_EQ_INT(c.nhost, 4);
        } else { /* with device work the kernels' check speaks; 2 %: nothing */
            CHECK_EQ_INT(r, -1);
        }
        if ((k == 0) != (r >= 0))
            dump(tab);
        tl_table_free(tab);
        if (k == 0) { /* --window all: the whole file, [0, 150 ms): 112 ms of collectives */
            tl_view_opts o = {0};
            o.window_all = 1;
            tab = tl_view_findings(&t, &o, &err);
            r = tab ? finding_row(tab, "Host communication") : -1;
            CHECK(r >= 0);
            if (r >= 0) {
                CHECK_STR(fx_s(tab, r, "finding"), "Host communication takes 75% of the trace");
                CHECK_EQ_INT(fx_i(tab, r, "at_stake_us"), 112 * MS);
                CHECK_STR(fx_s(tab, r, "evidence"),
                          "collectives on the host cover 112 ms of 150 ms (4 calls of "
                          "gloo:all_reduce, on threads 2, 3); the trace has no GPU work");
            }
            tl_table_free(tab);
        }
        tl_trace_free(&t);
    }
}

TEST(copies_blocking_the_host_are_the_memcpy_views)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
    fx_ev(&t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 10 * MS);
    fx_ev(&t, th, TL_CAT_RUNTIME, "cudaMemcpy", 1 * MS, 2100 * US)->corr = 1;
    tl_event *c = fx_ev(&t, s7, TL_CAT_MEMCPY, "Memcpy HtoD", 1100 * US, 2 * MS);
    c->corr = 1;
    c->value = 1 << 20;
    c->copy = TL_COPY_HTOD;
    fx_ev(&t, th, TL_CAT_RUNTIME, "cudaMemcpyAsync", 15 * MS, 10 * US)->corr = 2;
    c = fx_ev(&t, s7, TL_CAT_MEMCPY, "Memcpy HtoD (Pageable -> Device)", 15100 * US, 1 * MS);
    c->corr = 2;
    c->value = 1 << 20;
    c->copy = TL_COPY_HTOD;
    c->flags |= TL_EV_PAGEABLE;
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *m = tl_view_memcpy(&t, NULL, &err), *f = tl_view_findings(&t, NULL, &err);
    CHECK(m && f);
    if (m && f) {
        int r = fx_row(m, "kind", "Memcpy HtoD");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(m, r, "calls"), 1);
        CHECK_EQ_INT(fx_i(m, r, "sync"), 1);
        CHECK_EQ_INT(fx_i(m, r, "pageable"), 0);
        r = finding_row(f, "1 synchronous copy blocks the host");
        CHECK(r >= 0);
        if (r >= 0) {
            CHECK_EQ_INT(fx_i(f, r, "at_stake_us"), 2100 * US);
            CHECK_STR(fx_s(f, r, "evidence"), "1.00 MB; host blocked 2.1 ms (0 pageable, 1 sync)");
        }
    }
    if (test_failures && f)
        dump(f);
    tl_table_free(m);
    tl_table_free(f);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(seed_trace_findings_ranked_by_time_at_stake);
    RUN(healthy_trace_has_no_findings);
    RUN(cpu_only_dataloader_bound);
    RUN(cpu_only_range_dominating);
    RUN(dominating_operator_stake_is_wall_time);
    RUN(exposed_communication_and_long_gap);
    RUN(exposed_communication_names_every_stream_it_ran_on);
    RUN(a_collective_does_not_make_its_operator_dominate);
    RUN(long_gap_on_the_compute_stream);
    RUN(a_long_gap_is_named_by_its_length_and_staked_by_its_part_in_the_steps);
    RUN(copies_blocking_the_host_are_the_memcpy_views);
    RUN(host_communication_on_a_cpu_only_trace);
    RUN(launch_gaps_under_one_percent_are_no_finding);
    RUN(gpu_idle_follows_window_all);
    return test_summary();
}
