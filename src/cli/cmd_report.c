/*
 * cmd_report.c — `tally report FILE`: load a trace of any supported format and print the
 * summary views (or, with --html OUT, write them as one HTML page: report/html_report.h).
 *
 * The views themselves, their order and which of them need device events are one table in
 * src/report/summary.c (tl_view_defs): the same registry serves `tally report`, `tally demo`
 * and the summary printed after a run, so a view is registered once, there. tl_report_write
 * writes the report, its header and the trace's loss warnings; cli_run (runner.c) does the rest.
 *
 * Exit status: 0; 1 when the file cannot be read or parsed, or the output cannot be written;
 * 2 on a usage error (unknown option, view, sort key, format or unit).
 */
#include "analysis/job.h"
#include "cli/commands.h"
#include "cli/runner.h"
#include "report/html_report.h"
#include "report/summary.h"

#include <sys/stat.h>

/* The state of one invocation. */
struct report_args {
    cli_job job;
    tl_report_opts ro; /* fmt and unit are taken from job */
    /* the operands: one trace, or a job's (a folder tree of ranks, several files; cmd_job.c) */
    const char *paths[CLI_JOB_MAX_ARGS + 1];
    int threads;      /* -j: threads that read a job's ranks (0 = the available cores) */
    const char *html; /* --html OUT: the page goes to OUT (job.out) instead of text/csv/json */
};
#define CLI_STATE struct report_args

static const char *const window_words[] = {"steps", "all", NULL};

static const cli_option options[] = {
    CLI_OPTION("views", 0, CLI_STRING, ro.views, "LIST",
               "comma-separated views, or 'all' (default); see below"),
    CLI_OPTION("sort", 0, CLI_STRING, ro.vo.sort, "KEY",
               "sort rows by a column key or title (total_us, self, calls, ...)"),
    CLI_OPTION("asc", 0, CLI_FLAG, ro.vo.ascending, NULL, "sort ascending (default: descending)"),
    CLI_OPTION("top", 0, CLI_COUNT, ro.vo.top, "N",
               "keep the first N rows of sortable views (0 = all), the first N findings"),
    CLI_OPTION("thread-sep", 0, CLI_FLAG, ro.vo.thread_sep, NULL,
               "one group of rows per thread (ranges view)"),
    CLI_OPTION("expand", 0, CLI_FLAG, ro.vo.expand, NULL,
               "operator view: list the kernels under each operator"),
    CLI_OPTION("per-stream", 0, CLI_FLAG, ro.vo.per_stream, NULL,
               "kernel view: one row per kernel and stream"),
    CLI_WORDS("window", ro.vo.window_all, "W", window_words,
              "GPU views: 'steps' (default: the profiled steps) or 'all' (the whole file)"),
    CLI_OPTION("linked-only", 0, CLI_FLAG, ro.vo.linked_only, NULL,
               "GPU views: only device work whose launching runtime call is in the file"),
    CLI_OPTION("jobs", 'j', CLI_COUNT, threads, "N",
               "threads: parse a trace and compute its views with N threads (the views at\n"
               "once keep to a memory budget); read a folder's ranks N at a time (default\n"
               "and 0: TALLY_THREADS, else the cores)"),
    CLI_OPTION("html", 0, CLI_STRING, html, "OUT",
               "write the report as one self-contained HTML page to OUT: charts of the step\n"
               "time, timeline, operators, GPU idle, memory; sortable tables (docs/html.md)"),
    CLI_RENDER_OPTIONS,
};

static void views_help(FILE *f)
{
    fputs("views (printed in this order):\n", f);
    for (int i = 0; i < tl_nview_defs; i++)
        fprintf(f, "  %-12s %s%s\n", tl_view_defs[i].name, tl_view_defs[i].help,
                (tl_view_defs[i].needs & TL_NEEDS_DEVICE)   ? " [device]"
                : (tl_view_defs[i].needs & TL_NEEDS_MEMORY) ? " [memory]"
                                                            : "");
    fputs("\n'all' skips the [device] views on a trace without device events and the [memory]\n"
          "views on one without memory events. csv and json carry plain numbers with the unit\n"
          "in the field name (total_us, ratio_pct); docs/VIEWS.md lists every field.\n",
          f);
}

static const cli_command command = {
    .verb = "report",
    .operands = "FILE [FILE...]",
    .what = "a trace file or a folder of traces",
    .operands_off = offsetof(struct report_args, paths),
    .operands_max = CLI_JOB_MAX_ARGS,
    .about =
        "Print the summary views of a trace: tally's .tally files, PyTorch (Kineto or legacy)\n"
        "and Paddle JSON, plain Chrome traces, .json.gz. A folder (searched for traces, as\n"
        "torch's tensorboard_trace_handler or InternLM's rank folders leave them) or several\n"
        "files are one job, one trace per rank: per-rank step times, stragglers, collective\n"
        "skew (docs/report.md, \"A job of several ranks\").",
    CLI_TABLE,
    .more_help = views_help};

static int render(FILE *f, const tl_trace *t, void *state, tl_error *err)
{
    struct report_args *a = state;
    a->ro.fmt = (tl_format)a->job.fmt;
    a->ro.unit = (tl_unit)a->job.unit;
    a->ro.wide = a->job.wide;
    if (a->html)
        return tl_report_write_html(f, t, &a->ro, err);
    return tl_report_write(f, t, &a->ro, err);
}

static int check_views(void *state, tl_error *err)
{
    struct report_args *a = state;
    if (a->html) { /* the page is the output: -o or --format would name a second one */
        if (a->job.out || a->job.fmt != TL_FMT_TEXT) {
            tl_error_setc(err, TL_ERR_USAGE, "--html writes the page to its own OUT: give no %s",
                          a->job.out ? "-o" : "--format");
            return -1;
        }
        a->job.out = a->html;
        a->job.html = 1;
    }
    return tl_report_check_views(a->ro.views, err);
}

/* One trace goes on to the runner; a folder, several files or a job's JSON report (the merge
 * of jobs past one machine) are a job. */
static int takeover(void *state)
{
    struct report_args *a = state;
    struct stat st;
    if (!a->paths[1] && !(stat(a->paths[0], &st) == 0 && S_ISDIR(st.st_mode)) &&
        !tl_job_is_summary(a->paths[0])) {
        a->job.files[0] = a->paths[0];
        a->job.read_threads = a->threads;
        a->ro.threads = a->threads;
        return CLI_CONTINUE;
    }
    return cli_report_job(a->paths, &a->job, a->threads);
}

int cmd_report(int argc, char **argv)
{
    struct report_args a = {.job = {.render = render, .check = check_views, .takeover = takeover},
                            .ro = {.header = 1}};
    return cli_main(&command, argc, argv, &a.job);
}
