/*
 * test_view_gpu_real.c — invariants of the Device, Kernel, Memcpy, Operator and ops views on
 * the real PyTorch traces in ../shared/traces (read with tl_load):
 *   - busy <= profiled window on every device row and stream (util <= 100%), device busy <=
 *     the sum of its streams' busy, unions <= sums (kernel busy <= sum of kernel durations);
 *   - every kernel counted once under --window all: the device and kernel views' calls and
 *     totals add up to the trace's kernels; ratios add up to 100%; under the default window
 *     (the steps) they count no more, and the device view no more than the kernel view counts
 *     plus the kernels that began before a step and ran into it;
 *   - operators: self <= total, and the device time they own (--expand rows) <= all device work;
 *   - ops table: sum of Self CPU <= sum of CPU total, the sum of Self CUDA over device rows =
 *     all device work, and each device row's CUDA total = its Self CUDA.
 */
#include "analysis/attrib.h"
#include "analysis/views.h"
#include "test_view_gpu_fixture.h"
#include "shared_trace.h"
#include "testlib.h"

#include <stdlib.h>

static const char *const files[] = {
    "hta_sampled_rank-0.json.gz",
    "hta_nccl_data.json.gz",
    "hta_ns_resolution_rank-0.pt.trace.json.gz",
    "hta_cpu_only_rank-34.pt.trace.json.gz",
    "hta_amd_mi250_minitoy_train_kineto.json.gz",
    "kineto_resnet50_nw0_worker0.1623143089861.pt.trace.json.gz",
    "hta_df_index_resolver.json.gz",
};

static void check_trace(const char *name)
{
    tl_trace t;
    if (shared_trace_load(&t, name, 0) != 0) {
        tl_trace_free(&t);
        return;
    }
    tl_error err = {{0}};
    int64_t kern_sum = 0, kern_n = 0, work_sum = 0;
    for (size_t i = 0; i < t.nev; i++) {
        if (t.ev[i].cat == TL_CAT_KERNEL) {
            kern_sum += t.ev[i].dur;
            kern_n++;
        }
        if (tl_is_device_work(&t.ev[i]))
            work_sum += t.ev[i].dur;
    }
    tl_window w;
    tl_profiled_window(&t, &w);

    /* device: over the steps (busy <= the window), then the whole file (every kernel) */
    int64_t span0, span1;
    tl_trace_span(&t, &span0, &span1);
    tl_view_opts all = {0};
    all.window_all = 1;
    tl_table *tab = tl_view_device(&t, NULL, &err);
    int64_t dev_kern_steps = 0;
    for (int r = 0; tab && r < tab->nrows; r++) {
        CHECK(FX_I(tab, r, "busy_us") <= w.total);
        if (tab->cells[(size_t)r * tab->ncols].indent == 0)
            dev_kern_steps += FX_I(tab, r, "kernels");
    }
    CHECK(dev_kern_steps <= kern_n);
    tl_table_free(tab);
    tab = tl_view_device(&t, &all, &err);
    CHECK(tab != NULL);
    int64_t dev_kern = 0;
    for (int r = 0; tab && r < tab->nrows; r++) {
        CHECK(FX_I(tab, r, "busy_us") <= span1 - span0);
        CHECK(FX_D(tab, r, "util_pct") <= 100.0 + 1e-9);
        CHECK(FX_I(tab, r, "kernel_busy_us") <= FX_I(tab, r, "busy_us"));
        CHECK(FX_I(tab, r, "copy_busy_us") <= FX_I(tab, r, "busy_us"));
        CHECK(FX_I(tab, r, "busy_us") <=
              FX_I(tab, r, "kernel_busy_us") + FX_I(tab, r, "copy_busy_us"));
        if (tab->cells[(size_t)r * tab->ncols].indent == 0) {
            dev_kern += FX_I(tab, r, "kernels");
            /* the device's busy <= sum of its streams' */
            int64_t s = 0;
            for (int q = r + 1; q < tab->nrows && tab->cells[(size_t)q * tab->ncols].indent; q++)
                s += FX_I(tab, q, "busy_us");
            CHECK(FX_I(tab, r, "busy_us") <= s);
        }
    }
    CHECK_EQ_INT(dev_kern, kern_n);
    tl_table_free(tab);

    /* kernel: the steps count no more than the whole file */
    tab = tl_view_kernel(&t, NULL, &err);
    int64_t calls_steps = 0;
    for (int r = 0; tab && r < tab->nrows; r++)
        calls_steps += FX_I(tab, r, "calls");
    CHECK(calls_steps <= kern_n);
    tl_table_free(tab);
    tab = tl_view_kernel(&t, &all, &err);
    CHECK(tab != NULL);
    int64_t calls = 0, total = 0;
    double pct = 0;
    for (int r = 0; tab && r < tab->nrows; r++) {
        calls += FX_I(tab, r, "calls");
        total += FX_I(tab, r, "total_us");
        pct += FX_D(tab, r, "ratio_pct");
        CHECK(FX_I(tab, r, "min_us") <= FX_I(tab, r, "avg_us") &&
              FX_I(tab, r, "avg_us") <= FX_I(tab, r, "max_us"));
    }
    CHECK_EQ_INT(calls, kern_n);
    CHECK_EQ_INT(total, kern_sum);
    if (kern_n)
        CHECK_NEAR(pct, 100.0, 1e-6);
    tl_table_free(tab);

    /* memcpy */
    tab = tl_view_memcpy(&t, &all, &err);
    CHECK(tab != NULL);
    int64_t mtotal = 0;
    for (int r = 0; tab && r < tab->nrows; r++)
        mtotal += FX_I(tab, r, "total_us");
    CHECK_EQ_INT(mtotal + kern_sum, work_sum);
    tl_table_free(tab);

    /* operator */
    tl_view_opts o = {0};
    o.expand = 1;
    tab = tl_view_operator(&t, &o, &err);
    CHECK(tab != NULL);
    int64_t owned = 0;
    for (int r = 0; tab && r < tab->nrows; r++) {
        if (tab->cells[(size_t)r * tab->ncols].indent) {
            owned += FX_I(tab, r, "device_total_us");
            continue;
        }
        CHECK(FX_I(tab, r, "self_cpu_us") <= FX_I(tab, r, "cpu_total_us"));
        CHECK(FX_I(tab, r, "gpu_total_us") <= FX_I(tab, r, "device_total_us"));
    }
    CHECK(owned <= work_sum);
    tl_table_free(tab);

    /* ops */
    o = (tl_view_opts){0};
    o.sort = "none";
    tab = tl_view_ops(&t, &o, &err);
    CHECK(tab != NULL);
    int64_t self_cpu = 0, cpu = 0, all_self_cuda = 0, annot = 0;
    for (size_t i = 0; i < t.nev; i++)
        if (t.ev[i].cat == TL_CAT_GPU_USER)
            annot += t.ev[i].dur;
    for (int r = 0; tab && r < tab->nrows; r++) {
        self_cpu += FX_I(tab, r, "self_cpu_us");
        cpu += FX_I(tab, r, "cpu_total_us");
        all_self_cuda += FX_I(tab, r, "self_cuda_us");
        CHECK(FX_I(tab, r, "calls") > 0);
        CHECK(FX_I(tab, r, "self_cuda_us") <= FX_I(tab, r, "cuda_total_us"));
    }
    CHECK(self_cpu <= cpu);
    CHECK(self_cpu >= 0);
    /* device rows hold every kernel, copy and memset once (the Self CUDA total), host rows
     * at most once more (the linked ones), plus the annotation rows */
    CHECK(all_self_cuda <= 2 * work_sum + annot);
    if (work_sum > 0 && tab) {
        char want[64], s[32];
        tl_fmt_time(s, sizeof s, work_sum, TL_UNIT_AUTO);
        snprintf(want, sizeof want, "Self CUDA time total: %s", s);
        int found = 0;
        for (int k = 0; k < tab->nnotes; k++)
            found |= !strcmp(tab->notes[k], want);
        CHECK(found);
    }
    if (w.nsteps && tab) {
        int r = fx_row(tab, "ProfilerStep*", 0);
        if (r >= 0 && FX_I(tab, r, "cpu_total_us") > 0)
            CHECK_EQ_INT(FX_I(tab, r, "calls"), w.nsteps);
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(gpu_views_invariants_on_real_traces)
{
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        int before = test_failures;
        check_trace(files[i]);
        if (test_failures != before)
            fprintf(stderr, "  (in %s)\n", files[i]);
    }
}

int main(void)
{
    if (!test_have_shared_traces())
        return TEST_SKIPPED;
    RUN(gpu_views_invariants_on_real_traces);
    return test_summary();
}
