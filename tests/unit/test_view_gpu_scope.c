/* test_view_gpu_scope.c — the gpu view (TraceLens's GPU timeline) and --window / --linked-only
 * on every GPU view, on a hand-made trace whose numbers are known by construction.
 *
 * Times in µs. Step [0, 1000). Host calls launch (call time → op):
 *   corr 1 at 50:   gemm          stream 7  [100, 400)   computation
 *   corr 2 at 60:   ncclAllReduce stream 20 [300, 700)   communication
 *   corr 3 at 70:   Memcpy HtoD   stream 9  [350, 800)   memcpy
 *   corr 4 at 80:   Memset        stream 7  [900, 950)   computation (TraceLens puts memsets there)
 *   corr 5 at 1050: late          stream 7  [1100, 1150) launched after the step
 *   no launch:      orphan        stream 7  [1200, 1300) not linked
 * Steps: comp = 300 + 50 = 350, comm = 400, memcpy = 450, exposed comm = [400, 700) = 300,
 * exposed memcpy = [700, 800) = 100, busy = [100, 800) + [900, 950) = 750, total = 1000,
 * idle = 250; 350 + 300 + 100 + 250 = 1000.
 * All, linked only: + late: comp 400, busy 800, total = 1150 - 100 = 1050, idle 250.
 * All: + orphan: comp 500, busy 900, total 1200, idle 300.
 */
#include "insight_fixture.h"
#include "testlib.h"

static void build(tl_trace *t)
{
    tl_trace_init(t);
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(t, TL_TRACK_STREAM, 0, 7, 0);
    uint32_t s9 = tl_trace_track(t, TL_TRACK_STREAM, 0, 9, 0);
    uint32_t s20 = tl_trace_track(t, TL_TRACK_STREAM, 0, 20, 0);
    tl_trace_device(t, 0);
    fx_ev(t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 1000 * US);
    fx_launch(t, th, s7, "gemm", 50 * US, 100 * US, 300 * US, 1);
    fx_launch(t, th, s20, "ncclDevKernel_AllReduce_Sum_f32", 60 * US, 300 * US, 400 * US, 2);
    fx_ev(t, th, TL_CAT_RUNTIME, "cudaMemcpyAsync", 70 * US, 10 * US)->corr = 3;
    tl_event *e = fx_ev(t, s9, TL_CAT_MEMCPY, "Memcpy HtoD (Pinned -> Device)", 350 * US, 450 * US);
    e->corr = 3;
    e->copy = TL_COPY_HTOD;
    fx_ev(t, th, TL_CAT_RUNTIME, "cudaMemsetAsync", 80 * US, 10 * US)->corr = 4;
    fx_ev(t, s7, TL_CAT_MEMSET, "Memset (Device)", 900 * US, 50 * US)->corr = 4;
    fx_launch(t, th, s7, "late", 1050 * US, 1100 * US, 50 * US, 5);
    fx_ev(t, s7, TL_CAT_KERNEL, "orphan", 1200 * US, 100 * US);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

static void check_gpu_row(const tl_table *tab, int64_t comp, int64_t busy, int64_t total)
{
    CHECK_EQ_INT(tab->nrows, 1);
    CHECK_EQ_INT(fx_i(tab, 0, "computation_us"), comp);
    CHECK_EQ_INT(fx_i(tab, 0, "communication_us"), 400 * US);
    CHECK_EQ_INT(fx_i(tab, 0, "memcpy_us"), 450 * US);
    CHECK_EQ_INT(fx_i(tab, 0, "exposed_comm_us"), 300 * US);
    CHECK_EQ_INT(fx_i(tab, 0, "exposed_memcpy_us"), 100 * US);
    CHECK_EQ_INT(fx_i(tab, 0, "busy_us"), busy);
    CHECK_EQ_INT(fx_i(tab, 0, "total_us"), total);
    CHECK_EQ_INT(fx_i(tab, 0, "idle_us"), total - busy);
    /* TraceLens's identity */
    CHECK_EQ_INT(fx_i(tab, 0, "computation_us") + fx_i(tab, 0, "exposed_comm_us") +
                     fx_i(tab, 0, "exposed_memcpy_us") + fx_i(tab, 0, "idle_us"),
                 fx_i(tab, 0, "total_us"));
}

TEST(gpu_view_steps_all_linked)
{
    tl_trace t;
    build(&t);
    tl_error err = {{0}};
    tl_view_opts o = {0};
    tl_table *tab = tl_view_gpu(&t, &o, &err);
    check_gpu_row(tab, 350 * US, 750 * US, 1000 * US);
    CHECK_EQ_INT(fx_i(tab, 0, "ops"), 4);
    tl_table_free(tab);

    o.window_all = 1;
    o.linked_only = 1;
    tab = tl_view_gpu(&t, &o, &err);
    check_gpu_row(tab, 400 * US, 800 * US, 1050 * US);
    CHECK_EQ_INT(fx_i(tab, 0, "ops"), 5);
    tl_table_free(tab);

    o.linked_only = 0;
    tab = tl_view_gpu(&t, &o, &err);
    check_gpu_row(tab, 500 * US, 900 * US, 1200 * US);
    CHECK_EQ_INT(fx_i(tab, 0, "ops"), 6);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* A second device: one row per device, then "all devices", the pool of both. */
TEST(gpu_view_pools_devices)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t a = tl_trace_track(&t, TL_TRACK_STREAM, 0, 7, 0);
    uint32_t b = tl_trace_track(&t, TL_TRACK_STREAM, 0, 7, 1);
    fx_launch(&t, th, a, "k", 0, 100 * US, 100 * US, 1);
    fx_launch(&t, th, b, "k", 0, 150 * US, 100 * US, 2);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_view_opts o = {0};
    o.window_all = 1;
    tl_error err = {{0}};
    tl_table *tab = tl_view_gpu(&t, &o, &err);
    CHECK_EQ_INT(tab->nrows, 3);
    CHECK_STR(fx_s(tab, 2, "name"), "all devices");
    CHECK_EQ_INT(fx_i(tab, 0, "busy_us"), 100 * US);
    CHECK_EQ_INT(fx_i(tab, 1, "busy_us"), 100 * US);
    CHECK_EQ_INT(fx_i(tab, 2, "busy_us"), 150 * US);
    CHECK_EQ_INT(fx_i(tab, 2, "total_us"), 150 * US);
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(kernel_memcpy_device_views_follow_the_scope)
{
    tl_trace t;
    build(&t);
    tl_error err = {{0}};
    tl_view_opts steps = {0}, all = {0}, linked = {0};
    all.window_all = 1;
    linked.window_all = 1;
    linked.linked_only = 1;
    int64_t want[3] = {2, 4, 3}; /* kernels launched in the step; all; all linked */
    const tl_view_opts *os[3] = {&steps, &all, &linked};
    for (int k = 0; k < 3; k++) {
        tl_table *tab = tl_view_kernel(&t, os[k], &err);
        int64_t calls = 0;
        for (int r = 0; r < tab->nrows; r++)
            calls += fx_i(tab, r, "calls");
        CHECK_EQ_INT(calls, want[k]);
        tl_table_free(tab);
        tab = tl_view_device(&t, os[k], &err);
        CHECK_EQ_INT(fx_i(tab, 0, "kernels"), want[k]);
        tl_table_free(tab);
    }
    /* the copy and the memset were launched in the step */
    tl_table *tab = tl_view_memcpy(&t, &steps, &err);
    CHECK_EQ_INT(tab->nrows, 2);
    tl_table_free(tab);
    /* distributed: comm 400, comp (kernels only) = gemm 300, overlap 100, exposed 300 */
    tab = tl_view_distributed(&t, &steps, &err);
    int r = fx_row(tab, "name", "Exposed communication");
    CHECK(r >= 0);
    CHECK_EQ_INT(fx_i(tab, r, "time_us"), 300 * US);
    tl_table_free(tab);
    /* the whole file: + late and orphan as computation, nothing more exposed */
    tab = tl_view_distributed(&t, &all, &err);
    r = fx_row(tab, "name", "Computation (GPU)");
    CHECK_EQ_INT(fx_i(tab, r, "time_us"), 450 * US);
    CHECK_EQ_INT(fx_i(tab, r, "calls"), 3);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* Roles, the window and --stream in the gaps view. Stream 7 computes, 20 communicates, 9 only
 * copies (side). Over the step, stream 7 runs gemm [100, 400) and the memset [900, 950): span
 * 850, busy 350, one gap of 500 (launched in time, long: other). */
TEST(gaps_roles_window_and_stream)
{
    tl_trace t;
    build(&t);
    tl_error err = {{0}};
    tl_view_opts o = {0};
    tl_table *tab = tl_view_gaps(&t, &o, &err);
    const tl_table *idle = fx_table(tab, "gpu_idle"), *gaps = fx_table(tab, "gpu_gaps");
    CHECK_EQ_INT(idle->nrows, 3);
    for (int r = 0; r < idle->nrows; r++) {
        int64_t s = fx_i(idle, r, "stream");
        CHECK_STR(fx_s(idle, r, "role"), s == 7 ? "compute" : s == 20 ? "communication" : "side");
        if (s == 7) {
            CHECK_EQ_INT(fx_i(idle, r, "span_us"), 850 * US);
            CHECK_EQ_INT(fx_i(idle, r, "busy_us"), 350 * US);
            CHECK_EQ_INT(fx_i(idle, r, "other_wait_us"), 500 * US);
        }
    }
    CHECK_EQ_INT(gaps->nrows, 1); /* the compute stream's only gap */
    CHECK_EQ_INT(fx_i(gaps, 0, "stream"), 7);
    tl_table_free(tab);

    /* the whole file: stream 7 spans [100, 1300) */
    o.window_all = 1;
    tab = tl_view_gaps(&t, &o, &err);
    idle = fx_table(tab, "gpu_idle");
    int r = fx_row(idle, "role", "compute");
    CHECK_EQ_INT(fx_i(idle, r, "span_us"), 1200 * US);
    CHECK_EQ_INT(fx_i(idle, r, "busy_us"), 500 * US);
    tl_table_free(tab);

    /* --stream 20: that stream alone */
    o.stream_set = 1;
    o.stream = 20;
    tab = tl_view_gaps(&t, &o, &err);
    idle = fx_table(tab, "gpu_idle");
    CHECK_EQ_INT(idle->nrows, 1);
    CHECK_EQ_INT(fx_i(idle, 0, "stream"), 20);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* The overview's GPU part under the same scope. Kernels: steps: gemm [100, 400) and the
 * collective [300, 700) (launched in the step): 2 calls, 600 us, 60% of the 1000 us step; all,
 * linked only: + late [1100, 1150): 3 calls, 650 us; all: + orphan [1200, 1300): 4, 750 us. */
static void check_overview_kernels(const tl_trace *t, const tl_view_opts *o, int64_t calls,
                                   int64_t time)
{
    tl_error err = {{0}};
    tl_table *tab = tl_view_overview(t, o, &err);
    const tl_table *g = fx_table(tab, "overview_gpu");
    int r = fx_row(g, "type", "Kernel");
    CHECK(r >= 0);
    CHECK_EQ_INT(fx_i(g, r, "calls"), calls);
    CHECK_EQ_INT(fx_i(g, r, "gpu_time_us"), time);
    r = fx_row(g, "type", "Memset"); /* launched at 80, in the step: in every scope */
    CHECK_EQ_INT(fx_i(g, r, "calls"), 1);
    tl_table_free(tab);
}

/* Kernels of no length in a trace without steps: five at 100..104 us, then five at one moment.
 * The window is the span; its last moment holds an op of no length too, so every view counts
 * all five (the kernel view listed four, and "No kernels" for five at one moment). */
TEST(kernels_of_no_length_at_the_end_of_the_span_count)
{
    for (int same = 0; same < 2; same++) {
        tl_trace t;
        tl_trace_init(&t);
        uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
        const char *names[] = {"k0", "k1", "k2", "k3", "k4"};
        for (int i = 0; i < 5; i++)
            fx_ev(&t, s7, TL_CAT_KERNEL, names[i], (100 + (same ? 0 : i)) * US, 0);
        CHECK_EQ_INT(tl_trace_finish(&t), 0);
        tl_error err = {{0}};
        tl_table *k = tl_view_kernel(&t, NULL, &err);
        CHECK(k != NULL);
        CHECK_EQ_INT(k ? k->nrows : -1, 5);
        tl_table_free(k);
        tl_gpu_scope sc;
        CHECK_EQ_INT(tl_gpu_scope_init(&t, NULL, &sc), 0);
        int touched = 0;
        for (size_t i = 0; i < t.nev; i++)
            touched +=
                tl_gpu_scope_touches(&sc, &t.ev[i]) && tl_gpu_scope_counts(&t, &sc, &t.ev[i]);
        CHECK_EQ_INT(touched, 5);
        tl_gpu_scope_free(&sc);
        tl_trace_free(&t);
    }
}

TEST(overview_gpu_follows_the_scope)
{
    tl_trace t;
    build(&t);
    tl_view_opts o = {0};
    check_overview_kernels(&t, &o, 2, 600 * US);
    tl_error err = {{0}};
    tl_table *tab = tl_view_overview(&t, &o, &err);
    const tl_table *g = fx_table(tab, "overview_gpu");
    CHECK_NEAR(fx_d(g, fx_row(g, "type", "Kernel"), "ratio_pct"), 60.0, 1e-9);
    tl_table_free(tab);
    o.window_all = 1;
    o.linked_only = 1;
    check_overview_kernels(&t, &o, 3, 650 * US);
    o.linked_only = 0;
    check_overview_kernels(&t, &o, 4, 750 * US);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(overview_gpu_follows_the_scope);
    RUN(kernels_of_no_length_at_the_end_of_the_span_count);
    RUN(gpu_view_steps_all_linked);
    RUN(gpu_view_pools_devices);
    RUN(kernel_memcpy_device_views_follow_the_scope);
    RUN(gaps_roles_window_and_stream);
    return test_summary();
}
