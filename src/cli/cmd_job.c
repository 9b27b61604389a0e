/*
 * cmd_job.c — `tally report DIR` (or several files): a training job read as one, one trace per
 * rank (analysis/job.h). The ranks are read in threads and reduced to summaries; the job's
 * tables — ranks, step time per rank, stragglers, collectives across ranks, findings — are
 * written like any report's (text, csv, json; -o).
 */
#include "analysis/job.h"
#include "trace/now.h"
#include "cli/runner.h"
#include "report/html_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The job's tables, as job asks (format, unit, wide); html: as the JSON of a page. */
struct job_out {
    const tl_job *j;
    const tl_table *tab;
    const cli_job *job;
    double secs;
};

static int write_job(FILE *out, void *arg, tl_error *err)
{
    const struct job_out *w = arg;
    tl_format fmt = w->job->html ? TL_FMT_JSON : (tl_format)w->job->fmt;
    tl_out o;
    tl_out_begin(&o, out, fmt, (tl_unit)w->job->unit);
    o.wide = w->job->wide;
    /* first: the ranks' summaries, which `tally report node*.json` merges (job_summary.c) */
    if (fmt == TL_FMT_JSON) {
        char *sum = tl_job_summary_json(w->j);
        if (!sum) {
            tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
            tl_out_abort(&o);
            return -1;
        }
        tl_out_json(&o, "job_summary", sum);
        free(sum);
    }
    const tl_job *j = w->j;
    if (fmt == TL_FMT_TEXT)
        tl_out_text(&o, "Job: %zu ranks (%lld..%lld), read with %d thread%s in %.2f s\n", j->n,
                    (long long)j->ranks[0].rank, (long long)j->ranks[j->n - 1].rank, j->threads,
                    j->threads == 1 ? "" : "s", w->secs);
    for (const tl_table *x = w->tab; x; x = x->next)
        tl_out_table(&o, x);
    tl_out_end(&o);
    return 0;
}

int cli_report_job(const char *const *paths, const cli_job *job, int threads)
{
    int nargs = 0;
    while (paths[nargs])
        nargs++;
    tl_error err = {{0}};
    char **files = NULL;
    size_t n = 0;
    if (tl_job_paths(paths, nargs, &files, &n, &err) != 0)
        return cli_fail("report", &err);
    double t0 = tl_now_s();
    tl_job j;
    if (tl_job_load(&j, files, n, threads, 1, &err) != 0) {
        tl_job_paths_free(files, n);
        return cli_fail("report", &err);
    }
    tl_job_paths_free(files, n);
    struct job_out w = {&j, NULL, job, tl_now_s() - t0};
    tl_table *tab = tl_job_views(&j, !job->html && job->fmt == TL_FMT_TEXT ? 20 : 0, &err);
    w.tab = tab;
    FILE *out = tab ? cli_open_out("report", job->out) : NULL;
    int status = !tab ? cli_fail("report", &err) : !out ? 1 : 0;
    if (out) {
        /* a page is named "Job"; it calls itself "Job: N ranks (a..b)" from its ranks table */
        int rc = job->html ? tl_html_write(out, "Job", write_job, &w, NULL, &err)
                           : write_job(out, &w, &err);
        if (rc != 0)
            status = cli_fail("report", &err);
        status = cli_close_out("report", out, job->out, status);
    }
    tl_table_free(tab);
    tl_job_free(&j);
    return status;
}
