/*
 * cmd_gaps.c — `tally gaps FILE`: where the GPU sat idle and why, and how kernels were
 * launched.
 *
 * Three tables (src/analysis/view_gaps.c): idle time per stream split into host wait, kernel
 * wait and other, with the launch queue; the largest gaps with the host ranges running during
 * each; kernel launch statistics (launch delay, share of short kernels). docs/gaps.md gives
 * the definitions.
 *
 * Exit status: 0; 1 when the file cannot be read or parsed, or the output cannot be written;
 * 2 on a usage error.
 */
#include "analysis/insight.h"
#include "cli/commands.h"
#include "cli/runner.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <strings.h>

/* The state of one invocation. */
struct gaps_args {
    cli_job job;
    tl_view_opts vo;
    int64_t kernel_wait_ns; /* 0 = the view's default */
};
#define CLI_STATE struct gaps_args

static const char *const window_words[] = {"steps", "all", NULL};

/* A stream or device id: an integer >= 0 ("gpu3" and "GPU3" for a device); field: the view
 * options. */
static int parse_stream(const char *v, void *field)
{
    tl_view_opts *vo = field;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!isdigit((unsigned char)*v) || *end || errno)
        return -1;
    vo->stream = n;
    vo->stream_set = 1;
    return 0;
}

static int parse_device(const char *v, void *field)
{
    tl_view_opts *vo = field;
    int64_t d;
    if (cli_device_id(v, &d) != 0)
        return -1;
    vo->device = (int32_t)d;
    vo->device_set = 1;
    return 0;
}

static const cli_option options[] = {
    CLI_OPTION("top", 0, CLI_COUNT, vo.top, "N", "list the N largest gaps (default 10)"),
    CLI_OPTION("threshold-us", 0, CLI_MICROS, vo.threshold_ns, "X",
               "a kernel shorter than X us is 'short' (default 10)"),
    CLI_OPTION("kernel-wait-us", 0, CLI_MICROS, kernel_wait_ns, "X",
               "a gap under X us after a kernel launched in time is 'kernel wait'\n(default 30)"),
    CLI_OPTION("sort", 0, CLI_STRING, vo.sort, "KEY",
               "sort the per-stream table by a column (default idle_us)"),
    CLI_OPTION("asc", 0, CLI_FLAG, vo.ascending, NULL, "sort ascending"),
    CLI_PARSED("stream", vo, "S", parse_stream, "a stream id >= 0",
               "only stream S (its gaps are listed whatever its role)"),
    CLI_PARSED("device", vo, "D", parse_device, "gpuN, mtiaN or N", "only device D"),
    CLI_WORDS("window", vo.window_all, "W", window_words,
              "'steps' (default: the profiled steps) or 'all' (the whole file)"),
    CLI_OPTION("linked-only", 0, CLI_FLAG, vo.linked_only, NULL,
               "only ops whose launching runtime call is in the file"),
    CLI_RENDER_OPTIONS,
};

static void docs_help(FILE *f)
{
    fputs("See docs/gaps.md for the definitions and the csv/json field names.\n", f);
}

/* docs/gaps.md has the rest: how each wait is told apart (thresholds in real
 * microseconds), the launch queue, the csv/json fields */
static const cli_command command = CLI_TRACE_COMMAND(
    "gaps", "FILE", "a trace file",
    "GPU idle time per stream split into host wait, kernel wait and other (as HTA does),\n"
    "the largest gaps with the host ranges during each, kernel launch delay, short kernels.",
    docs_help);

static tl_table *views(const tl_trace *t, void *state, tl_error *err)
{
    const struct gaps_args *a = state;
    return tl_view_gaps_ex(&t[0], &a->vo, a->kernel_wait_ns, err);
}

int cmd_gaps(int argc, char **argv)
{
    struct gaps_args a = {.job = {.views = views}};
    return cli_main(&command, argc, argv, &a.job);
}
