/*
 * test_ops_table.c — the ops table (PyTorch's key_averages().table() meaning) on hand-made
 * traces: the GPU trace of test_view_gpu_fixture.h (CUDA columns, memory columns, runtime
 * calls as rows, device rows, [memory] rows), PyTorch's merge of a same-named only child and
 * its dropped utility events, input-shape grouping, async spans, sort keys and --top.
 */
#include "analysis/views.h"
#include "render_fixture.h"
#include "test_view_gpu_fixture.h"
#include "testlib.h"

#include <stdlib.h>

/* Every test runs twice: the table held as cells, and made as it is read (the report's and
 * `tally ops`'s). */
static int made_rows;

static tl_table *ops(const tl_trace *t, const char *sort, int by_shape, int top)
{
    tl_view_opts o = {.made_rows = made_rows};
    o.sort = sort;
    o.group_by_shape = by_shape;
    o.top = top;
    tl_error err = {{0}};
    tl_table *tab = tl_view_ops(t, &o, &err);
    if (!tab)
        fprintf(stderr, "  ops view: %s\n", err.msg);
    return tab;
}

TEST(ops_gpu_rows_and_columns)
{
    tl_trace t;
    fx_gpu_trace(&t);
    tl_table *tab = ops(&t, "none", 0, 0);
    CHECK(tab != NULL);
    if (!tab)
        return;
    /* order of first appearance */
    const char *order[] = {"ProfilerStep*",
                           "aten::linear",
                           "aten::addmm",
                           "cudaLaunchKernel",
                           "cudaMemcpyAsync",
                           "gemm",
                           "Memcpy HtoD (Pageable -> Device)",
                           "bias",
                           "block",
                           "aten::relu",
                           "relu_k",
                           "orphan",
                           "Memset (Device)",
                           "late",
                           "[memory]"};
    int n = (int)(sizeof order / sizeof order[0]);
    CHECK_EQ_INT(tab->nrows, n);
    for (int i = 0; i < n && i < tab->nrows; i++)
        CHECK_STR(tl_table_cell(tab, i, 0)->s, order[i]);
    /* every column torch shows when there is device time and device memory */
    const char *keys[] = {
        "self_cpu_pct",        "self_cpu_us",   "cpu_total_pct",      "cpu_total_us",
        "cpu_avg_us",          "self_cuda_us",  "self_cuda_pct",      "cuda_total_us",
        "cuda_avg_us",         "cpu_mem_bytes", "self_cpu_mem_bytes", "cuda_mem_bytes",
        "self_cuda_mem_bytes", "calls"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        CHECK(tl_table_find_col(tab, keys[k]) >= 0);
    CHECK(tl_table_find_col(tab, "input_shapes") < 0);

    int s = fx_row(tab, "ProfilerStep*", 0);
    CHECK_EQ_INT(FX_I(tab, s, "calls"), 2);
    CHECK_EQ_INT(FX_I(tab, s, "cpu_total_us"), 1500 * US);
    CHECK_EQ_INT(FX_I(tab, s, "self_cpu_us"), 795 * US); /* 1000-300-300 + 500-100-5 */
    CHECK_EQ_INT(FX_I(tab, s, "cuda_total_us"), 620 * US);
    CHECK_EQ_INT(FX_I(tab, s, "self_cuda_us"), 100 * US); /* "late", launched from the step */
    CHECK_EQ_INT(FX_I(tab, s, "cpu_mem_bytes"), 1024);
    CHECK_EQ_INT(FX_I(tab, s, "cuda_mem_bytes"), 4096);
    CHECK_EQ_INT(FX_I(tab, s, "self_cpu_mem_bytes"), 0);
    CHECK_EQ_INT(FX_I(tab, s, "self_cuda_mem_bytes"), 0);
    CHECK_NEAR(FX_D(tab, s, "self_cpu_pct"), 100.0 * 795 / 1500, 1e-9);
    CHECK_NEAR(FX_D(tab, s, "cpu_total_pct"), 100.0, 1e-9);

    int l = fx_row(tab, "aten::linear", 0);
    CHECK_EQ_INT(FX_I(tab, l, "calls"), 2);
    CHECK_EQ_INT(FX_I(tab, l, "self_cpu_us"), 180 * US);
    CHECK_EQ_INT(FX_I(tab, l, "cuda_total_us"), 430 * US); /* kernels + the copy, as torch */
    CHECK_EQ_INT(FX_I(tab, l, "self_cuda_us"), 130 * US);
    CHECK_EQ_INT(FX_I(tab, l, "cuda_avg_us"), 215 * US);
    CHECK_EQ_INT(FX_I(tab, l, "cuda_mem_bytes"), 4096);
    CHECK_EQ_INT(FX_I(tab, l, "self_cuda_mem_bytes"), 0);

    int a = fx_row(tab, "aten::addmm", 0);
    CHECK_EQ_INT(FX_I(tab, a, "self_cpu_us"), 170 * US);
    CHECK_EQ_INT(FX_I(tab, a, "self_cuda_us"), 300 * US);
    CHECK_EQ_INT(FX_I(tab, a, "self_cuda_mem_bytes"), 4096);

    int k = fx_row(tab, "cudaLaunchKernel", 0);
    CHECK_EQ_INT(FX_I(tab, k, "calls"), 6);
    CHECK_EQ_INT(FX_I(tab, k, "cpu_total_us"), 65 * US);
    CHECK_EQ_INT(FX_I(tab, k, "self_cpu_us"), 65 * US);
    CHECK_EQ_INT(FX_I(tab, k, "cuda_total_us"), 0);

    int b = fx_row(tab, "block", 0);
    CHECK_EQ_INT(FX_I(tab, b, "self_cpu_us"), 190 * US);
    CHECK_EQ_INT(FX_I(tab, b, "cuda_total_us"), 90 * US);
    CHECK_EQ_INT(FX_I(tab, b, "self_cuda_us"), 40 * US);
    CHECK_EQ_INT(FX_I(tab, b, "cpu_mem_bytes"), 1024);
    CHECK_EQ_INT(FX_I(tab, b, "self_cpu_mem_bytes"), 0);
    CHECK_EQ_INT(FX_I(tab, fx_row(tab, "aten::relu", 0), "self_cpu_mem_bytes"), 1024);

    /* device rows: CUDA columns only */
    int g = fx_row(tab, "gemm", 0);
    CHECK_EQ_INT(FX_I(tab, g, "calls"), 2);
    CHECK_EQ_INT(FX_I(tab, g, "cpu_total_us"), 0);
    CHECK_EQ_INT(FX_I(tab, g, "self_cuda_us"), 300 * US);
    CHECK_EQ_INT(FX_I(tab, g, "cuda_total_us"), 300 * US);
    CHECK_NEAR(FX_D(tab, g, "self_cuda_pct"), 100.0 * 300 / 650, 1e-9);
    CHECK_EQ_INT(FX_I(tab, fx_row(tab, "relu_k", 0), "calls"), 2);

    /* memory outside every event */
    int m = fx_row(tab, "[memory]", 0);
    CHECK_EQ_INT(FX_I(tab, m, "calls"), 1);
    CHECK_EQ_INT(FX_I(tab, m, "cpu_mem_bytes"), -512);

    /* footer, and the sums behind the percentages */
    int64_t self_cpu = 0, self_cuda_dev = 0;
    for (int r = 0; r < tab->nrows; r++) {
        self_cpu += FX_I(tab, r, "self_cpu_us");
        if (FX_I(tab, r, "cpu_total_us") == 0)
            self_cuda_dev += FX_I(tab, r, "self_cuda_us");
    }
    CHECK_EQ_INT(self_cpu, 1500 * US);
    CHECK_EQ_INT(self_cuda_dev, 650 * US);
    CHECK(tab->nnotes >= 2);
    if (tab->nnotes >= 2) {
        CHECK_STR(tab->notes[0], "Self CPU time total: 1.500ms");
        CHECK_STR(tab->notes[1], "Self CUDA time total: 650.000us");
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(ops_default_sort_and_torch_keys)
{
    tl_trace t;
    fx_gpu_trace(&t);
    /* default with device time: self CUDA, descending */
    tl_table *tab = ops(&t, NULL, 0, 3);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 3);
        CHECK_STR(tl_table_cell(tab, 0, 0)->s,
                  "aten::addmm"); /* 300, first seen before gemm's 300 */
        CHECK_STR(tl_table_cell(tab, 1, 0)->s, "gemm");
        tl_table_free(tab);
    }
    /* torch attribute names map to columns */
    tab = ops(&t, "cpu_time_total", 0, 1);
    CHECK(tab && !strcmp(tl_table_cell(tab, 0, 0)->s, "ProfilerStep*"));
    tl_table_free(tab);
    tab = ops(&t, "count", 0, 1);
    CHECK(tab && !strcmp(tl_table_cell(tab, 0, 0)->s, "cudaLaunchKernel"));
    tl_table_free(tab);
    tab = ops(&t, "self_cuda_memory_usage", 0, 1);
    CHECK(tab && !strcmp(tl_table_cell(tab, 0, 0)->s, "aten::addmm"));
    tl_table_free(tab);
    tab = ops(&t, "cpu_memory_usage", 0, 0);
    CHECK(tab && !strcmp(tl_table_cell(tab, tab->nrows - 1, 0)->s, "[memory]"));
    tl_table_free(tab);
    tab = ops(&t, "self_cpu_us", 0, 1);
    CHECK(tab && !strcmp(tl_table_cell(tab, 0, 0)->s, "ProfilerStep*"));
    tl_table_free(tab);
    tl_view_opts o = {0};
    o.sort = "bogus";
    tl_error err;
    CHECK(tl_view_ops(&t, &o, &err) == NULL && strstr(err.msg, "bogus"));
    tl_trace_free(&t);
}

/* PyTorch drops its utility events and merges a span into its same-named only child. */
TEST(ops_merges_duplicate_child_and_drops_utility_events)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t h = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s = tl_trace_track(&t, TL_TRACK_STREAM, 0, 7, 0);
    fx_add(&t, h, TL_CAT_OPERATOR, "aten::to", 0, 100, 0);
    fx_add(&t, h, TL_CAT_OPERATOR, "aten::to", 10, 80, 0);
    fx_add(&t, h, TL_CAT_OPERATOR, "aten::_to_copy", 20, 60, 0);
    fx_add(&t, h, TL_CAT_RUNTIME, "cudaMemcpyAsync", 30, 10, 9);
    fx_add(&t, h, TL_CAT_OPERATOR, "aten::is_leaf", 92, 3, 0);
    fx_add(&t, s, TL_CAT_MEMCPY, "Memcpy HtoD", 50, 50, 9);
    tl_trace_finish(&t);
    tl_table *tab = ops(&t, "none", 0, 0);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 4); /* aten::to, aten::_to_copy, cudaMemcpyAsync, Memcpy */
        int to = fx_row(tab, "aten::to", 0);
        CHECK_EQ_INT(FX_I(tab, to, "calls"), 1);
        CHECK_EQ_INT(FX_I(tab, to, "cpu_total_us"), 100 * US);
        CHECK_EQ_INT(FX_I(tab, to, "self_cpu_us"), 40 * US); /* is_leaf's 3 us stay in it */
        CHECK_EQ_INT(FX_I(tab, to, "cuda_total_us"), 50 * US);
        CHECK_EQ_INT(FX_I(tab, to, "self_cuda_us"), 0);
        int c = fx_row(tab, "aten::_to_copy", 0);
        CHECK_EQ_INT(FX_I(tab, c, "self_cpu_us"), 50 * US);
        CHECK_EQ_INT(FX_I(tab, c, "self_cuda_us"), 50 * US);
        CHECK(fx_row(tab, "aten::is_leaf", 0) < 0);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

TEST(ops_group_by_input_shape)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t h = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    const char *s1 = "[[2, 3], [3, 4]]", *s2 = "[[4, 4], [4, 4]]";
    fx_add(&t, h, TL_CAT_OPERATOR, "aten::mm", 0, 10, 0)->args =
        tl_intern(&t.strings, s1, strlen(s1));
    fx_add(&t, h, TL_CAT_OPERATOR, "aten::mm", 20, 30, 0)->args =
        tl_intern(&t.strings, s2, strlen(s2));
    fx_add(&t, h, TL_CAT_OPERATOR, "aten::mm", 60, 25, 0)->args =
        tl_intern(&t.strings, s1, strlen(s1));
    tl_trace_finish(&t);
    tl_table *tab = ops(&t, "cpu_time_total", 1, 0);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 2);
        CHECK(tl_table_find_col(tab, "input_shapes") >= 0);
        CHECK(tl_table_find_col(tab, "self_cuda_us") < 0);  /* no device time: no CUDA columns */
        CHECK(tl_table_find_col(tab, "cpu_mem_bytes") < 0); /* no memory events */
        CHECK_STR(fx_cell(tab, 0, "input_shapes")->s, s1);  /* 10 + 25 us */
        CHECK_EQ_INT(FX_I(tab, 0, "calls"), 2);
        CHECK_EQ_INT(FX_I(tab, 0, "cpu_total_us"), 35 * US);
        CHECK_EQ_INT(FX_I(tab, 0, "cpu_avg_us"), 17500);
        CHECK_STR(fx_cell(tab, 1, "input_shapes")->s, s2);
        CHECK_EQ_INT(FX_I(tab, 1, "calls"), 1);
        CHECK_EQ_INT(FX_I(tab, 1, "cpu_total_us"), 30 * US);
        tl_table_free(tab);
    }
    tab = ops(&t, NULL, 0, 0);
    CHECK(tab && tab->nrows == 1 && FX_I(tab, 0, "calls") == 3);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* An async span (begin and end on different threads) has CPU total but no self time, and
 * is nobody's child. */
TEST(ops_async_span)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t h = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_add(&t, h, TL_CAT_USER, "outer", 0, 100, 0);
    fx_add(&t, h, TL_CAT_USER, "async", 10, 50, 0)->flags = TL_EV_ASYNC;
    tl_trace_finish(&t);
    tl_table *tab = ops(&t, "none", 0, 0);
    CHECK(tab != NULL);
    if (tab) {
        int o = fx_row(tab, "outer", 0), a = fx_row(tab, "async", 0);
        CHECK_EQ_INT(FX_I(tab, o, "self_cpu_us"), 100 * US);
        CHECK_EQ_INT(FX_I(tab, a, "cpu_total_us"), 50 * US);
        CHECK_EQ_INT(FX_I(tab, a, "self_cpu_us"), 0);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

/* Kineto writes a gpu_user_annotation 1 ns before and 1 ns after the kernels it covers;
 * PyTorch's table has the true span, so the annotation row has the kernel's time and comes
 * after the kernel's row (Kineto lists annotations after their kernels). */
TEST(ops_gpu_annotation_true_span)
{
    tl_trace t;
    tl_trace_init(&t);
    t.source = TL_SRC_KINETO;
    uint32_t s = tl_trace_track(&t, TL_TRACK_STREAM, 0, 7, 0);
    tl_event *a = fx_add(&t, s, TL_CAT_GPU_USER, "forward", 0, 0, 0);
    a->ts = 99;
    a->dur = 1002;
    tl_event *k = fx_add(&t, s, TL_CAT_KERNEL, "gemm", 0, 0, 0);
    k->ts = 100;
    k->dur = 1000;
    tl_trace_finish(&t);
    tl_table *tab = ops(&t, "self_cuda_time_total", 0, 0);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 2);
        CHECK_STR(tl_table_cell(tab, 0, 0)->s, "gemm");
        CHECK_STR(tl_table_cell(tab, 1, 0)->s, "forward");
        CHECK_EQ_INT(FX_I(tab, 1, "self_cuda_us"), 1000);
        /* annotations are not device work: the Self CUDA % denominator is the kernel alone */
        CHECK_NEAR(FX_D(tab, 1, "self_cuda_pct"), 100.0, 1e-9);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

/* Shapes as PyTorch prints them: Python list spacing whatever the trace kept, and a list of
 * tensors (a TensorList argument) shown as []. */
TEST(ops_input_shapes_as_torch_prints_them)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t h = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    const char *a = "[[2,3],[3,4]]", *b = "[[2, 3], [3, 4]]", *l = "[[[512, 256], [512]], [], []]";
    fx_add(&t, h, TL_CAT_OPERATOR, "aten::mm", 0, 10, 0)->args =
        tl_intern(&t.strings, a, strlen(a));
    fx_add(&t, h, TL_CAT_OPERATOR, "aten::mm", 20, 10, 0)->args =
        tl_intern(&t.strings, b, strlen(b));
    fx_add(&t, h, TL_CAT_OPERATOR, "aten::_foreach_add_", 40, 10, 0)->args =
        tl_intern(&t.strings, l, strlen(l));
    tl_trace_finish(&t);
    tl_table *tab = ops(&t, "none", 1, 0);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 2);
        CHECK_STR(fx_cell(tab, 0, "input_shapes")->s, "[[2, 3], [3, 4]]");
        CHECK_EQ_INT(FX_I(tab, 0, "calls"), 2);
        CHECK_STR(fx_cell(tab, 1, "input_shapes")->s, "[[], [], []]");
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

/* The report's table (made rows: packed to the columns shown) writes what the held one
 * writes: CUDA, memory and shape columns, every sort key, --top, each format. */
TEST(ops_made_rows_write_the_same)
{
    static const char *const keys[] = {NULL,
                                       "none",
                                       "self_cpu_us",
                                       "calls",
                                       "name",
                                       "cuda_total_us",
                                       "self_cuda_pct",
                                       "cpu_mem_bytes",
                                       "self_cuda_mem_bytes",
                                       "input_shapes"};
    tl_trace t;
    fx_gpu_trace(&t);
    int made = 0;
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        for (int v = 0; v < 4; v++) {
            tl_view_opts a = {.sort = keys[k],
                              .ascending = v & 1,
                              .top = v & 2 ? 3 : 0,
                              .group_by_shape = k % 2 || v == 3};
            tl_view_opts b = a;
            b.made_rows = 1;
            tl_error e1 = {{0}}, e2 = {{0}};
            tl_table *x = tl_view_ops(&t, &a, &e1), *y = tl_view_ops(&t, &b, &e2);
            CHECK((x == NULL) == (y == NULL) && strcmp(e1.msg, e2.msg) == 0);
            made += y && y->rows != NULL;
            CHECK(!x || !y || fx_same_writes(x, y));
            tl_table_free(x);
            tl_table_free(y);
        }
    CHECK(made > 0);
    tl_trace_free(&t);
    /* a trace with no rows: the same note, no error */
    tl_trace_init(&t);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_view_opts a = {0}, b = {.made_rows = 1};
    tl_table *x = tl_view_ops(&t, &a, NULL), *y = tl_view_ops(&t, &b, NULL);
    CHECK(x && y && y->nrows == 0 && fx_same_writes(x, y));
    tl_table_free(x);
    tl_table_free(y);
    tl_trace_free(&t);
}

int main(void)
{
    for (made_rows = 0; made_rows < 2; made_rows++) {
        RUN(ops_gpu_rows_and_columns);
        RUN(ops_default_sort_and_torch_keys);
        RUN(ops_merges_duplicate_child_and_drops_utility_events);
        RUN(ops_group_by_input_shape);
        RUN(ops_async_span);
        RUN(ops_gpu_annotation_true_span);
        RUN(ops_input_shapes_as_torch_prints_them);
    }
    RUN(ops_made_rows_write_the_same);
    return test_summary();
}
