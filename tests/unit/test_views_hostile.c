/*
 * test_views_hostile.c — the views on hand-made traces whose durations and byte counts sit at
 * the limits the model allows (times within +-TL_TIME_MAX, one event up to 2 * TL_TIME_MAX
 * long, sizes up to INT64_MAX): every sum that leaves int64 saturates at INT64_MAX instead of
 * wrapping (the CI runs this under UBSan, whose reports abort), and no time or size a view
 * shows is negative. Each test names the sums it drives.
 */
#include "analysis/insight.h"
#include "analysis/views.h"
#include "insight_fixture.h"
#include "report/summary.h"
#include "testlib.h"
#include "trace/checked.h"

#include <stdio.h>
#include <stdlib.h>

#define T0  (-TL_TIME_MAX)    /* the earliest time the model holds */
#define BIG (2 * TL_TIME_MAX) /* the longest event: from T0 to TL_TIME_MAX */

/* A memory event (TL_CAT_MEMORY) of `bytes` on thread th at ts, on the device or the host. */
static void mem_ev(tl_trace *t, uint32_t th, int64_t ts, int64_t bytes, int device)
{
    tl_event *e = fx_ev(t, th, TL_CAT_MEMORY, "[memory]", ts, 0);
    e->value = bytes;
    e->flags |= TL_EV_INSTANT | (device ? TL_EV_MEM_DEVICE : 0);
}

/* A row of the allocator's memory table with its totals after it. */
static void memrow(tl_trace *t, uint32_t th, int64_t ts, int64_t bytes, uint64_t addr,
                   int64_t allocated)
{
    tl_memev *r = tl_trace_add_mem(t);
    r->track = th;
    r->device = 0;
    r->ts = ts;
    r->bytes = bytes;
    r->addr = addr;
    r->total_allocated = allocated;
    r->total_reserved = allocated;
    t->mem_addr_known = 1;
}

/*
 * One step over the whole time range. Threads 1 and 2 each run "aten::mm" over (almost) all of
 * it and launch a "gemm" kernel on stream 7 lasting BIG - 100 ns: CPU and CUDA totals of
 * aten::mm, the kernel's total and the stream's kernel time are each two durations of ~2^63,
 * so they saturate; the two kernels are in flight together for ~2^63 ns (the queue's area).
 * Inside thread 1's aten::mm, two host and two device allocations of INT64_MAX bytes (the
 * prefix sums and the memory columns saturate); two pageable copies of INT64_MAX bytes on
 * stream 8; the allocator's table spans the whole range (the memory timeline's slices).
 * Thread 3 runs a range "block" nested in another "block", both ~2^63 ns long.
 */
static void build_huge(tl_trace *t)
{
    tl_trace_init(t);
    uint32_t th1 = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t th2 = tl_trace_track(t, TL_TRACK_THREAD, 1, 2, -1);
    uint32_t s7 = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
    uint32_t s8 = tl_trace_track(t, TL_TRACK_STREAM, 1, 8, 0);
    fx_ev(t, th1, TL_CAT_STEP, "ProfilerStep#1", T0, BIG)->value = 1;
    fx_ev(t, th1, TL_CAT_OPERATOR, "aten::mm", T0 + 1, BIG - 1);
    fx_ev(t, th2, TL_CAT_OPERATOR, "aten::mm", T0 + 1, BIG - 1);
    fx_launch(t, th1, s7, "gemm", T0 + 2, T0 + 100, BIG - 100, 1);
    fx_launch(t, th2, s7, "gemm", T0 + 3, T0 + 100, BIG - 100, 2);
    mem_ev(t, th1, T0 + 20 * US, INT64_MAX, 0);
    mem_ev(t, th1, T0 + 30 * US, INT64_MAX, 0);
    mem_ev(t, th1, T0 + 40 * US, INT64_MAX, 1);
    mem_ev(t, th1, T0 + 50 * US, INT64_MAX, 1);
    for (int64_t k = 0; k < 2; k++) {
        int64_t at = T0 + 1000 + k * 100000;
        fx_ev(t, th1, TL_CAT_RUNTIME, "cudaMemcpyAsync", at, 10 * US)->corr = 10 + k;
        tl_event *c =
            fx_ev(t, s8, TL_CAT_MEMCPY, "Memcpy HtoD (Pageable -> Device)", at + 20 * US, 10 * US);
        c->corr = 10 + k;
        c->value = INT64_MAX;
        c->copy = TL_COPY_HTOD;
        c->flags |= TL_EV_PAGEABLE | TL_EV_SYNC_COPY;
    }
    uint32_t th3 = tl_trace_track(t, TL_TRACK_THREAD, 1, 3, -1);
    fx_ev(t, th3, TL_CAT_USER, "block", T0 + 1, BIG - 1);
    fx_ev(t, th3, TL_CAT_USER, "block", T0 + 2, BIG - 3); /* nested in the first */
    memrow(t, th1, T0 + 20, INT64_C(1) << 62, 0x1000, INT64_C(1) << 62);
    memrow(t, th1, TL_TIME_MAX - 1, INT64_C(1) << 62, 0x2000, INT64_MAX);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

/* No time or size cell of any table of the chain is negative. */
static void check_no_negative(const tl_table *tab)
{
    for (; tab; tab = tab->next)
        for (int r = 0; r < tab->nrows; r++)
            for (int c = 0; c < tab->ncols; c++) {
                const tl_cell *x = &tab->cells[(size_t)r * tab->ncols + c];
                if (x->set &&
                    (tab->cols[c].type == TL_COL_TIME || tab->cols[c].type == TL_COL_BYTES)) {
                    if (x->i < 0)
                        fprintf(stderr, "  %s: row %d, %s = %lld\n", tab->key, r, tab->cols[c].key,
                                (long long)x->i);
                    CHECK(x->i >= 0);
                }
            }
}

/* view_ops: CPU and CUDA totals, self CUDA, the memory prefix sums and the memory columns. */
TEST(ops_totals_and_memory_saturate)
{
    tl_trace t;
    build_huge(&t);
    tl_error err = {{0}};
    tl_table *tab = tl_view_ops(&t, NULL, &err);
    CHECK(tab != NULL);
    if (tab) {
        int r = fx_row(tab, "name", "aten::mm");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(tab, r, "calls"), 2);
        CHECK_EQ_INT(fx_i(tab, r, "cpu_total_us"), INT64_MAX);
        CHECK_EQ_INT(fx_i(tab, r, "self_cuda_us"), INT64_MAX);
        CHECK_EQ_INT(fx_i(tab, r, "cuda_total_us"), INT64_MAX);
        CHECK_EQ_INT(fx_i(tab, r, "cpu_mem_bytes"), INT64_MAX);
        CHECK_EQ_INT(fx_i(tab, r, "cuda_mem_bytes"), INT64_MAX);
        CHECK_EQ_INT(fx_i(tab, r, "self_cuda_mem_bytes"), INT64_MAX);
        CHECK(fx_d(tab, r, "self_cuda_pct") >= 0 && fx_d(tab, r, "self_cuda_pct") <= 100);
        check_no_negative(tab);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

/* view_operator: device totals of the calls and of the operators. */
TEST(operator_totals_saturate)
{
    tl_trace t;
    build_huge(&t);
    tl_error err = {{0}};
    tl_table *tab = tl_view_operator(&t, NULL, &err);
    CHECK(tab != NULL);
    if (tab) {
        int r = fx_row(tab, "name", "aten::mm");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(tab, r, "cpu_total_us"), INT64_MAX);
        CHECK_EQ_INT(fx_i(tab, r, "device_total_us"), INT64_MAX);
        CHECK_EQ_INT(fx_i(tab, r, "gpu_total_us"), INT64_MAX);
        check_no_negative(tab);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

/* view_kernel: the kernel's total and the sum behind the ratios. */
TEST(kernel_total_saturates)
{
    tl_trace t;
    build_huge(&t);
    tl_error err = {{0}};
    tl_table *tab = tl_view_kernel(&t, NULL, &err);
    CHECK(tab != NULL);
    if (tab) {
        int r = fx_row(tab, "name", "gemm");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(tab, r, "calls"), 2);
        CHECK_EQ_INT(fx_i(tab, r, "total_us"), INT64_MAX);
        CHECK_EQ_INT(fx_i(tab, r, "max_us"), BIG - 100);
        CHECK(fx_d(tab, r, "ratio_pct") >= 0 && fx_d(tab, r, "ratio_pct") <= 100);
        check_no_negative(tab);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

/* view_memcpy: bytes of two copies of INT64_MAX bytes each. */
TEST(memcpy_bytes_saturate)
{
    tl_trace t;
    build_huge(&t);
    tl_error err = {{0}};
    tl_table *tab = tl_view_memcpy(&t, NULL, &err);
    CHECK(tab != NULL);
    if (tab) {
        int found = 0;
        for (int r = 0; r < tab->nrows; r++)
            if (fx_i(tab, r, "calls") == 2) {
                found = 1;
                CHECK_EQ_INT(fx_i(tab, r, "bytes"), INT64_MAX);
                CHECK_EQ_INT(fx_i(tab, r, "total_us"), 20 * US);
            }
        CHECK(found);
        check_no_negative(tab);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

/* view_ranges: the total of a range nested in one of the same name. */
TEST(ranges_total_saturates)
{
    tl_trace t;
    build_huge(&t);
    tl_error err = {{0}};
    tl_table *tab = tl_view_ranges(&t, NULL, &err);
    CHECK(tab != NULL);
    if (tab) {
        int r = fx_row(tab, "name", "block");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(tab, r, "calls"), 2);
        CHECK_EQ_INT(fx_i(tab, r, "total_us"), INT64_MAX);
        CHECK_EQ_INT(fx_i(tab, r, "self_us"), BIG - 1); /* 2 ns of the outer, all the inner */
        check_no_negative(tab);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

/* insight_idle (the queue's time-weighted area, kernel time per stream) and view_gaps (the
 * streams' kernel time added up). */
TEST(idle_and_gaps_saturate)
{
    tl_trace t;
    build_huge(&t);
    tl_idle x;
    CHECK_EQ_INT(tl_idle_compute(&t, 0, 0, &x), 0);
    int seen = 0;
    for (size_t i = 0; i < x.nstreams; i++) {
        const tl_stream_stats *s = &x.streams[i];
        if (s->kernels != 2)
            continue;
        seen = 1;
        CHECK_EQ_INT(s->kernel_time, INT64_MAX);
        CHECK_EQ_INT(s->queue_max, 2);
        CHECK(s->queue_avg > 0 && s->queue_avg <= 2);
    }
    CHECK(seen);
    tl_idle_free(&x);
    tl_error err = {{0}};
    tl_table *tab = tl_view_gaps(&t, NULL, &err);
    CHECK(tab != NULL);
    check_no_negative(tab);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* view_memory: the timeline's slice ends over a span of ~2^63 ns (a double of 2^63 used to
 * be converted to int64) and the levels up to INT64_MAX. */
TEST(memory_timeline_over_the_whole_range)
{
    tl_trace t;
    build_huge(&t);
    tl_error err = {{0}};
    tl_table *tab = tl_view_memory(&t, NULL, &err);
    CHECK(tab != NULL);
    const tl_table *tl = fx_table(tab, "memory_timeline");
    CHECK(tl != NULL);
    if (tl) {
        CHECK_EQ_INT(tl->nrows, 1);
        CHECK_EQ_INT(fx_i(tl, 0, "high_bytes"), INT64_MAX);
        CHECK(strlen(fx_s(tl, 0, "sparkline")) > 0);
    }
    check_no_negative(tab);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* view_memory: levels a few bytes apart near INT64_MAX are the same double: the sparkline's
 * bar was 0/0 (NaN) converted to an int (UBSan; a crash in release, found by fuzz_views). */
TEST(memory_timeline_levels_one_double_apart)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::empty", 0, 100);
    memrow(&t, th, 6000, 92, 0x1000, INT64_MAX); /* from INT64_MAX - 92 to INT64_MAX */
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_memory(&t, NULL, &err);
    const tl_table *tl = tab ? fx_table(tab, "memory_timeline") : NULL;
    CHECK(tl != NULL && tl->nrows == 1);
    if (tl && tl->nrows == 1) {
        CHECK_EQ_INT(fx_i(tl, 0, "high_bytes"), INT64_MAX);
        CHECK_EQ_INT(fx_i(tl, 0, "low_bytes"), INT64_MAX - 92);
        CHECK(strlen(fx_s(tl, 0, "sparkline")) == 48 * 3); /* a bar (3 bytes) a slice */
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* Every registered view in every format, and the findings and the rest on the same trace:
 * nothing overflows (UBSan) and nothing shown is negative. */
TEST(every_view_every_format)
{
    tl_trace t;
    build_huge(&t);
    FILE *null_out = fopen("/dev/null", "w");
    CHECK(null_out != NULL);
    static const tl_format fmts[] = {TL_FMT_TEXT, TL_FMT_CSV, TL_FMT_JSON};
    for (int v = 0; v < tl_nview_defs && null_out; v++) {
        tl_error err = {{0}};
        tl_table *tab = tl_view_defs[v].fn(&t, NULL, &err);
        if (!tab)
            fprintf(stderr, "  view %s: %s\n", tl_view_defs[v].name, err.msg);
        CHECK(tab != NULL);
        check_no_negative(tab);
        tl_table_free(tab);
        for (size_t f = 0; f < sizeof fmts / sizeof *fmts; f++) {
            tl_report_opts o;
            memset(&o, 0, sizeof o);
            o.views = tl_view_defs[v].name;
            o.fmt = fmts[f];
            o.header = 1;
            CHECK_EQ_INT(tl_report_write(null_out, &t, &o, &err), 0);
        }
    }
    if (null_out)
        fclose(null_out);
    tl_trace_free(&t);
}

/* tl_view_gpu on a trace without device work: no device to sort (qsort of NULL). */
TEST(gpu_view_without_devices)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::add", 0, 10 * US);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_gpu(&t, NULL, &err);
    CHECK(tab != NULL);
    if (tab)
        CHECK_EQ_INT(tab->nrows, 0);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* summary.c's metadata: the start in Unix time (t0 + wall_offset) saturates. */
TEST(meta_start_unix_saturates)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::add", 1 * MS, 10 * US);
    t.wall_offset = INT64_MAX;
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    char *json = tl_trace_meta_json(&t);
    CHECK(json != NULL);
    if (json) {
        const char *p = strstr(json, "\"start_unix_us\": ");
        CHECK(p != NULL);
        if (p) /* INT64_MAX ns as a double (2^63) in us, printed %.3f; a wrapped sum is < 0 */
            CHECK(!strncmp(p + 17, "9223372036854776.000", 20));
    }
    free(json);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(ops_totals_and_memory_saturate);
    RUN(operator_totals_saturate);
    RUN(kernel_total_saturates);
    RUN(memcpy_bytes_saturate);
    RUN(ranges_total_saturates);
    RUN(idle_and_gaps_saturate);
    RUN(memory_timeline_over_the_whole_range);
    RUN(memory_timeline_levels_one_double_apart);
    RUN(every_view_every_format);
    RUN(gpu_view_without_devices);
    RUN(meta_start_unix_saturates);
    return test_summary();
}
