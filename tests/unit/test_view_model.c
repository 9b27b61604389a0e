/*
 * test_view_model.c — the Model view on hand-made traces: outermost phases only, per-step rows,
 * Other = step − phases, averages, and kernel time attributed through the launching call.
 */
#include "testlib.h"
#include "views_fixture.h"

static const tl_table *nth(const tl_table *t, int n)
{
    while (t && n-- > 0)
        t = t->next;
    return t;
}

TEST(model_summary_rows)
{
    tl_trace t;
    fx_training(&t);
    tl_table *tab = tl_view_model(&t, NULL, NULL);
    CHECK(tab != NULL);
    if (!tab)
        return;
    CHECK_STR(tab->key, "model");
    CHECK_EQ_INT(tl_table_find_col(tab, "gpu_total_us"), -1); /* no kernels, no GPU columns */
    CHECK_EQ_INT(fx_time(tab, "ProfileStep", "cpu_total_us"), MS(300));
    CHECK_EQ_INT(fx_time(tab, "ProfileStep", "cpu_max_us"), MS(120));
    CHECK_EQ_INT(fx_time(tab, "ProfileStep", "cpu_min_us"), MS(80));
    CHECK_EQ_INT(fx_time(tab, "ProfileStep", "cpu_avg_us"), MS(100));
    /* Dataloader ranges: 10, 30, 10 on thread 1 and 6 on thread 2: CPU time sums them. */
    CHECK_EQ_INT(fx_cell(tab, fx_row(tab, 0, "Dataloader"), "calls")->i, 4);
    CHECK_EQ_INT(fx_time(tab, "Dataloader", "cpu_total_us"), MS(56));
    CHECK_EQ_INT(fx_time(tab, "Dataloader", "cpu_max_us"), MS(30));
    CHECK_EQ_INT(fx_time(tab, "Dataloader", "cpu_min_us"), MS(6));
    CHECK_EQ_INT(fx_time(tab, "Dataloader", "cpu_avg_us"), MS(14));
    /* Forward: the nested forward is not an item of its own. */
    CHECK_EQ_INT(fx_cell(tab, fx_row(tab, 0, "Forward"), "calls")->i, 3);
    CHECK_EQ_INT(fx_time(tab, "Forward", "cpu_total_us"), MS(95));
    CHECK_EQ_INT(fx_time(tab, "Forward", "cpu_avg_us"), MS(95) / 3);
    CHECK_EQ_INT(fx_time(tab, "Forward", "cpu_max_us"), MS(40));
    CHECK_EQ_INT(fx_time(tab, "Forward", "cpu_min_us"), MS(25));
    CHECK_EQ_INT(fx_time(tab, "Backward", "cpu_total_us"), MS(100));
    CHECK_EQ_INT(fx_time(tab, "Optimization", "cpu_total_us"), MS(35));
    CHECK_EQ_INT(fx_time(tab, "Other", "cpu_total_us"), MS(20));
    CHECK(!fx_cell(tab, fx_row(tab, 0, "Other"), "calls")->set);
    CHECK_NEAR(fx_cell(tab, fx_row(tab, 0, "Backward"), "cpu_ratio_pct")->d, 100.0 / 3, 1e-9);
    CHECK_NEAR(fx_cell(tab, fx_row(tab, 0, "ProfileStep"), "cpu_ratio_pct")->d, 100.0, 1e-9);
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(model_per_step_rows_add_up)
{
    tl_trace t;
    fx_training(&t);
    tl_table *tab = tl_view_model(&t, NULL, NULL);
    const tl_table *ps = nth(tab, 1);
    CHECK(ps != NULL);
    if (!ps) {
        tl_table_free(tab);
        tl_trace_free(&t);
        return;
    }
    CHECK_STR(ps->key, "model_steps");
    CHECK(nth(tab, 2) == NULL);
    CHECK_EQ_INT(ps->nrows, 4); /* three steps and the average */
    /* step: time, dataloader, forward, backward, optimization, other */
    static const double want[3][6] = {
        {100, 10, 30, 40, 15, 5}, {120, 30, 40, 30, 10, 10}, {80, 16, 25, 30, 10, 5}};
    static const char *const keys[6] = {"step_us",     "dataloader_us",   "forward_us",
                                        "backward_us", "optimization_us", "other_us"};
    for (int k = 0; k < 3; k++) {
        char name[32];
        snprintf(name, sizeof name, "ProfilerStep#%d", k);
        CHECK_EQ_INT(fx_row(ps, 0, name), k);
        for (int c = 0; c < 6; c++)
            CHECK_EQ_INT(fx_time(ps, name, keys[c]), MS(want[k][c]));
    }
    /* Steps 0 and 1 have one thread: the phases and Other add up to the step exactly. */
    for (int k = 0; k < 2; k++) {
        double s = 0;
        for (int c = 1; c < 6; c++)
            s += want[k][c];
        CHECK_NEAR(s, want[k][0], 1e-9);
    }
    for (int c = 0; c < 6; c++)
        CHECK_EQ_INT(fx_time(ps, "Average", keys[c]),
                     (MS(want[0][c]) + MS(want[1][c]) + MS(want[2][c])) / 3);
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(model_gpu_part)
{
    tl_trace t;
    fx_gpu(&t);
    tl_table *tab = tl_view_model(&t, NULL, NULL);
    CHECK(tab != NULL);
    if (!tab)
        return;
    /* Kernels launched in the step: 20 + 10 + 20 + 14 (relu has no known launch). */
    CHECK_EQ_INT(fx_time(tab, "ProfileStep", "gpu_total_us"), MS(64));
    CHECK_EQ_INT(fx_time(tab, "Forward", "gpu_total_us"), MS(30));
    CHECK_EQ_INT(fx_time(tab, "Backward", "gpu_total_us"), MS(20));
    CHECK_EQ_INT(fx_time(tab, "Dataloader", "gpu_total_us"), 0);
    CHECK_EQ_INT(fx_time(tab, "Other", "gpu_total_us"), MS(14));
    CHECK_NEAR(fx_cell(tab, fx_row(tab, 0, "Forward"), "gpu_ratio_pct")->d, 100.0 * 30 / 64, 1e-9);
    CHECK_EQ_INT(fx_time(tab, "Forward", "cpu_total_us"), MS(40));
    CHECK_EQ_INT(fx_time(tab, "Other", "cpu_total_us"), MS(20));
    const tl_table *g = nth(tab, 2);
    CHECK(g != NULL);
    if (g) {
        CHECK_STR(g->key, "model_steps_gpu");
        CHECK_EQ_INT(fx_time(g, "ProfilerStep#0", "step_us"), MS(64));
        CHECK_EQ_INT(fx_time(g, "ProfilerStep#0", "forward_us"), MS(30));
        CHECK_EQ_INT(fx_time(g, "ProfilerStep#0", "backward_us"), MS(20));
        CHECK_EQ_INT(fx_time(g, "ProfilerStep#0", "other_us"), MS(14));
        CHECK_EQ_INT(g->nrows, 1); /* one step: no average row */
    }
    int unlinked_note = 0;
    for (int i = 0; i < tab->nnotes; i++)
        unlinked_note |= strstr(tab->notes[i], "1 kernel(s)") != NULL;
    CHECK(unlinked_note);
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(model_without_steps_is_one_pseudo_step)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t a = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_event(&t, a, TL_CAT_FORWARD, "f", 0, 30, 0);
    fx_event(&t, a, TL_CAT_BACKWARD, "b", 30, 90, 0);
    fx_event(&t, a, TL_CAT_USER, "tail", 90, 100, 0);
    tl_trace_finish(&t);
    tl_table *tab = tl_view_model(&t, NULL, NULL);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(fx_time(tab, "Whole trace", "cpu_total_us"), MS(100));
        CHECK_EQ_INT(fx_time(tab, "Forward", "cpu_total_us"), MS(30));
        CHECK_EQ_INT(fx_time(tab, "Backward", "cpu_total_us"), MS(60));
        CHECK_EQ_INT(fx_time(tab, "Other", "cpu_total_us"), MS(10));
        CHECK(tab->next && fx_row(tab->next, 0, "(whole trace)") == 0);
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(model_summary_rows);
    RUN(model_per_step_rows_add_up);
    RUN(model_gpu_part);
    RUN(model_without_steps_is_one_pseudo_step);
    return test_summary();
}
