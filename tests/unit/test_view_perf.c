/*
 * test_view_perf.c — the Perf summary: batch and reader cost avg/max/min over every step,
 * reader ratio, and throughput in samples/s or steps/s.
 */
#include "testlib.h"
#include "views_fixture.h"

#include <stdlib.h>

TEST(perf_costs)
{
    tl_trace t;
    fx_training(&t);
    tl_table *tab = tl_view_perf(&t, NULL, NULL);
    CHECK(tab != NULL);
    if (!tab)
        return;
    CHECK_EQ_INT(fx_time(tab, "batch_cost", "avg_us"), MS(100));
    CHECK_EQ_INT(fx_time(tab, "batch_cost", "max_us"), MS(120));
    CHECK_EQ_INT(fx_time(tab, "batch_cost", "min_us"), MS(80));
    CHECK_EQ_INT(fx_time(tab, "batch_cost", "total_us"), MS(300));
    CHECK_EQ_INT(fx_cell(tab, 0, "steps")->i, 3);
    /* reader: 10, 30, and [220,230) ∪ [222,228) = 10 */
    CHECK_EQ_INT(fx_time(tab, "reader_cost", "avg_us"), MS(50) / 3);
    CHECK_EQ_INT(fx_time(tab, "reader_cost", "max_us"), MS(30));
    CHECK_EQ_INT(fx_time(tab, "reader_cost", "min_us"), MS(10));
    CHECK_NEAR(fx_cell(tab, fx_row(tab, 0, "reader_cost"), "ratio_pct")->d, 100.0 * 50 / 300, 1e-9);
    const tl_table *ips = tab->next;
    CHECK(ips != NULL);
    if (ips) {
        /* steps/s: 3 steps in 0.3 s; per step 1/0.08 and 1/0.12 */
        CHECK_STR(ips->cells[0].s, "steps/s");
        CHECK_NEAR(fx_cell(ips, 0, "avg")->d, 10.0, 1e-9);
        CHECK_NEAR(fx_cell(ips, 0, "max")->d, 12.5, 1e-9);
        CHECK_NEAR(fx_cell(ips, 0, "min")->d, 1 / 0.12, 1e-9);
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* The reader's sample counts of fx_training's three steps. */
static void set_samples(tl_trace *t, int64_t s0, int64_t s1, int64_t s2)
{
    t->step_samples = malloc(3 * sizeof *t->step_samples);
    t->step_samples[0] = s0;
    t->step_samples[1] = s1;
    t->step_samples[2] = s2;
    t->nsteps_samples = 3;
}

TEST(perf_samples_throughput)
{
    tl_trace t;
    fx_training(&t);
    set_samples(&t, 32, 32, 16);
    t.samples_unit = tl_intern(&t.strings, "tokens", 6);
    tl_table *tab = tl_view_perf(&t, NULL, NULL);
    const tl_table *ips = tab ? tab->next : NULL;
    CHECK(ips != NULL);
    if (ips) {
        CHECK_STR(ips->cells[0].s, "tokens/s");
        CHECK_NEAR(fx_cell(ips, 0, "avg")->d, 80 / 0.3, 1e-6);
        CHECK_NEAR(fx_cell(ips, 0, "max")->d, 320.0, 1e-6); /* 32 in 0.1 s */
        CHECK_NEAR(fx_cell(ips, 0, "min")->d, 200.0, 1e-6); /* 16 in 0.08 s */
        CHECK_EQ_INT(fx_cell(ips, 0, "samples")->i, 80);
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* The step tally closes at tally_stop (flagged unclosed by the reader, and without a sample
 * count) is no step (steps.h): not a batch, not in the throughput. */
TEST(perf_drops_the_step_closed_by_stop)
{
    tl_trace t;
    fx_training(&t);
    for (size_t i = 0; i < t.nev; i++)
        if (t.ev[i].cat == TL_CAT_STEP && t.ev[i].value == 2)
            t.ev[i].flags |= TL_EV_UNCLOSED;
    set_samples(&t, 32, 32, 0);
    tl_table *tab = tl_view_perf(&t, NULL, NULL);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(fx_cell(tab, 0, "steps")->i, 2);
        CHECK_EQ_INT(fx_time(tab, "batch_cost", "total_us"), MS(220));
        CHECK_EQ_INT(fx_time(tab, "batch_cost", "min_us"), MS(100));
        CHECK_EQ_INT(fx_time(tab, "reader_cost", "total_us"), MS(40));
        CHECK_NEAR(fx_cell(tab->next, 0, "avg")->d, 64 / 0.22, 1e-6);
        CHECK_NEAR(fx_cell(tab->next, 0, "min")->d, 32 / 0.12, 1e-6);
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* A step the program closed with tally_step(0) among steps with samples is a step: counted,
 * with a rate of 0. */
TEST(perf_keeps_a_step_closed_with_no_samples)
{
    tl_trace t;
    fx_training(&t);
    set_samples(&t, 32, 32, 0);
    tl_table *tab = tl_view_perf(&t, NULL, NULL);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(fx_cell(tab, 0, "steps")->i, 3);
        CHECK_EQ_INT(fx_time(tab, "batch_cost", "total_us"), MS(300));
        CHECK_NEAR(fx_cell(tab->next, 0, "avg")->d, 64 / 0.3, 1e-6);
        CHECK_NEAR(fx_cell(tab->next, 0, "min")->d, 0.0, 1e-9);
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(perf_without_steps)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t a = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_event(&t, a, TL_CAT_DATALOADER, "load", 0, 10, 0);
    tl_trace_finish(&t);
    tl_table *tab = tl_view_perf(&t, NULL, NULL);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 0);
        CHECK(tab->nnotes == 1);
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(perf_without_reader)
{
    tl_trace t;
    fx_gpu(&t);
    tl_table *tab = tl_view_perf(&t, NULL, NULL);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 1);
        CHECK_EQ_INT(fx_row(tab, 0, "reader_cost"), -1);
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(perf_costs);
    RUN(perf_samples_throughput);
    RUN(perf_drops_the_step_closed_by_stop);
    RUN(perf_keeps_a_step_closed_with_no_samples);
    RUN(perf_without_steps);
    RUN(perf_without_reader);
    return test_summary();
}
