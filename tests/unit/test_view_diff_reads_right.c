/*
 * test_view_diff_reads_right.c — `tally diff` says what changed the way a reader means it, on
 * hand-made traces whose numbers are known by construction:
 *   - a fusion (an op's five children vanish into one shorter body) reads "faster" on the op's
 *     total, though its self time went up, and both are shown;
 *   - a change within the steps' run-to-run spread is "noise", one beyond it is not;
 *   - --views model compares the per-step breakdown (Forward, Backward, ...) as means per step;
 *   - a GPU trace and a CPU-only trace diff in either order: the ops compare on CPU time, the
 *     kernels are new or vanished, nothing fails;
 *   - a GPU annotation and the CPU range of the same name (two rows in PyTorch's table) are two
 *     rows of the ops diff, not one of their sums.
 */
#include "insight_fixture.h"
#include "testlib.h"
#include "trace/checked.h"

#include <stdlib.h>
#include <string.h>

/* Four steps of 10 ms; in each an op "rmsnorm" at 1 ms:
 *   before: 5 ms with five children "rmsnorm.k0".."k4" of 0.8 ms each (self 1 ms);
 *   after:  2 ms and no children (self 2 ms). */
static void build_fusion(tl_trace *t, int after)
{
    tl_trace_init(t);
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    for (int s = 0; s < 4; s++) {
        int64_t t0 = s * 10 * MS;
        fx_ev(t, th, TL_CAT_STEP, "ProfilerStep#1", t0, 10 * MS);
        fx_ev(t, th, TL_CAT_OPERATOR, "rmsnorm", t0 + 1 * MS, after ? 2 * MS : 5 * MS);
        for (int k = 0; k < 5 && !after; k++) {
            char name[32];
            snprintf(name, sizeof name, "rmsnorm.k%d", k);
            fx_ev(t, th, TL_CAT_OPERATOR, name, t0 + 1 * MS + 200 * US + k * 800 * US, 800 * US);
        }
    }
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(fusion_reads_faster_on_total_with_self_beside)
{
    tl_trace a, b;
    build_fusion(&a, 0);
    build_fusion(&b, 1);
    tl_error err = {{0}};
    tl_table *d = tl_view_diff(&a, &b, "ops", NULL, &err);
    CHECK(d != NULL);
    const tl_table *op = d ? fx_table(d, "ops_diff") : NULL;
    CHECK(op != NULL);
    if (op) {
        int r = fx_row(op, "name", "rmsnorm");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(op, r, "cpu_total_before_us"), 4 * 5 * MS);
        CHECK_EQ_INT(fx_i(op, r, "cpu_total_after_us"), 4 * 2 * MS);
        CHECK_EQ_INT(fx_i(op, r, "cpu_total_delta_us"), -4 * 3 * MS);
        CHECK_EQ_INT(fx_i(op, r, "self_cpu_before_us"), 4 * 1 * MS);
        CHECK_EQ_INT(fx_i(op, r, "self_cpu_after_us"), 4 * 2 * MS);
        CHECK_EQ_INT(fx_i(op, r, "self_cpu_delta_us"), 4 * 1 * MS);
        CHECK_NEAR(fx_d(op, r, "ratio"), 0.4, 1e-12);
        /* every step is 10 ms: no spread, so any change is real */
        CHECK_STR(fx_s(op, r, "change"), "faster");
        r = fx_row(op, "name", "rmsnorm.k3");
        CHECK_STR(fx_s(op, r, "change"), "vanished");
    }
    const tl_table *st = d ? fx_table(d, "step_time") : NULL;
    CHECK(st != NULL);
    if (st) {
        int r = fx_row(st, "name", "Avg step");
        CHECK_STR(fx_s(st, r, "change"), "same");
        CHECK_EQ_INT(fx_i(st, r, "noise_us"), 0);
    }
    tl_table_free(d);
    tl_trace_free(&a);
    tl_trace_free(&b);
}

/* Three steps back to back, each Forward then Backward (bwd_ms long): before the steps are 90,
 * 100, 110 ms (Forward 40, 50, 60: sd 10 ms, 10 % of the mean step), after 95, 100, 105 ms
 * (Forward 45, 50, 55: sd 5 ms) with bwd_ms 50. In the first step, range "steady" runs 30 ms
 * before and 31 ms after (+3.3 %: within 10 %), range "shrunk" 30 ms before and 20 ms after
 * (-33 %). */
static void build_steps(tl_trace *t, int after, int64_t bwd_ms)
{
    static const int64_t fwd_before[3] = {40, 50, 60}, fwd_after[3] = {45, 50, 55};
    tl_trace_init(t);
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    int64_t t0 = 0;
    for (int s = 0; s < 3; s++) {
        int64_t fwd = (after ? fwd_after[s] : fwd_before[s]) * MS, len = fwd + bwd_ms * MS;
        fx_ev(t, th, TL_CAT_STEP, "ProfilerStep#1", t0, len);
        fx_ev(t, th, TL_CAT_FORWARD, "forward", t0, fwd);
        fx_ev(t, th, TL_CAT_BACKWARD, "backward", t0 + fwd, bwd_ms * MS);
        if (s == 0) {
            fx_ev(t, th, TL_CAT_USER, "steady", t0 + 1 * MS, after ? 31 * MS : 30 * MS);
            fx_ev(t, th, TL_CAT_USER, "shrunk", t0 + fwd, after ? 20 * MS : 30 * MS);
        }
        t0 += len;
    }
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

static void build_noisy(tl_trace *t, int after)
{
    build_steps(t, after, 50);
}

TEST(changes_within_the_step_spread_are_noise)
{
    tl_trace a, b;
    build_noisy(&a, 0);
    build_noisy(&b, 1);
    tl_error err = {{0}};
    tl_table *d = tl_view_diff(&a, &b, "ranges", NULL, &err);
    CHECK(d != NULL);
    const tl_table *st = d ? fx_table(d, "step_time") : NULL;
    CHECK(st != NULL);
    if (st) {
        int r = fx_row(st, "name", "Avg step");
        CHECK_EQ_INT(fx_i(st, r, "before_us"), 100 * MS);
        CHECK_EQ_INT(fx_i(st, r, "after_us"), 100 * MS);
        CHECK_EQ_INT(fx_i(st, r, "noise_us"), 10 * MS);
        CHECK_STR(fx_s(st, r, "change"), "same");
    }
    const tl_table *rd = d ? fx_table(d, "ranges_diff") : NULL;
    CHECK(rd != NULL);
    if (rd) {
        int r = fx_row(rd, "name", "steady");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(rd, r, "total_delta_us"), 1 * MS);
        CHECK_STR(fx_s(rd, r, "change"), "noise");
        r = fx_row(rd, "name", "shrunk");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(rd, r, "total_delta_us"), -10 * MS);
        CHECK_STR(fx_s(rd, r, "change"), "faster");
    }
    tl_table_free(d);
    tl_trace_free(&a);
    tl_trace_free(&b);
}

/* All steps is judged as the mean step is: a change of every step within the spread is noise
 * on both rows (before the steps' sum was "slower" at any delta), one beyond it on neither; a
 * step only the end of the trace closed is no step (steps.h) and not in the spread either. */
TEST(all_steps_read_like_the_mean_step)
{
    static const struct {
        int64_t bwd_ms;
        const char *change;
    } cases[] = {{52, "noise"}, {80, "slower"}};
    for (int k = 0; k < 2; k++) {
        tl_trace a, b;
        build_steps(&a, 0, 50);              /* 90, 100, 110 ms: sd 10 % of the mean */
        build_steps(&b, 1, cases[k].bwd_ms); /* (45, 50, 55) + bwd: sd 5 ms */
        /* an unclosed 500 ms step after the three: not a step, not noise */
        uint32_t th = tl_trace_find_track(&a, TL_TRACK_THREAD, 1, 1, -1);
        fx_ev(&a, th, TL_CAT_STEP, "ProfilerStep#4", 300 * MS, 500 * MS)->flags |= TL_EV_UNCLOSED;
        CHECK_EQ_INT(tl_trace_finish(&a), 0);
        tl_error err = {{0}};
        tl_table *d = tl_view_diff(&a, &b, "ranges", NULL, &err);
        const tl_table *st = d ? fx_table(d, "step_time") : NULL;
        CHECK(st != NULL);
        if (st) {
            int64_t after = 3 * (50 + cases[k].bwd_ms) * MS;
            int r = fx_row(st, "name", "Avg step");
            CHECK_EQ_INT(fx_i(st, r, "before_us"), 100 * MS);
            CHECK_EQ_INT(fx_i(st, r, "noise_us"), 10 * MS);
            CHECK_STR(fx_s(st, r, "change"), cases[k].change);
            r = fx_row(st, "name", "All steps");
            CHECK_EQ_INT(fx_i(st, r, "before_us"), 300 * MS);
            CHECK_EQ_INT(fx_i(st, r, "after_us"), after);
            /* 10 % (the larger relative spread) of the larger total */
            CHECK_EQ_INT(fx_i(st, r, "noise_us"), after / 10);
            CHECK_STR(fx_s(st, r, "change"), cases[k].change);
        }
        tl_table_free(d);
        tl_trace_free(&a);
        tl_trace_free(&b);
    }
}

/* One trace without steps (operators over [0, 200 ms)) against build_steps' three steps of
 * 90 + 100 + 110 ms: the step table compares the whole spans (200 against 300 ms), and the
 * per-step tables, whose "step" is the whole trace on one side, judge no change. */
TEST(a_trace_without_steps_is_compared_by_its_span)
{
    tl_trace a, b;
    tl_trace_init(&a);
    uint32_t th = tl_trace_track(&a, TL_TRACK_THREAD, 1, 1, -1);
    fx_ev(&a, th, TL_CAT_OPERATOR, "aten::mm", 0, 120 * MS);
    fx_ev(&a, th, TL_CAT_OPERATOR, "aten::add", 150 * MS, 50 * MS);
    CHECK_EQ_INT(tl_trace_finish(&a), 0);
    build_steps(&b, 0, 50);
    tl_error err = {{0}};
    tl_table *d = tl_view_diff(&a, &b, "model,breakdown", NULL, &err);
    CHECK(d != NULL);
    const tl_table *st = d ? fx_table(d, "step_time") : NULL;
    CHECK(st != NULL && st->nrows == 1);
    if (st && st->nrows == 1) {
        CHECK_STR(fx_s(st, 0, "name"), "Trace span");
        CHECK_EQ_INT(fx_i(st, 0, "before_us"), 200 * MS);
        CHECK_EQ_INT(fx_i(st, 0, "after_us"), 300 * MS);
        CHECK_STR(fx_s(st, 0, "change"), "slower");
    }
    const char *keys[] = {"model_steps_diff", "breakdown_diff"};
    for (int k = 0; k < 2; k++) {
        const tl_table *m = d ? fx_table(d, keys[k]) : NULL;
        CHECK(m != NULL && m->nrows > 0);
        int judged = 0, said = 0;
        for (int r = 0; m && r < m->nrows; r++)
            judged += fx_cell(m, r, "change")->set;
        for (int i = 0; m && i < m->nnotes; i++)
            said += strstr(m->notes[i], "The before trace has no steps") != NULL;
        CHECK_EQ_INT(judged, 0);
        CHECK_EQ_INT(said, 1);
    }
    tl_table_free(d);
    tl_trace_free(&a);
    tl_trace_free(&b);
}

/* The mean step is cut to the ns as the views cut theirs (sum / n): steps of 1000, 1001 and
 * 1001 ns average 1000 ns in the diff as in the model view (it was rounded to 1001: 1 ns apart
 * on hta_ns_resolution). */
TEST(the_mean_step_is_the_views_to_the_ns)
{
    tl_trace a;
    tl_trace_init(&a);
    uint32_t th = tl_trace_track(&a, TL_TRACK_THREAD, 1, 1, -1);
    fx_ev(&a, th, TL_CAT_STEP, "ProfilerStep#1", 0, 1000);
    fx_ev(&a, th, TL_CAT_STEP, "ProfilerStep#2", 1000, 1001);
    fx_ev(&a, th, TL_CAT_STEP, "ProfilerStep#3", 2001, 1001);
    CHECK_EQ_INT(tl_trace_finish(&a), 0);
    tl_error err = {{0}};
    tl_table *d = tl_view_diff(&a, &a, "model", NULL, &err);
    const tl_table *st = d ? fx_table(d, "step_time") : NULL;
    const tl_table *m = d ? fx_table(d, "model_steps_diff") : NULL;
    CHECK(st && m);
    if (st && m) {
        CHECK_EQ_INT(fx_i(st, fx_row(st, "name", "Avg step"), "before_us"), 1000);
        CHECK_EQ_INT(fx_i(m, fx_row(m, "name", "Step Time"), "before_us"), 1000);
    }
    tl_table *mv = tl_view_model(&a, NULL, &err);
    CHECK(mv != NULL);
    if (mv)
        CHECK_EQ_INT(fx_i(mv, 0, "cpu_avg_us"), 1000);
    tl_table_free(mv);
    tl_table_free(d);
    tl_trace_free(&a);
}

/* A trace without steps whose events lie at both ends of the model's range (clamped from
 * ts -1e400 and 1e400 us): its span, 2^63 - 2 ns, is no double an int64 takes back; the diff
 * saturates it (the fuzzer found the conversion undefined). */
TEST(a_span_at_the_ends_of_the_range_saturates)
{
    tl_trace a;
    tl_trace_init(&a);
    uint32_t th = tl_trace_track(&a, TL_TRACK_THREAD, 1, 1, -1);
    fx_ev(&a, th, TL_CAT_OPERATOR, "first", -TL_TIME_MAX, 1);
    fx_ev(&a, th, TL_CAT_OPERATOR, "last", TL_TIME_MAX - 1, 1);
    CHECK_EQ_INT(tl_trace_finish(&a), 0);
    tl_error err = {{0}};
    tl_table *d = tl_view_diff(&a, &a, NULL, NULL, &err);
    const tl_table *st = d ? fx_table(d, "step_time") : NULL;
    CHECK(st != NULL && st->nrows == 1);
    if (st && st->nrows == 1) {
        CHECK_EQ_INT(fx_i(st, 0, "before_us"), INT64_MAX);
        CHECK_EQ_INT(fx_i(st, 0, "delta_us"), 0);
    }
    tl_table_free(d);
    tl_trace_free(&a);
}

TEST(model_compares_the_per_step_breakdown)
{
    tl_trace a, b;
    build_noisy(&a, 0);
    build_noisy(&b, 1);
    tl_error err = {{0}};
    tl_table *d = tl_view_diff(&a, &b, "model", NULL, &err);
    CHECK(d != NULL);
    if (!d) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    const tl_table *m = fx_table(d, "model_steps_diff");
    CHECK(m != NULL);
    CHECK(fx_table(d, "ops_diff") == NULL); /* only the named view */
    if (m) {
        int r = fx_row(m, "name", "Forward");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(m, r, "before_us"), 50 * MS); /* mean of 40, 50, 60 */
        CHECK_EQ_INT(fx_i(m, r, "after_us"), 50 * MS);
        CHECK_EQ_INT(fx_i(m, r, "noise_us"), 10 * MS); /* the larger sd: 10 ms before */
        CHECK_STR(fx_s(m, r, "change"), "same");
        r = fx_row(m, "name", "Backward");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(m, r, "before_us"), 50 * MS);
        CHECK_EQ_INT(fx_i(m, r, "noise_us"), 0);
    }
    tl_table_free(d);

    /* the breakdown's Step Time is TensorBoard's, and its diff says so; the model's is not */
    d = tl_view_diff(&a, &b, "model,breakdown", NULL, &err);
    const tl_table *bd = d ? fx_table(d, "breakdown_diff") : NULL;
    m = d ? fx_table(d, "model_steps_diff") : NULL;
    CHECK(bd != NULL && m != NULL);
    int said = 0;
    for (int i = 0; bd && i < bd->nnotes; i++)
        said += !strncmp(bd->notes[i], "Step Time here is TensorBoard's", 31);
    for (int i = 0; m && i < m->nnotes; i++)
        said += 10 * !strncmp(m->notes[i], "Step Time here is TensorBoard's", 31);
    CHECK_EQ_INT(said, 1);
    tl_table_free(d);
    tl_trace_free(&a);
    tl_trace_free(&b);

    /* Backward 50 -> 60 ms in every step (no spread): slower; Forward unchanged */
    build_steps(&a, 0, 50);
    build_steps(&b, 0, 60);
    d = tl_view_diff(&a, &b, "model", NULL, &err);
    m = d ? fx_table(d, "model_steps_diff") : NULL;
    CHECK(m != NULL);
    if (m) {
        int r = fx_row(m, "name", "Backward");
        CHECK_EQ_INT(fx_i(m, r, "delta_us"), 10 * MS);
        CHECK_STR(fx_s(m, r, "change"), "slower");
        r = fx_row(m, "name", "Forward");
        CHECK_STR(fx_s(m, r, "change"), "same");
    }
    tl_table_free(d);
    tl_trace_free(&a);
    tl_trace_free(&b);
}

/* One step of 10 ms with op "aten::mm" (1 ms); with gpu, it launches kernel "sgemm" (500 us). */
static void build_kind(tl_trace *t, int gpu)
{
    tl_trace_init(t);
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    fx_ev(t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 10 * MS);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::mm", 1 * MS, 1 * MS);
    if (gpu) {
        uint32_t st = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
        fx_launch(t, th, st, "sgemm", 1 * MS + 100 * US, 2 * MS, 500 * US, 1);
    }
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(gpu_and_cpu_traces_diff_in_either_order)
{
    tl_trace g, c;
    build_kind(&g, 1);
    build_kind(&c, 0);
    for (int order = 0; order < 2; order++) {
        const tl_trace *a = order ? &c : &g, *b = order ? &g : &c;
        tl_error err = {{0}};
        tl_table *d = tl_view_diff(a, b, "ops,kernel", NULL, &err);
        CHECK(d != NULL);
        if (!d) {
            fprintf(stderr, "order %d: %s\n", order, err.msg);
            continue;
        }
        const tl_table *op = fx_table(d, "ops_diff");
        CHECK(op != NULL);
        if (op) {
            /* compared on CPU time, which both have */
            int r = fx_row(op, "name", "aten::mm");
            CHECK(r >= 0);
            CHECK_EQ_INT(fx_i(op, r, "cpu_total_before_us"), 1 * MS);
            CHECK_EQ_INT(fx_i(op, r, "cpu_total_after_us"), 1 * MS);
            CHECK_STR(fx_s(op, r, "change"), "same");
            r = fx_row(op, "name", "cudaLaunchKernel");
            CHECK(r >= 0);
            CHECK_STR(fx_s(op, r, "change"), order ? "new" : "vanished");
        }
        const tl_table *k = fx_table(d, "kernel_diff");
        CHECK(k != NULL);
        if (k) {
            int r = fx_row(k, "name", "sgemm");
            CHECK(r >= 0);
            CHECK_STR(fx_s(k, r, "change"), order ? "new" : "vanished");
            CHECK_EQ_INT(fx_i(k, r, order ? "total_after_us" : "total_before_us"), 500 * US);
        }
        tl_table_free(d);

        /* a GPU column asked for: the CPU trace's side is empty, not an error */
        tl_view_opts o = {0};
        o.sort = "self_cuda_us";
        d = tl_view_diff(a, b, "ops", &o, &err);
        CHECK(d != NULL);
        op = d ? fx_table(d, "ops_diff") : NULL;
        CHECK(op != NULL);
        if (op) {
            int r = fx_row(op, "name", "aten::mm");
            CHECK_EQ_INT(fx_i(op, r, order ? "self_cuda_after_us" : "self_cuda_before_us"),
                         500 * US);
            CHECK(!fx_cell(op, r, order ? "self_cuda_before_us" : "self_cuda_after_us")->set);
            CHECK(!fx_cell(op, r, "change")->set);
        }
        tl_table_free(d);
    }
    tl_trace_free(&g);
    tl_trace_free(&c);
}

/* One step of 10 ms; a CPU range "fwd" [1, 5 ms) launching kernel "k" (2 ms), and the GPU
 * annotation "fwd" Kineto derives from it on the stream [2, 5 ms) ("gpu_user_annotation"):
 * PyTorch's table has two rows named "fwd", one call each. */
static void build_annotated(tl_trace *t)
{
    tl_trace_init(t);
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t st = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
    fx_ev(t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 10 * MS);
    fx_ev(t, th, TL_CAT_USER, "fwd", 1 * MS, 4 * MS);
    fx_launch(t, th, st, "k", 1 * MS + 100 * US, 2 * MS, 2 * MS, 1);
    fx_ev(t, st, TL_CAT_GPU_USER, "fwd", 2 * MS, 3 * MS);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(a_gpu_annotation_is_not_added_to_its_cpu_range)
{
    tl_trace a;
    build_annotated(&a);
    tl_error err = {{0}};
    tl_table *d = tl_view_diff(&a, &a, "ops", NULL, &err);
    const tl_table *op = d ? fx_table(d, "ops_diff") : NULL;
    CHECK(op != NULL);
    if (op) {
        /* not one row "fwd" of 2 calls and CUDA total 2 ms (kernel) + 3 ms (annotation span) */
        int r = fx_row(op, "name", "fwd");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(op, r, "calls_before"), 1);
        CHECK_EQ_INT(fx_i(op, r, "cuda_total_before_us"), 2 * MS);
        r = fx_row(op, "name", "fwd [GPU annotation]");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(op, r, "calls_after"), 1);
        CHECK_EQ_INT(fx_i(op, r, "cuda_total_after_us"), 3 * MS);
        CHECK_STR(fx_s(op, r, "change"), "same");
    }
    tl_table_free(d);
    /* the ops table itself is PyTorch's: two rows named "fwd" */
    tl_table *o = tl_view_ops(&a, NULL, &err);
    int named = 0;
    for (int r = 0; o && r < o->nrows; r++)
        named += !strcmp(fx_s(o, r, "name"), "fwd");
    CHECK_EQ_INT(named, 2);
    tl_table_free(o);
    tl_trace_free(&a);
}

int main(void)
{
    RUN(fusion_reads_faster_on_total_with_self_beside);
    RUN(changes_within_the_step_spread_are_noise);
    RUN(all_steps_read_like_the_mean_step);
    RUN(model_compares_the_per_step_breakdown);
    RUN(a_span_at_the_ends_of_the_range_saturates);
    RUN(the_mean_step_is_the_views_to_the_ns);
    RUN(a_trace_without_steps_is_compared_by_its_span);
    RUN(gpu_and_cpu_traces_diff_in_either_order);
    RUN(a_gpu_annotation_is_not_added_to_its_cpu_range);
    return test_summary();
}
