/*
 * cmd_ops.c — `tally ops FILE`: the ops table, PyTorch's key_averages().table() computed from
 * any trace tally reads.
 *
 * One row per op, annotation, runtime call and device event name with Self CPU, CPU total,
 * Self CUDA, CUDA total, their shares, memory and calls, as PyTorch defines them
 * (src/analysis/view_ops.c; docs/ops.md). Sort keys are our column keys or torch's sort_by
 * names (cpu_time_total, self_cuda_time_total, count, cpu_memory_usage, ...).
 *
 * Exit status: 0; 1 when the file cannot be read or parsed, or the output cannot be written;
 * 2 on a usage error (unknown option, sort key, format or unit).
 */
#include "analysis/views.h"
#include "cli/commands.h"
#include "cli/runner.h"

/* The state of one invocation. */
struct ops_args {
    cli_job job;
    tl_view_opts vo;
};
#define CLI_STATE struct ops_args

static const cli_option options[] = {
    CLI_OPTION("sort", 0, CLI_STRING, vo.sort, "KEY",
               "sort by a column key or torch sort_by name; 'none' keeps first-seen order\n"
               "(default: self_cuda_us with device time, else cpu_total_us)"),
    CLI_OPTION("asc", 0, CLI_FLAG, vo.ascending, NULL, "sort ascending (default: descending)"),
    CLI_OPTION("top", 0, CLI_COUNT, vo.top, "N",
               "print the first N rows (0 = all; percentages use all rows)"),
    CLI_OPTION("group-by-shape", 0, CLI_FLAG, vo.group_by_shape, NULL,
               "one row per op and input shapes"),
    CLI_RENDER_OPTIONS,
};

static void sort_keys_help(FILE *f)
{
    fputs("sort keys: self_cpu_us, cpu_total_us, cpu_avg_us, self_cuda_us, cuda_total_us,\n"
          "cuda_avg_us, cpu_mem_bytes, self_cpu_mem_bytes, cuda_mem_bytes, self_cuda_mem_bytes,\n"
          "calls, name; or torch's cpu_time_total, self_cpu_time_total, cuda_time_total,\n"
          "self_cuda_time_total, cpu_time, cuda_time, count, cpu_memory_usage,\n"
          "self_cpu_memory_usage, cuda_memory_usage, self_cuda_memory_usage. docs/ops.md\n"
          "defines every column.\n",
          f);
}

static const cli_command command = CLI_TRACE_COMMAND(
    "ops", "FILE", "a trace file",
    "PyTorch's key_averages().table() for any trace tally reads (PyTorch, Paddle, tally,\n"
    "Chrome): every op, annotation, runtime call and device event name with Self CPU, CPU\n"
    "total, Self CUDA, CUDA total, CPU/CUDA memory and calls, as PyTorch defines them.",
    sort_keys_help);

static tl_table *views(const tl_trace *t, void *state, tl_error *err)
{
    const struct ops_args *a = state;
    tl_view_opts vo = a->vo;
    vo.made_rows = 1; /* the table goes only to tl_out */
    return tl_view_ops(&t[0], &vo, err);
}

int cmd_ops(int argc, char **argv)
{
    struct ops_args a = {.job = {.views = views}};
    return cli_main(&command, argc, argv, &a.job);
}
