/*
 * cmd_report.c — `tally report FILE`: load a trace of any supported format and print the
 * summary views.
 *
 * The views themselves, their order and which of them need device events are one table in
 * src/report/summary.c (tl_view_defs): the same registry serves `tally report`, `tally demo`
 * and the summary printed after a run, so a view is registered once, there. tl_report_write
 * writes the report, its header and the trace's loss warnings; cli_run (runner.c) does the rest.
 *
 * Exit status: 0; 1 when the file cannot be read or parsed, or the output cannot be written;
 * 2 on a usage error (unknown option, view, sort key, format or unit).
 */
#include "cli/commands.h"
#include "cli/runner.h"
#include "report/summary.h"

/* The state of one invocation. */
struct report_args {
    cli_job job;
    tl_report_opts ro; /* fmt and unit are taken from job */
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
               "keep the first N rows of sortable views (0 = all)"),
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

static const cli_command command = CLI_TRACE_COMMAND(
    "report", "FILE", "a trace file",
    "Print the summary views of a trace: tally's .tally files, PyTorch (Kineto or legacy)\n"
    "and Paddle JSON, plain Chrome traces, .json.gz.",
    views_help);

static int render(FILE *f, const tl_trace *t, void *state, tl_error *err)
{
    struct report_args *a = state;
    a->ro.fmt = (tl_format)a->job.fmt;
    a->ro.unit = (tl_unit)a->job.unit;
    a->ro.wide = a->job.wide;
    return tl_report_write(f, t, &a->ro, err);
}

static int check_views(void *state, tl_error *err)
{
    return tl_report_check_views(((struct report_args *)state)->ro.views, err);
}

int cmd_report(int argc, char **argv)
{
    struct report_args a = {.job = {.render = render, .check = check_views}, .ro = {.header = 1}};
    return cli_main(&command, argc, argv, &a.job);
}
