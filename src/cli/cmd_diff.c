/*
 * cmd_diff.c — `tally diff A B`: what changed between two traces of the same program.
 *
 * Step time before and after; the per-step breakdown (model) compared as means per step; then
 * for the ops table, the kernel summary and the user ranges, one row per name with before, after,
 * delta and ratio of a total (and the self time beside it), sorted by the size of the change,
 * marked faster, slower, new, vanished, or noise when within the spread of the step times
 * (src/analysis/view_diff.c). The two traces may be of different
 * formats: each is read by tl_load. docs/diff.md says what each column means.
 *
 * Exit status: 0; 1 when a file cannot be read or parsed, or the output cannot be written;
 * 2 on a usage error.
 */
#include "analysis/insight.h"
#include "cli/commands.h"
#include "cli/runner.h"

/* The state of one invocation. */
struct diff_args {
    cli_job job;
    const char *views;
    tl_view_opts vo; /* vo.sort carries --metric, vo.top --top */
};
#define CLI_STATE struct diff_args

static const cli_option options[] = {
    CLI_OPTION("views", 0, CLI_STRING, views, "LIST",
               "views to compare: model, breakdown, ops, kernel, ranges (default: all five)"),
    CLI_OPTION("top", 0, CLI_COUNT, vo.top, "N",
               "rows per view, largest changes first (default 20, 0 = all)"),
    CLI_OPTION("metric", 0, CLI_STRING, vo.sort, "KEY",
               "column to compare (default: cuda_total_us when both traces have it,\nelse "
               "cpu_total_us, for ops; total_us otherwise)"),
    CLI_RENDER_OPTIONS,
};

static void docs_help(FILE *f)
{
    fputs("See docs/diff.md for the field names of csv and json output.\n", f);
}

static const cli_command command =
    CLI_TRACE_COMMAND("diff", "A B", "two trace files (A before, B after)",
                      "Compare two traces (any formats): step time, the per-step breakdown, then\n"
                      "per view one row per name with before, after, delta and ratio; faster,\n"
                      "slower, new, vanished, or noise (within the spread of the step times).",
                      docs_help);

static tl_table *views(const tl_trace *t, void *state, tl_error *err)
{
    const struct diff_args *a = state;
    tl_table *tab = tl_view_diff(&t[0], &t[1], a->views, &a->vo, err);
    if (tab)
        tl_table_note(tab, "Before: %s. After: %s.", a->job.files[0], a->job.files[1]);
    return tab;
}

static int check_views(void *state, tl_error *err)
{
    return tl_diff_check_views(((struct diff_args *)state)->views, err);
}

int cmd_diff(int argc, char **argv)
{
    struct diff_args a = {.job = {.views = views, .check = check_views}, .vo = {.top = 20}};
    return cli_main(&command, argc, argv, &a.job);
}
