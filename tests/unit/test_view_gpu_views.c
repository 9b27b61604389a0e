/*
 * test_view_gpu_views.c — Device, Kernel, Memory manipulation and Operator views on the
 * hand-made trace of test_view_gpu_fixture.h; every expected number is worked out there by
 * hand (µs).
 */
#include "analysis/views.h"
#include "render_fixture.h"
#include "test_view_gpu_fixture.h"
#include "testlib.h"

#include <stdlib.h>

/* The kernel and operator tests run twice: the table held as cells, and made as it is read
 * (the report's). */
static int made_rows;
static const tl_view_opts *plain(void)
{
    static tl_view_opts o;
    o = (tl_view_opts){.made_rows = made_rows};
    return &o;
}

TEST(device_busy_and_utilization)
{
    tl_trace t;
    fx_gpu_trace(&t);
    tl_error err;
    tl_table *tab = tl_view_device(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    CHECK_EQ_INT(tab->nrows, 3); /* GPU 0, stream 7, stream 8 */
    int d = fx_row(tab, "GPU 0", 0), s7 = fx_row(tab, "stream 7", 0),
        s8 = fx_row(tab, "stream 8", 0);
    CHECK(d == 0 && s7 == 1 && s8 == 2);
    /* window = union of the steps = 1500 us; kernels/copies clipped to it */
    CHECK_EQ_INT(FX_I(tab, s7, "kernels"), 4);
    CHECK_EQ_INT(FX_I(tab, s7, "kernel_busy_us"), 370 * US);
    CHECK_EQ_INT(FX_I(tab, s7, "copy_busy_us"), 0);
    CHECK_EQ_INT(FX_I(tab, s8, "kernels"), 3);
    CHECK_EQ_INT(FX_I(tab, s8, "kernel_busy_us"), 120 * US); /* late clipped at 1500 */
    CHECK_EQ_INT(FX_I(tab, s8, "copies"), 2);
    CHECK_EQ_INT(FX_I(tab, s8, "copy_busy_us"), 110 * US);
    CHECK_EQ_INT(FX_I(tab, s8, "busy_us"), 230 * US);
    /* device: the union over streams (gemm on s7 covers the copy on s8) */
    CHECK_EQ_INT(FX_I(tab, d, "kernels"), 7);
    CHECK_EQ_INT(FX_I(tab, d, "kernel_busy_us"), 490 * US);
    CHECK_EQ_INT(FX_I(tab, d, "copy_busy_us"), 110 * US);
    CHECK_EQ_INT(FX_I(tab, d, "busy_us"), 500 * US);
    CHECK_NEAR(FX_D(tab, d, "util_pct"), 100.0 * 500 / 1500, 1e-9);
    CHECK_NEAR(FX_D(tab, d, "kernel_util_pct"), 100.0 * 490 / 1500, 1e-9);
    CHECK_NEAR(FX_D(tab, s8, "copy_util_pct"), 100.0 * 110 / 1500, 1e-9);
    CHECK_EQ_INT(FX_I(tab, s8, "stream"), 8);
    CHECK(!FX_SET(tab, d, "stream"));
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(device_without_device_events)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t h = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_add(&t, h, TL_CAT_OPERATOR, "aten::add", 0, 10, 0);
    tl_trace_finish(&t);
    tl_error err;
    tl_table *tab = tl_view_device(&t, NULL, &err);
    CHECK(tab != NULL && tab->nrows == 0 && tab->nnotes == 1);
    tl_table_free(tab);
    tab = tl_view_kernel(&t, NULL, &err);
    CHECK(tab != NULL && tab->nrows == 0 && tab->nnotes == 1);
    tl_table_free(tab);
    tab = tl_view_memcpy(&t, NULL, &err);
    CHECK(tab != NULL && tab->nrows == 0 && tab->nnotes == 1);
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(kernel_per_name)
{
    tl_trace t;
    fx_gpu_trace(&t);
    tl_error err;
    tl_table *tab = tl_view_kernel(&t, plain(), &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    CHECK(!tab->rows == !made_rows);
    CHECK_EQ_INT(tab->nrows, 5);
    /* sorted by total: gemm 300, late 100, relu_k 90, bias 30, orphan 20 */
    CHECK(fx_row(tab, "gemm", 0) == 0 && fx_row(tab, "late", 0) == 1 &&
          fx_row(tab, "relu_k", 0) == 2 && fx_row(tab, "bias", 0) == 3 &&
          fx_row(tab, "orphan", 0) == 4);
    int g = 0, r = 2;
    CHECK_EQ_INT(FX_I(tab, g, "calls"), 2);
    CHECK_EQ_INT(FX_I(tab, g, "total_us"), 300 * US);
    CHECK_EQ_INT(FX_I(tab, g, "avg_us"), 150 * US);
    CHECK_EQ_INT(FX_I(tab, g, "max_us"), 200 * US);
    CHECK_EQ_INT(FX_I(tab, g, "min_us"), 100 * US);
    CHECK_NEAR(FX_D(tab, g, "ratio_pct"), 100.0 * 300 / 540, 1e-9);
    CHECK_EQ_INT(FX_I(tab, r, "avg_us"), 45 * US);
    CHECK_EQ_INT(FX_I(tab, r, "min_us"), 40 * US);
    double sum = 0;
    for (int i = 0; i < tab->nrows; i++)
        sum += FX_D(tab, i, "ratio_pct");
    CHECK_NEAR(sum, 100.0, 1e-9);
    tl_table_free(tab);

    tl_view_opts o = *plain();
    o.per_stream = 1;
    o.sort = "calls";
    o.top = 4; /* gemm (2 calls), then bias, relu_k@s7, relu_k@s8 in first-seen order */
    tab = tl_view_kernel(&t, &o, &err);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 4);
        CHECK(fx_row(tab, "gemm", 0) == 0); /* the only name with 2 calls on one stream */
        int a = fx_row(tab, "relu_k", 0), b = fx_row(tab, "relu_k", 1);
        CHECK(a > 0 && b > 0); /* one row per stream, 1 call each */
        if (a > 0 && b > 0) {
            CHECK_EQ_INT(FX_I(tab, a, "calls") + FX_I(tab, b, "calls"), 2);
            CHECK(FX_I(tab, a, "stream") != FX_I(tab, b, "stream"));
        }
        tl_table_free(tab);
    }
    o.sort = "nonsense";
    tab = tl_view_kernel(&t, &o, &err);
    CHECK(tab == NULL && strstr(err.msg, "nonsense") != NULL);
    tl_trace_free(&t);
}

TEST(memcpy_by_kind)
{
    tl_trace t;
    fx_gpu_trace(&t);
    tl_error err;
    tl_table *tab = tl_view_memcpy(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    CHECK_EQ_INT(tab->nrows, 2);
    int h = fx_row(tab, "Memcpy HtoD", 0), m = fx_row(tab, "Memset", 0);
    CHECK(h == 0 && m == 1);
    CHECK_EQ_INT(FX_I(tab, h, "calls"), 1);
    CHECK_EQ_INT(FX_I(tab, h, "bytes"), 1000000);
    CHECK_EQ_INT(FX_I(tab, h, "total_us"), 100 * US);
    CHECK_NEAR(FX_D(tab, h, "bandwidth_gbps"), 10.0, 1e-9); /* 1e6 B / 100 us */
    CHECK_NEAR(FX_D(tab, h, "ratio_pct"), 100.0 * 100 / 1500, 1e-9);
    CHECK_EQ_INT(FX_I(tab, h, "pageable"), 1);
    CHECK_EQ_INT(FX_I(tab, h, "sync"), 0);
    CHECK_NEAR(FX_D(tab, m, "bandwidth_gbps"), 0.1, 1e-9);
    CHECK_EQ_INT(FX_I(tab, m, "bytes"), 1000);
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(operator_cpu_and_gpu)
{
    tl_trace t;
    fx_gpu_trace(&t);
    tl_error err;
    tl_table *tab = tl_view_operator(&t, plain(), &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    CHECK(!tab->rows == !made_rows);
    CHECK_EQ_INT(tab->nrows, 3);
    int l = fx_row(tab, "aten::linear", 0), a = fx_row(tab, "aten::addmm", 0),
        r = fx_row(tab, "aten::relu", 0);
    CHECK(l == 0 && a == 1 && r == 2); /* by CPU total */
    CHECK_EQ_INT(FX_I(tab, l, "calls"), 2);
    CHECK_EQ_INT(FX_I(tab, l, "cpu_total_us"), 400 * US);
    CHECK_EQ_INT(FX_I(tab, l, "self_cpu_us"), 180 * US);
    CHECK_EQ_INT(FX_I(tab, l, "cpu_avg_us"), 200 * US);
    CHECK_EQ_INT(FX_I(tab, l, "cpu_max_us"), 300 * US);
    CHECK_EQ_INT(FX_I(tab, l, "cpu_min_us"), 100 * US);
    CHECK_EQ_INT(FX_I(tab, l, "gpu_total_us"), 330 * US); /* gemm 200 + bias 30 + gemm 100 */
    CHECK_EQ_INT(FX_I(tab, l, "gpu_max_us"), 230 * US);
    CHECK_EQ_INT(FX_I(tab, l, "gpu_min_us"), 100 * US);
    CHECK_EQ_INT(FX_I(tab, l, "gpu_avg_us"), 165 * US);
    CHECK_EQ_INT(FX_I(tab, l, "device_total_us"), 430 * US); /* + the 100 us copy */
    CHECK_NEAR(FX_D(tab, l, "cpu_ratio_pct"), 100.0 * 400 / 700, 1e-9);
    CHECK_NEAR(FX_D(tab, l, "gpu_ratio_pct"), 100.0 * 430 / 780, 1e-9);
    CHECK_EQ_INT(FX_I(tab, a, "self_cpu_us"), 170 * US);
    CHECK_EQ_INT(FX_I(tab, a, "gpu_total_us"), 200 * US);
    CHECK_EQ_INT(FX_I(tab, a, "device_total_us"), 300 * US);
    CHECK_EQ_INT(FX_I(tab, r, "self_cpu_us"), 90 * US);
    CHECK_EQ_INT(FX_I(tab, r, "gpu_total_us"), 50 * US);
    /* relu_k under "block" (no operator), late, orphan and the memset have no operator */
    int found = 0;
    for (int i = 0; i < tab->nnotes; i++)
        if (strstr(tab->notes[i], "4 device items"))
            found = 1;
    CHECK(found);
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(operator_expand)
{
    tl_trace t;
    fx_gpu_trace(&t);
    tl_error err;
    tl_view_opts o = {0};
    o.expand = 1;
    tl_table *tab = tl_view_operator(&t, &o, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    /* linear, bias, gemm | addmm, gemm, Memcpy | relu, relu_k */
    CHECK_EQ_INT(tab->nrows, 8);
    const char *want[] = {"aten::linear", "bias",  "gemm",
                          "aten::addmm",  "gemm",  "Memcpy HtoD (Pageable -> Device)",
                          "aten::relu",   "relu_k"};
    for (int i = 0; i < 8 && i < tab->nrows; i++) {
        CHECK_STR(tab->cells[(size_t)i * tab->ncols].s, want[i]);
        CHECK_EQ_INT(tab->cells[(size_t)i * tab->ncols].indent, i == 0 || i == 3 || i == 6 ? 0 : 1);
    }
    CHECK_EQ_INT(FX_I(tab, 1, "gpu_total_us"), 30 * US);
    CHECK_EQ_INT(FX_I(tab, 2, "gpu_total_us"), 100 * US); /* linear's own gemm (2nd step) */
    CHECK_EQ_INT(FX_I(tab, 4, "gpu_total_us"), 200 * US); /* addmm's gemm */
    CHECK_NEAR(FX_D(tab, 4, "gpu_ratio_pct"), 100.0 * 200 / 300, 1e-9);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* Every linked kernel is attributed once: the operators' own device time (expand rows) plus
 * the unattributed work equals all device work. */
TEST(operator_counts_each_kernel_once)
{
    tl_trace t;
    fx_gpu_trace(&t);
    tl_error err;
    tl_view_opts o = {0};
    o.expand = 1;
    tl_table *tab = tl_view_operator(&t, &o, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    int64_t own = 0;
    for (int i = 0; i < tab->nrows; i++)
        if (tab->cells[(size_t)i * tab->ncols].indent == 1)
            own += FX_I(tab, i, "device_total_us");
    /* all device work 650 us minus relu_k@block 40, late 100, orphan 20, memset 10 */
    CHECK_EQ_INT(own, (650 - 170) * US);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* The report's tables (made rows) write what the held ones write, sorted by every key, cut or
 * not; the operator view also on a trace without device work (no GPU columns). */
TEST(operator_and_kernel_made_rows_write_the_same)
{
    static const char *const op_keys[] = {
        NULL,        "name",    "calls",   "self",         "cpu_max",       "cpu_min",
        "gpu_total", "gpu_avg", "gpu_min", "device_total", "gpu_ratio_pct", "cpu_ratio_pct"};
    static const char *const k_keys[] = {NULL, "name", "calls", "avg", "max", "min", "ratio"};
    static const char cpu_only[] =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":50},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":20},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"c\",\"pid\":1,\"tid\":2,\"ts\":1,\"dur\":50},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":2,\"ts\":60,\"dur\":7}]"
        "}";
    tl_trace gpu, cpu;
    fx_gpu_trace(&gpu);
    tl_trace_init(&cpu);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_json_mem(&cpu, cpu_only, strlen(cpu_only), "cpu.json", &err), 0);
    for (int asc = 0; asc < 2; asc++) {
        for (size_t k = 0; k < sizeof op_keys / sizeof *op_keys; k++)
            for (int w = 0; w < 2; w++) {
                tl_trace *t = w ? &cpu : &gpu;
                tl_view_opts a = {.sort = op_keys[k], .ascending = asc, .top = asc ? 2 : 0};
                tl_view_opts b = a;
                b.made_rows = 1;
                tl_table *x = tl_view_operator(t, &a, &err), *y = tl_view_operator(t, &b, &err);
                /* the CPU-only trace has no GPU columns to sort by */
                CHECK(!x == !y);
                CHECK(!x || (y && !x->rows && y->rows && fx_same_writes(x, y)));
                tl_table_free(x);
                tl_table_free(y);
            }
        for (size_t k = 0; k < sizeof k_keys / sizeof *k_keys; k++)
            for (int ps = 0; ps < 2; ps++) {
                tl_view_opts a = {
                    .sort = k_keys[k], .ascending = asc, .top = asc ? 3 : 0, .per_stream = ps};
                tl_view_opts b = a;
                b.made_rows = 1;
                tl_table *x = tl_view_kernel(&gpu, &a, &err), *y = tl_view_kernel(&gpu, &b, &err);
                CHECK(x && y && !x->rows && y->rows);
                CHECK(!x || !y || fx_same_writes(x, y));
                tl_table_free(x);
                tl_table_free(y);
            }
    }
    tl_trace_free(&gpu);
    tl_trace_free(&cpu);
}

int main(void)
{
    RUN(device_busy_and_utilization);
    RUN(device_without_device_events);
    for (made_rows = 0; made_rows < 2; made_rows++) {
        RUN(kernel_per_name);
        RUN(operator_cpu_and_gpu);
    }
    RUN(memcpy_by_kind);
    RUN(operator_expand);
    RUN(operator_counts_each_kernel_once);
    RUN(operator_and_kernel_made_rows_write_the_same);
    return test_summary();
}
