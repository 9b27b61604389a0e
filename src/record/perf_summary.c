/*
 * timer.c — timer-only mode's benchmark summary (Paddle's "Perf Summary"), from the step times
 * the session collected in memory: batch_cost (step time), reader_cost (time in dataloader
 * ranges during the step) and ips (samples/s when every step had a sample count, else steps/s).
 *
 * Unlike Paddle's timer: every step counts exactly once (no division by one step too few), max
 * and min are updated from the first value on, and the average throughput is total samples over
 * total time (not the mean of per-step rates).
 */
#include "record/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void tally__perf_compute(const tally__perf_step *s, int n, tally__perf_summary *out)
{
    memset(out, 0, sizeof *out);
    out->steps = n;
    if (n <= 0)
        return;
    int64_t batch_total = 0, reader_total = 0;
    uint64_t samples_total = 0;
    int samples_mode = 1;
    for (int i = 0; i < n; i++)
        samples_mode &= s[i].samples > 0;
    out->samples_mode = samples_mode;
    for (int i = 0; i < n; i++) {
        double b = (double)s[i].batch_ns / 1e9, r = (double)s[i].reader_ns / 1e9;
        double ips = s[i].batch_ns > 0 ? (samples_mode ? (double)s[i].samples : 1.0) / b : 0.0;
        if (i == 0 || b > out->batch.max)
            out->batch.max = b;
        if (i == 0 || b < out->batch.min)
            out->batch.min = b;
        if (i == 0 || r > out->reader.max)
            out->reader.max = r;
        if (i == 0 || r < out->reader.min)
            out->reader.min = r;
        if (i == 0 || ips > out->ips.max)
            out->ips.max = ips;
        if (i == 0 || ips < out->ips.min)
            out->ips.min = ips;
        batch_total += s[i].batch_ns;
        reader_total += s[i].reader_ns;
        samples_total += s[i].samples;
    }
    out->batch.avg = (double)batch_total / 1e9 / n;
    out->reader.avg = (double)reader_total / 1e9 / n;
    if (batch_total > 0) {
        double secs = (double)batch_total / 1e9;
        out->ips.avg = (samples_mode ? (double)samples_total : (double)n) / secs;
        out->reader_ratio = 100.0 * (double)reader_total / (double)batch_total;
    }
}

static void center(FILE *f, const char *s, int w)
{
    int n = (int)strlen(s), left = (w - n) / 2, right = w - n - left;
    fprintf(f, "%*s%s%*s", left > 0 ? left : 0, "", s, right > 0 ? right : 0, "");
}

static void row(FILE *f, const char *name, const tally__perf_stat *st)
{
    char b[64];
    fputc('|', f);
    center(f, name, 17);
    const double v[3] = {st->avg, st->max, st->min};
    for (int i = 0; i < 3; i++) {
        fputc('|', f);
        snprintf(b, sizeof b, "%.5f", v[i]);
        center(f, b, 17);
    }
    fputs("|\n", f);
}

void tally__perf_print(FILE *f, const tally__perf_summary *p, const char *unit)
{
    char title[128];
    const char *t = "Perf Summary";
    int pad = (100 - (int)strlen(t)) / 2;
    memset(title, '=', 100);
    memcpy(title + pad, t, strlen(t));
    title[100] = 0;
    fprintf(f, "%s\n", title);
    if (p->steps == 0) {
        fprintf(f, "No step was closed (call tally_step once per step).\n");
        return;
    }
    if (p->reader_ratio > 0)
        fprintf(f, "Reader Ratio: %.3f%%\n", p->reader_ratio);
    fprintf(f, "Time Unit: s, IPS Unit: %s/s, Steps: %d\n", p->samples_mode ? unit : "steps",
            p->steps);
    fputc('|', f);
    center(f, "", 17);
    const char *h[3] = {"avg", "max", "min"};
    for (int i = 0; i < 3; i++) {
        fputc('|', f);
        center(f, h[i], 17);
    }
    fputs("|\n", f);
    if (p->reader.avg > 0)
        row(f, "reader_cost", &p->reader);
    row(f, "batch_cost", &p->batch);
    row(f, "ips", &p->ips);
}

static uint64_t thread_window_losses(const tally__tstate *ts)
{
    return atomic_load(&ts->dropped) - ts->dropped0 + atomic_load(&ts->lost) - ts->lost0;
}

/* Which threads lost records in the window (since it opened), worst first, at most 8. */
static void print_thread_losses(FILE *f)
{
    fprintf(f, "tally: records lost per thread:");
    uint64_t bound = UINT64_MAX; /* print threads below this count, largest first */
    int shown = 0, left = 0;
    TALLY__FOR_EACH_THREAD(ts)
    left += thread_window_losses(ts) > 0;
    while (shown < 8 && shown < left) {
        tally__tstate *best = NULL;
        uint64_t most = 0;
        TALLY__FOR_EACH_THREAD(ts)
        {
            uint64_t n = thread_window_losses(ts);
            if (n > most && n < bound)
                most = n, best = ts;
        }
        if (!best)
            break;
        for (uint32_t i = 0, k = tally__thread_count(); i < k; i++) { /* ties: all of them */
            tally__tstate *ts = atomic_load(&tally__threads[i]);
            if (!ts || thread_window_losses(ts) != most)
                continue;
            fprintf(f, "%s %s (tid %lld) %llu", shown ? "," : "", ts->name[0] ? ts->name : "thread",
                    (long long)ts->tid, (unsigned long long)most);
            shown++;
        }
        bound = most;
    }
    if (left > shown)
        fprintf(f, ", and %d more threads", left - shown);
    fputc('\n', f);
}

void tally__print_window_summary(FILE *f, const tally_window *w)
{
    tally__perf_summary p;
    int steps = tally__window_perf(w, &p);
    fprintf(f, "tally: window %d", w->index);
    if (steps)
        fprintf(f, ", steps %lld-%lld", (long long)w->first_step, (long long)w->last_step);
    fprintf(f, ": %llu records", (unsigned long long)w->records);
    if (w->dropped)
        fprintf(f, ", %llu dropped at the memory cap (raise TALLY_MEMORY_CAP)",
                (unsigned long long)w->dropped);
    if (w->lost || w->io_errno)
        fprintf(f, ", %llu lost (the file could not be written: %s)", (unsigned long long)w->lost,
                strerror(w->io_errno ? w->io_errno : EIO));
    fputc('\n', f);
    if (w->dropped || w->lost)
        print_thread_losses(f);
    if (steps)
        tally__perf_print(f, &p,
                          tally__ident.samples_unit[0] ? tally__ident.samples_unit : "samples");
}
