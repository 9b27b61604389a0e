/*
 * test_steps.c — the one set of steps (src/analysis/steps.h) and every view that counts steps
 * agreeing on it: a step closed by tally_stop or by the end of the trace (flagged unclosed) is
 * no step; one of no duration neither; sample counts follow step numbers; without steps the
 * trace is one pseudo-step; steps of one thread written over each other count each moment once.
 */
#include "analysis/steps.h"

#include "testlib.h"
#include "views_fixture.h"

#include <stdlib.h>
#include <string.h>

/* fx_training with step 2 closed by tally_stop (the reader flags it unclosed). */
static void training_stopped(tl_trace *t)
{
    fx_training(t);
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].cat == TL_CAT_STEP && t->ev[i].value == 2)
            t->ev[i].flags |= TL_EV_UNCLOSED;
}

TEST(steps_leave_out_the_step_closed_by_stop)
{
    tl_trace t;
    training_stopped(&t);
    tl_steps st;
    CHECK_EQ_INT(tl_steps_load(&t, &st), 0);
    CHECK_EQ_INT(st.n, 2);
    CHECK_EQ_INT(st.pseudo, 0);
    CHECK_EQ_INT(st.left_out, 1);
    CHECK_EQ_INT(st.total, MS(220));
    CHECK_EQ_INT(tl_steps_avg(&st), MS(110));
    CHECK_EQ_INT(st.v[1].number, 1);
    CHECK_EQ_INT(tl_steps_at(&st, MS(150)), 1);
    CHECK_EQ_INT(tl_steps_at(&st, MS(250)), -1); /* in the step that is none */
    CHECK_EQ_INT(tl_steps_from(&st, MS(99)), 0);
    CHECK_EQ_INT(tl_steps_from(&st, MS(100)), 1);
    CHECK_EQ_INT(tl_steps_from(&st, MS(230)), 2);
    tl_window w;
    tl_steps_window(&st, &w);
    CHECK_EQ_INT(w.nsteps, 2);
    CHECK_EQ_INT(w.total, MS(220));
    CHECK_EQ_INT(w.t1, MS(220));
    /* the profiled window every GPU view and the findings take their ratios against: the same
     * two steps */
    tl_window pw;
    tl_profiled_window(&t, &pw);
    CHECK_EQ_INT(pw.nsteps, 2);
    CHECK_EQ_INT(pw.total, MS(220));
    CHECK_EQ_INT(pw.t1, MS(220));
    tl_ivset set = {0};
    tl_profiled_window_set(&t, &set);
    CHECK_EQ_INT(tl_ivset_length(&set), MS(220));
    tl_ivset_free(&set);
    tl_steps_free(&st);
    tl_trace_free(&t);
}

/* Samples are one per step span in number order; a window that starts at step 5 and the
 * stop-closed step without a count take nothing from each other. */
TEST(steps_samples_follow_numbers)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t a = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_step(&t, a, 5, 0, 10);
    fx_step(&t, a, 6, 10, 30);
    fx_step(&t, a, 7, 30, 31);
    tl_trace_finish(&t);
    for (size_t i = 0; i < t.nev; i++)
        if (t.ev[i].value == 7)
            t.ev[i].flags |= TL_EV_UNCLOSED;
    t.step_samples = malloc(3 * sizeof *t.step_samples);
    t.step_samples[0] = 8;
    t.step_samples[1] = 16;
    t.step_samples[2] = 0;
    t.nsteps_samples = 3;
    tl_steps st;
    CHECK_EQ_INT(tl_steps_load(&t, &st), 0);
    CHECK_EQ_INT(st.n, 2);
    CHECK_EQ_INT(st.with_samples, 1);
    CHECK_EQ_INT(st.v[0].samples, 8);
    CHECK_EQ_INT(st.v[1].samples, 16);
    tl_steps_free(&st);
    tl_trace_free(&t);
}

TEST(steps_without_steps_is_one_pseudo_step)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t a = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_event(&t, a, TL_CAT_USER, "x", 2, 7, 0);
    fx_step(&t, a, 0, 3, 3); /* no duration: no step */
    tl_trace_finish(&t);
    tl_steps st;
    CHECK_EQ_INT(tl_steps_load(&t, &st), 0);
    CHECK_EQ_INT(st.n, 1);
    CHECK_EQ_INT(st.pseudo, 1);
    CHECK_EQ_INT(st.left_out, 1);
    CHECK_EQ_INT(st.total, MS(5));
    tl_window w;
    tl_steps_window(&st, &w);
    CHECK_EQ_INT(w.nsteps, 0);
    CHECK_EQ_INT(w.total, MS(5));
    tl_steps_free(&st);
    tl_trace_free(&t);
}

/* model, model_steps, perf, overview and breakdown: the same 2 steps and the same average. */
TEST(views_agree_on_steps)
{
    tl_trace t;
    training_stopped(&t);
    tl_table *m = tl_view_model(&t, NULL, NULL);
    tl_table *p = tl_view_perf(&t, NULL, NULL);
    tl_table *o = tl_view_overview(&t, NULL, NULL);
    tl_table *b = tl_view_breakdown(&t, NULL, NULL);
    CHECK(m && p && o && b);
    if (m && p && o && b) {
        const tl_table *ms = m->next;
        CHECK_EQ_INT(fx_cell(m, fx_row(m, 0, "ProfileStep"), "calls")->i, 2);
        CHECK_EQ_INT(fx_time(m, "ProfileStep", "cpu_avg_us"), MS(110));
        CHECK_EQ_INT(ms->nrows, 3); /* 2 steps and the average */
        CHECK_EQ_INT(fx_time(ms, "Average", "step_us"), MS(110));
        CHECK_EQ_INT(fx_cell(p, 0, "steps")->i, 2);
        CHECK_EQ_INT(fx_time(p, "batch_cost", "avg_us"), MS(110));
        CHECK_EQ_INT(fx_cell(o, fx_row(o, 0, "ProfileStep"), "calls")->i, 2);
        CHECK_EQ_INT(fx_time(o, "ProfileStep", "cpu_time_us"), MS(220));
        CHECK_EQ_INT(b->nrows, 3);
        CHECK_EQ_INT(fx_time(b, "Average", "step_us"), MS(110));
    }
    tl_table_free(m);
    tl_table_free(p);
    tl_table_free(o);
    tl_table_free(b);
    tl_trace_free(&t);
}

/* Steps of one thread written over each other — step 1 in the trace twice (a trace that holds
 * its events twice) and a fourth [280, 320) ms that begins inside step 2 [220, 300) — count each
 * moment once: the copy is no step, the fourth begins at 300; so perf, model and overview give
 * 4 steps and 320 ms, not 5 steps and 460 ms (more than the trace), and say so in a note. A
 * step of another thread may overlap (two processes in one file): it stays. */
TEST(steps_of_one_thread_written_over_each_other_count_once)
{
    tl_trace t;
    fx_training(&t);
    uint32_t a = tl_trace_find_track(&t, TL_TRACK_THREAD, 100, 1, -1);
    fx_step(&t, a, 1, 100, 220);
    fx_step(&t, a, 3, 280, 320);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_steps st;
    CHECK_EQ_INT(tl_steps_load(&t, &st), 0);
    CHECK_EQ_INT(st.n, 4);
    CHECK_EQ_INT(st.overlapped, 2);
    CHECK_EQ_INT(st.total, MS(320));
    CHECK_EQ_INT(st.v[3].s, MS(300));
    CHECK_EQ_INT(st.v[3].e, MS(320));
    tl_steps_free(&st);
    tl_table *m = tl_view_model(&t, NULL, NULL);
    tl_table *p = tl_view_perf(&t, NULL, NULL);
    tl_table *o = tl_view_overview(&t, NULL, NULL);
    CHECK(m && p && o);
    if (m && p && o) {
        CHECK_EQ_INT(fx_cell(m, fx_row(m, 0, "ProfileStep"), "calls")->i, 4);
        CHECK_EQ_INT(fx_time(m, "ProfileStep", "cpu_total_us"), MS(320));
        CHECK_EQ_INT(fx_cell(p, 0, "steps")->i, 4);
        CHECK_EQ_INT(fx_time(p, "batch_cost", "avg_us"), MS(80));
        CHECK_EQ_INT(fx_cell(o, fx_row(o, 0, "ProfileStep"), "calls")->i, 4);
        CHECK_EQ_INT(fx_time(o, "ProfileStep", "cpu_time_us"), MS(320));
        int noted = 0;
        for (int i = 0; i < p->nnotes; i++)
            noted |= strstr(p->notes[i], "2 step span(s) began before the one before") != NULL;
        CHECK(noted);
    }
    tl_table_free(m);
    tl_table_free(p);
    tl_table_free(o);
    /* a step of another thread over them stays a step */
    uint32_t b = tl_trace_find_track(&t, TL_TRACK_THREAD, 100, 2, -1);
    fx_step(&t, b, 7, 50, 150);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    CHECK_EQ_INT(tl_steps_load(&t, &st), 0);
    CHECK_EQ_INT(st.n, 5);
    CHECK_EQ_INT(st.overlapped, 2);
    tl_steps_free(&st);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(steps_leave_out_the_step_closed_by_stop);
    RUN(steps_samples_follow_numbers);
    RUN(steps_without_steps_is_one_pseudo_step);
    RUN(views_agree_on_steps);
    RUN(steps_of_one_thread_written_over_each_other_count_once);
    return test_summary();
}
