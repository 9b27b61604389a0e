/* test_diff.c — joining two view tables by name (new, vanished, summed duplicates, ratios,
 * order by |delta|) and the diff of two known traces. */
#include "insight_fixture.h"
#include "testlib.h"

static const tl_col cols[] = {
    {"Name", "name", TL_COL_STR, 1},
    {"Calls", "calls", TL_COL_INT, 0},
    {"Total", "total_us", TL_COL_TIME, 0},
};

static void add(tl_table *t, const char *name, int64_t calls, int64_t total)
{
    int r = tl_table_add_row(t);
    tl_table_str(t, r, 0, name);
    tl_table_int(t, r, 1, calls);
    tl_table_time(t, r, 2, total);
}

TEST(join_marks_new_vanished_and_sorts_by_abs_delta)
{
    tl_table *a = tl_table_new("Ops", "ops", cols, 3);
    tl_table *b = tl_table_new("Ops", "ops", cols, 3);
    add(a, "aten::mm", 10, 5 * MS);
    add(a, "aten::add", 5, 1 * MS);
    add(a, "aten::relu", 2, 500 * US);
    add(a, "aten::mm", 2, 1 * MS); /* same name again: summed */
    add(b, "aten::gelu", 2, 2 * MS);
    add(b, "aten::add", 5, 1 * MS);
    add(b, "aten::mm", 12, 3 * MS);
    tl_error err = {{0}};
    tl_table *d = tl_table_diff(a, b, NULL, "Ops Diff", "ops_diff", 0, &err);
    CHECK(d != NULL);
    if (!d)
        return;
    CHECK_EQ_INT(d->nrows, 4);
    CHECK_STR(fx_s(d, 0, "name"), "aten::mm");
    CHECK_EQ_INT(fx_i(d, 0, "calls_before"), 12);
    CHECK_EQ_INT(fx_i(d, 0, "calls_after"), 12);
    CHECK_EQ_INT(fx_i(d, 0, "total_before_us"), 6 * MS);
    CHECK_EQ_INT(fx_i(d, 0, "total_after_us"), 3 * MS);
    CHECK_EQ_INT(fx_i(d, 0, "total_delta_us"), -3 * MS);
    CHECK_NEAR(fx_d(d, 0, "ratio"), 0.5, 1e-12);
    CHECK_STR(fx_s(d, 0, "change"), "faster");
    CHECK_STR(fx_s(d, 1, "name"), "aten::gelu");
    CHECK_STR(fx_s(d, 1, "change"), "new");
    CHECK_EQ_INT(fx_i(d, 1, "total_delta_us"), 2 * MS);
    CHECK(!fx_cell(d, 1, "total_before_us")->set);
    CHECK(!fx_cell(d, 1, "ratio")->set);
    CHECK_STR(fx_s(d, 2, "name"), "aten::relu");
    CHECK_STR(fx_s(d, 2, "change"), "vanished");
    CHECK_NEAR(fx_d(d, 2, "ratio"), 0.0, 1e-12);
    CHECK_EQ_INT(fx_i(d, 2, "total_delta_us"), -500 * US);
    CHECK_STR(fx_s(d, 3, "change"), "same");
    tl_table_free(d);

    /* top and an explicit metric */
    d = tl_table_diff(a, b, "calls", "Ops Diff", "ops_diff", 1, &err);
    CHECK(d != NULL);
    if (d) {
        CHECK_EQ_INT(d->nrows, 1);
        /* gelu +2 and relu -2 tie on |delta|: name order decides */
        CHECK_STR(fx_s(d, 0, "name"), "aten::gelu");
        CHECK_EQ_INT(fx_i(d, 0, "calls_delta"), 2);
        /* the calls are the metric: their columns once, every key once */
        for (int c = 0; c < d->ncols; c++)
            for (int k = 0; k < c; k++)
                CHECK(strcmp(d->cols[c].key, d->cols[k].key) != 0);
        tl_table_free(d);
    }
    CHECK(tl_table_diff(a, b, "no_such", "x", "x", 0, &err) == NULL);
    CHECK(strstr(err.msg, "no_such") != NULL);
    tl_table_free(a);
    tl_table_free(b);
}

/* Two steps of 10 ms (A) and 9 ms (B). A: "forward" twice 5 ms, "data" once 3 ms.
 * B: "forward" twice 4 ms, "optimizer" once 2 ms. */
static void build(tl_trace *t, int after)
{
    tl_trace_init(t);
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    int64_t step = after ? 9 * MS : 10 * MS;
    for (int s = 0; s < 2; s++) {
        fx_ev(t, th, TL_CAT_STEP, "ProfilerStep#1", s * step, step);
        fx_ev(t, th, TL_CAT_USER, "forward", s * step, after ? 4 * MS : 5 * MS);
    }
    if (after)
        fx_ev(t, th, TL_CAT_USER, "optimizer", 5 * MS, 2 * MS);
    else
        fx_ev(t, th, TL_CAT_USER, "data", 6 * MS, 3 * MS);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(diff_of_two_known_traces)
{
    tl_trace a, b;
    build(&a, 0);
    build(&b, 1);
    tl_error err = {{0}};
    tl_table *d = tl_view_diff(&a, &b, "ranges", NULL, &err);
    CHECK(d != NULL);
    if (!d)
        return;
    const tl_table *st = fx_table(d, "step_time");
    CHECK(st != NULL);
    int r = fx_row(st, "name", "Avg step");
    CHECK(r >= 0);
    CHECK_EQ_INT(fx_i(st, r, "before_us"), 10 * MS);
    CHECK_EQ_INT(fx_i(st, r, "after_us"), 9 * MS);
    CHECK_EQ_INT(fx_i(st, r, "delta_us"), -1 * MS);
    CHECK_NEAR(fx_d(st, r, "ratio"), 0.9, 1e-12);
    const tl_table *rd = fx_table(d, "ranges_diff");
    CHECK(rd != NULL);
    if (rd) {
        CHECK_EQ_INT(rd->nrows, 3);
        CHECK_STR(fx_s(rd, 0, "name"), "data");
        CHECK_STR(fx_s(rd, 0, "change"), "vanished");
        r = fx_row(rd, "name", "forward");
        CHECK_EQ_INT(fx_i(rd, r, "total_before_us"), 10 * MS);
        CHECK_EQ_INT(fx_i(rd, r, "total_after_us"), 8 * MS);
        CHECK_NEAR(fx_d(rd, r, "ratio"), 0.8, 1e-12);
        CHECK_EQ_INT(fx_i(rd, r, "calls_before"), 2);
        r = fx_row(rd, "name", "optimizer");
        CHECK_STR(fx_s(rd, r, "change"), "new");
    }
    tl_table_free(d);
    CHECK(tl_view_diff(&a, &b, "ranges,bogus", NULL, &err) == NULL);
    CHECK(strstr(err.msg, "bogus") != NULL);
    tl_trace_free(&a);
    tl_trace_free(&b);
}

/* A: 100 "fill" kernels of 2 us under aten::zeros, then sgemm 1 ms under aten::mm.
 * B: one "fused_fill" kernel of 20 us under aten::zeros, the same sgemm. */
static void build_gpu(tl_trace *t, int after)
{
    tl_trace_init(t);
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t st = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
    fx_ev(t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 10 * MS);
    int n = after ? 1 : 100;
    for (int i = 0; i < n; i++) {
        fx_ev(t, th, TL_CAT_OPERATOR, "aten::zeros", i * 20 * US, 15 * US);
        fx_launch(t, th, st, after ? "fused_fill" : "fill", i * 20 * US + 1 * US,
                  i * 20 * US + 12 * US, after ? 20 * US : 2 * US, i + 1);
    }
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::mm", 5 * MS, 20 * US);
    fx_launch(t, th, st, "sgemm", 5 * MS + 1 * US, 5100 * US, 1 * MS, 1000);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(kernel_and_ops_diff_of_a_fusion)
{
    tl_trace a, b;
    build_gpu(&a, 0);
    build_gpu(&b, 1);
    tl_error err = {{0}};
    tl_table *d = tl_view_diff(&a, &b, "kernel,ops", NULL, &err);
    CHECK(d != NULL);
    if (!d) {
        fprintf(stderr, "%s\n", err.msg);
        return;
    }
    const tl_table *k = fx_table(d, "kernel_diff");
    CHECK(k != NULL);
    if (k) {
        int r = fx_row(k, "name", "fill");
        CHECK_STR(fx_s(k, r, "change"), "vanished");
        CHECK_EQ_INT(fx_i(k, r, "calls_before"), 100);
        CHECK_EQ_INT(fx_i(k, r, "total_before_us"), 200 * US);
        r = fx_row(k, "name", "fused_fill");
        CHECK_STR(fx_s(k, r, "change"), "new");
        CHECK_EQ_INT(fx_i(k, r, "total_after_us"), 20 * US);
        r = fx_row(k, "name", "sgemm");
        CHECK_STR(fx_s(k, r, "change"), "same");
        CHECK_NEAR(fx_d(k, r, "ratio"), 1.0, 1e-12);
    }
    const tl_table *op = fx_table(d, "ops_diff");
    CHECK(op != NULL);
    if (op) {
        /* self CUDA of aten::zeros: 100 x 2 us before, 20 us after */
        int r = fx_row(op, "name", "aten::zeros");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(op, r, "self_cuda_before_us"), 200 * US);
        CHECK_EQ_INT(fx_i(op, r, "self_cuda_after_us"), 20 * US);
        CHECK_EQ_INT(fx_i(op, r, "calls_before"), 100);
        CHECK_EQ_INT(fx_i(op, r, "calls_after"), 1);
    }
    tl_table_free(d);

    /* a metric only the ops table has: kernel is skipped with a note */
    tl_view_opts o = {0};
    o.sort = "cpu_total_us";
    d = tl_view_diff(&a, &b, "kernel,ops", &o, &err);
    CHECK(d != NULL);
    if (d) {
        CHECK(fx_table(d, "kernel_diff") == NULL);
        CHECK(fx_table(d, "ops_diff") != NULL);
        tl_table_free(d);
    }
    o.sort = "no_such_metric";
    CHECK(tl_view_diff(&a, &b, NULL, &o, &err) == NULL);
    CHECK(strstr(err.msg, "no_such_metric") != NULL);
    tl_trace_free(&a);
    tl_trace_free(&b);
}

int main(void)
{
    RUN(join_marks_new_vanished_and_sorts_by_abs_delta);
    RUN(diff_of_two_known_traces);
    RUN(kernel_and_ops_diff_of_a_fusion);
    return test_summary();
}
