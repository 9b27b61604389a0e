/*
 * cmd_job.c — `tally report DIR` (or several files): a training job read as one, one trace per
 * rank (analysis/job.h). The ranks are read in threads and reduced to summaries; the job's
 * tables — ranks, step time per rank, stragglers, collectives across ranks, findings — are
 * written like any report's (text, csv, json; -o).
 */
#include "analysis/job.h"
#include "cli/runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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
    double t0 = now_s();
    tl_job j;
    if (tl_job_load(&j, files, n, threads, 1, &err) != 0) {
        tl_job_paths_free(files, n);
        return cli_fail("report", &err);
    }
    tl_job_paths_free(files, n);
    double secs = now_s() - t0;
    tl_table *tab = tl_job_views(&j, job->fmt == TL_FMT_TEXT ? 20 : 0, &err);
    if (!tab) {
        tl_job_free(&j);
        return cli_fail("report", &err);
    }
    FILE *out = stdout;
    int status = 0;
    if (job->out && strcmp(job->out, "-") != 0 && !(out = fopen(job->out, "w"))) {
        fprintf(stderr, "tally report: cannot write %s: %s\n", job->out, strerror(errno));
        status = 1;
        goto done;
    }
    tl_out o;
    tl_out_begin(&o, out, (tl_format)job->fmt, (tl_unit)job->unit);
    o.wide = job->wide;
    /* first: the ranks' summaries, which `tally report node*.json` merges (job_summary.c) */
    if (job->fmt == TL_FMT_JSON) {
        char *sum = tl_job_summary_json(&j);
        if (!sum) {
            tl_error_setc(&err, TL_ERR_NOMEM, "out of memory");
            tl_out_abort(&o);
            status = cli_fail("report", &err);
            if (out != stdout)
                fclose(out);
            goto done;
        }
        tl_out_json(&o, "job_summary", sum);
        free(sum);
    }
    if (job->fmt == TL_FMT_TEXT)
        tl_out_text(&o, "Job: %zu ranks (%lld..%lld), read with %d thread%s in %.2f s\n", j.n,
                    (long long)j.ranks[0].rank, (long long)j.ranks[j.n - 1].rank, j.threads,
                    j.threads == 1 ? "" : "s", secs);
    for (const tl_table *x = tab; x; x = x->next)
        tl_out_table(&o, x);
    tl_out_end(&o);
    if (out != stdout) {
        if (ferror(out) | (fclose(out) != 0)) {
            fprintf(stderr, "tally report: cannot write %s\n", job->out);
            status = 1;
        }
    } else if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "tally report: cannot write the output\n");
        status = 1;
    }
done:
    tl_table_free(tab);
    tl_job_free(&j);
    return status;
}
