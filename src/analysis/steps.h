/*
 * steps.h — the steps of a trace, defined once for every view that talks about steps (model,
 * perf, overview, breakdown, findings, ...).
 *
 * A step is a span of category TL_CAT_STEP (ProfilerStep#N from PyTorch, ProfileStep#N from
 * Paddle, the spans the .tally reader makes between tally_step calls) that
 *   - took time (dur > 0), and
 *   - was ended by the program: a step that only the end of recording closed — the one
 *     tally_stop closes after the last tally_step, the one open when a program was killed, a
 *     JSON "B" without its "E" — is flagged TL_EV_UNCLOSED by the readers and is not a step.
 * Steps of one thread do not overlap: one that begins before the one before it on its thread
 * has ended begins where that one ended, and one inside it is none (a trace whose events are in
 * it twice has each step once).
 * So `for (i < 10) { ...; tally_step(n); } tally_stop();` has 10 steps, and `tally run
 * --step-range NAME` has one step per NAME range that ended. A trace with no step is one
 * pseudo-step: the span of all its events.
 *
 * Per-step averages are total / n over these steps, and every view divides by the same n.
 */
#ifndef TALLY_ANALYSIS_STEPS_H
#define TALLY_ANALYSIS_STEPS_H

#include "analysis/analysis.h"

typedef struct tl_step {
    int64_t s, e;    /* [s, e), ns */
    int64_t number;  /* N of ProfilerStep#N (the event's value); 0 for the pseudo-step */
    int64_t samples; /* samples the program gave tally_step for this step; 0 = none */
    uint32_t name;   /* string id of the step's name; 0 for the pseudo-step */
    int32_t ev;      /* its event, TL_NONE for the pseudo-step */
} tl_step;

typedef struct tl_steps {
    tl_step *v;       /* sorted by start */
    int n;            /* number of steps; 1 for the pseudo-step; 0 only for an empty trace */
    int pseudo;       /* the trace has no step: v[0] is the span of all events */
    int left_out;     /* step spans that are not steps (closed by tally_stop or by the end of
                         the trace, or of no duration) */
    int with_samples; /* the steps carry sample counts (some step has samples > 0) */
    int overlapped;   /* step spans that began before the one before them on their thread had
                         ended: cut to begin where it ended, or (inside it) no step */
    int64_t total;    /* sum of the step durations */
} tl_steps;

/* Find the steps of t (finished). Returns 0, or -1 when out of memory (out is then empty).
 * Free with tl_steps_free. */
int tl_steps_load(const tl_trace *t, tl_steps *out);
void tl_steps_free(tl_steps *st);
/* The notes a view that counts steps gives under tab: steps left out, steps that overlapped. */
void tl_steps_note(const tl_steps *st, tl_table *tab);

/* The mean step duration: total / n (0 without steps). */
int64_t tl_steps_avg(const tl_steps *st);

/* Index of the step containing x ([s, e)), or -1. */
int tl_steps_at(const tl_steps *st, int64_t x);

/* Index of the first step that ends after x (st->n when none): where cutting a range that
 * starts at x into steps begins. */
int tl_steps_from(const tl_steps *st, int64_t x);

/* The profiled window of these steps: nsteps = n (0 for the pseudo-step), t0/t1 the first
 * start and the last end, total the length of the union of the steps. */
void tl_steps_window(const tl_steps *st, tl_window *w);

/* The steps as a normalized interval set (the pseudo-step: the trace span). */
void tl_steps_set(const tl_steps *st, tl_ivset *set);

#endif
