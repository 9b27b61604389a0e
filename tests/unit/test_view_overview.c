/*
 * test_view_overview.c — Overview numbers on hand-made traces: unions per type, ratios to the
 * step time, phases + Other = step time, and the GPU part; on a PyTorch trace, the Model view's
 * phases.
 */
#include "analysis/analysis.h"
#include "analysis/insight.h"
#include "testlib.h"
#include "views_fixture.h"

#include <stdlib.h>

TEST(overview_unions_and_ratios)
{
    tl_trace t;
    fx_training(&t);
    tl_error err = {{0}};
    tl_table *tab = tl_view_overview(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    CHECK_EQ_INT(fx_time(tab, "ProfileStep", "cpu_time_us"), MS(300));
    CHECK_EQ_INT(fx_cell(tab, fx_row(tab, 0, "ProfileStep"), "calls")->i, 3);
    /* Dataloader: [0,10) [100,130) [220,230) and the nested-in-time [222,228) on thread 2. */
    CHECK_EQ_INT(fx_time(tab, "Dataloader", "cpu_time_us"), MS(50));
    CHECK_EQ_INT(fx_cell(tab, fx_row(tab, 0, "Dataloader"), "calls")->i, 4);
    /* Forward: the nested forward [15,35) is inside [10,40): counted once. */
    CHECK_EQ_INT(fx_time(tab, "Forward", "cpu_time_us"), MS(95));
    CHECK_EQ_INT(fx_time(tab, "Backward", "cpu_time_us"), MS(100));
    CHECK_EQ_INT(fx_time(tab, "Optimization", "cpu_time_us"), MS(35));
    CHECK_EQ_INT(fx_time(tab, "Other", "cpu_time_us"), MS(20));
    /* UserDefined: attn [20,30) ⊃ softmax, attn [240,250) on thread 2; eval is after the steps */
    CHECK_EQ_INT(fx_time(tab, "UserDefined", "cpu_time_us"), MS(20));
    CHECK_EQ_INT(fx_cell(tab, fx_row(tab, 0, "UserDefined"), "calls")->i, 3);
    CHECK_NEAR(fx_cell(tab, fx_row(tab, 0, "Dataloader"), "ratio_pct")->d, 100.0 * 50 / 300, 1e-9);
    /* The ratios that add up: phases + Other = 100% of the step time. */
    double sum = 0;
    int64_t tsum = 0;
    const char *parts[] = {"Dataloader", "Forward", "Backward", "Optimization", "Other"};
    for (int i = 0; i < 5; i++) {
        sum += fx_cell(tab, fx_row(tab, 0, parts[i]), "ratio_pct")->d;
        tsum += fx_time(tab, parts[i], "cpu_time_us");
        CHECK_EQ_INT(fx_cell(tab, fx_row(tab, 0, parts[i]), "type")->indent, 1);
    }
    CHECK_NEAR(sum, 100.0, 1e-9);
    CHECK_EQ_INT(tsum, MS(300));
    CHECK(tab->next == NULL); /* no device events, no GPU part */
    CHECK(tab->nnotes >= 1);
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(overview_gpu_part)
{
    tl_trace t;
    fx_gpu(&t);
    tl_error err = {{0}};
    tl_table *tab = tl_view_overview(&t, NULL, &err);
    CHECK(tab != NULL && tab->next != NULL);
    if (!tab || !tab->next) {
        tl_table_free(tab);
        tl_trace_free(&t);
        return;
    }
    CHECK_EQ_INT(fx_time(tab, "CudaRuntime", "cpu_time_us"), MS(7));
    CHECK_EQ_INT(fx_cell(tab, fx_row(tab, 0, "CudaRuntime"), "calls")->i, 4);
    CHECK_EQ_INT(fx_time(tab, "Forward", "cpu_time_us"), MS(40));
    CHECK_EQ_INT(fx_time(tab, "Backward", "cpu_time_us"), MS(40));
    CHECK_EQ_INT(fx_time(tab, "Other", "cpu_time_us"), MS(20));
    const tl_table *g = tab->next;
    CHECK_STR(g->key, "overview_gpu");
    /* Kernels [25,45) [45,55) [65,85) [96,110) and relu [40,50) on another stream:
     * union [25,55) + [65,85) + [96,110) = 30 + 20 + 14. The kernel after the step's end is
     * kept: it was launched inside the step. */
    CHECK_EQ_INT(fx_time(g, "Kernel", "gpu_time_us"), MS(64));
    CHECK_EQ_INT(fx_cell(g, fx_row(g, 0, "Kernel"), "calls")->i, 5);
    CHECK_EQ_INT(fx_time(g, "Memcpy", "gpu_time_us"), MS(10));
    CHECK_EQ_INT(fx_time(g, "Communication", "gpu_time_us"), MS(10));
    CHECK_EQ_INT(fx_cell(g, fx_row(g, 0, "Communication"), "calls")->i, 1);
    CHECK_EQ_INT(fx_row(g, 0, "Memset"), -1);
    CHECK_NEAR(fx_cell(g, fx_row(g, 0, "Kernel"), "ratio_pct")->d, 64.0, 1e-9);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* Communication kernels are named as the distributed view and the findings name them (one test,
 * tl_is_comm_kernel_name): Ascend's HCCL too, not only NCCL/RCCL/oneCCL. */
TEST(overview_names_communication_kernels_as_the_other_views)
{
    const char *names[] = {"ncclDevKernel_AllReduce_Sum_f32", "hcclAllReduce", "RCCL_kernel",
                           "gemm"};
    for (int k = 0; k < 4; k++) {
        tl_trace t;
        tl_trace_init(&t);
        uint32_t a = tl_trace_track(&t, TL_TRACK_THREAD, 100, 1, -1);
        uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 100, 7, 0);
        fx_step(&t, a, 0, 0, 100);
        fx_event(&t, a, TL_CAT_RUNTIME, "cudaLaunchKernel", 20, 22, 1);
        fx_event(&t, s7, TL_CAT_KERNEL, names[k], 30, 50, 1);
        tl_trace_finish(&t);
        tl_table *tab = tl_view_overview(&t, NULL, NULL);
        CHECK(tab != NULL && tab->next != NULL);
        if (tab && tab->next) {
            int comm = tl_is_comm_kernel_name(names[k]);
            CHECK_EQ_INT(comm, k < 3);
            CHECK_EQ_INT(fx_time(tab->next, "Kernel", "gpu_time_us"), MS(20));
            CHECK_EQ_INT(fx_time(tab->next, "Communication", "gpu_time_us"), comm ? MS(20) : -1);
        }
        tl_table_free(tab);
        tl_trace_free(&t);
    }
}

TEST(overview_without_steps)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t a = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t b = tl_trace_track(&t, TL_TRACK_THREAD, 1, 2, -1);
    fx_event(&t, a, TL_CAT_USER, "x", 0, 40, 0);
    fx_event(&t, b, TL_CAT_USER, "y", 20, 60, 0); /* overlaps x on another thread */
    fx_event(&t, a, TL_CAT_OPERATOR, "op", 70, 80, 0);
    tl_trace_finish(&t);
    tl_table *tab = tl_view_overview(&t, NULL, NULL);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(fx_row(tab, 0, "ProfileStep"), -1);
        CHECK_EQ_INT(fx_row(tab, 0, "Other"), -1);
        CHECK_EQ_INT(fx_time(tab, "UserDefined", "cpu_time_us"), MS(60));
        CHECK_NEAR(fx_cell(tab, fx_row(tab, 0, "UserDefined"), "ratio_pct")->d, 75.0, 1e-9);
        CHECK_EQ_INT(fx_time(tab, "Operator", "cpu_time_us"), MS(10));
        /* sorted by time: UserDefined before Operator */
        CHECK(fx_row(tab, 0, "UserDefined") < fx_row(tab, 0, "Operator"));
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* A step that took no time (a "ProfilerStep#1" with no dur) bounds nothing: the trace is read as
 * one without steps, with the same numbers as above (this crashed the overview once). */
TEST(overview_zero_length_step_is_no_step)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t a = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t b = tl_trace_track(&t, TL_TRACK_THREAD, 1, 2, -1);
    fx_step(&t, a, 1, 5, 5);
    fx_event(&t, a, TL_CAT_USER, "x", 0, 40, 0);
    fx_event(&t, b, TL_CAT_USER, "y", 20, 60, 0);
    fx_event(&t, a, TL_CAT_OPERATOR, "op", 70, 80, 0);
    tl_trace_finish(&t);
    tl_window w;
    tl_profiled_window(&t, &w);
    CHECK_EQ_INT(w.nsteps, 0);
    CHECK_EQ_INT(w.total, MS(80));
    tl_table *tab = tl_view_overview(&t, NULL, NULL);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(fx_time(tab, "UserDefined", "cpu_time_us"), MS(60));
        CHECK_NEAR(fx_cell(tab, fx_row(tab, 0, "UserDefined"), "ratio_pct")->d, 75.0, 1e-9);
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(overview_empty_trace)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_trace_finish(&t);
    tl_table *tab = tl_view_overview(&t, NULL, NULL);
    CHECK(tab != NULL);
    if (tab)
        CHECK_EQ_INT(tab->nrows, 0);
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* A PyTorch trace marks no phase: the Overview's phases are the ones the Model view derives
 * from PyTorch's own ranges (module ranges Forward, autograd's evaluate_function Backward,
 * Optimizer.step# Optimization), and its Other is the Model view's (before, the Overview had
 * no Forward or Backward on such a trace and its Other was 2.6x the Model view's). */
TEST(overview_phases_are_the_model_views_on_a_pytorch_trace)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_load(&t, TALLY_SOURCE_DIR "/tests/data/torch_cuda_mlp.trace.json.gz", 0, &err),
                 0);
    tl_table *ov = tl_view_overview(&t, NULL, &err), *md = tl_view_model(&t, NULL, &err);
    CHECK(ov != NULL && md != NULL);
    if (ov && md) {
        const char *parts[] = {"Forward", "Backward", "Optimization", "Other"};
        for (int i = 0; i < 4; i++) {
            int ro = fx_row(ov, 0, parts[i]), rm = fx_row(md, 0, parts[i]);
            CHECK(ro >= 0 && rm >= 0);
            if (ro < 0 || rm < 0)
                continue;
            /* one thread, phases that do not overlap: the union is the sum */
            CHECK_EQ_INT(fx_time(ov, parts[i], "cpu_time_us"),
                         fx_time(md, parts[i], "cpu_total_us"));
            CHECK(fx_time(ov, parts[i], "cpu_time_us") > 0);
            if (i < 3)
                CHECK_EQ_INT(fx_cell(ov, ro, "calls")->i, fx_cell(md, rm, "calls")->i);
        }
        CHECK_NEAR(fx_cell(ov, fx_row(ov, 0, "Other"), "ratio_pct")->d,
                   fx_cell(md, fx_row(md, 0, "Other"), "cpu_ratio_pct")->d, 1e-9);
    }
    tl_table_free(ov);
    tl_table_free(md);
    tl_trace_free(&t);
}

/* Steps and no phase: Other is the whole step, as in the model view (the row was missing). */
TEST(overview_without_phases_has_other_the_whole_step)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t a = tl_trace_track(&t, TL_TRACK_THREAD, 100, 1, -1);
    fx_step(&t, a, 1, 0, 50);
    fx_event(&t, a, TL_CAT_USER, "work", 10, 30, 0);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *ov = tl_view_overview(&t, NULL, &err), *md = tl_view_model(&t, NULL, &err);
    CHECK(ov && md);
    if (ov && md) {
        CHECK_EQ_INT(fx_time(ov, "Other", "cpu_time_us"), MS(50));
        CHECK_EQ_INT(fx_time(ov, "Other", "cpu_time_us"), fx_time(md, "Other", "cpu_total_us"));
        CHECK_EQ_INT(fx_cell(ov, fx_row(ov, 0, "Other"), "type")->indent, 1);
    }
    tl_table_free(ov);
    tl_table_free(md);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(overview_unions_and_ratios);
    RUN(overview_gpu_part);
    RUN(overview_names_communication_kernels_as_the_other_views);
    RUN(overview_without_steps);
    RUN(overview_zero_length_step_is_no_step);
    RUN(overview_empty_trace);
    RUN(overview_phases_are_the_model_views_on_a_pytorch_trace);
    RUN(overview_without_phases_has_other_the_whole_step);
    return test_summary();
}
