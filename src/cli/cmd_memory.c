/*
 * cmd_memory.c — `tally memory FILE`: where the bytes go.
 *
 * Per device the peak allocated and reserved (with its time and step) and the levels at the
 * trace's start and end; the timeline; what the peak holds by category, as a layout tree of
 * dotted names and by the operator that allocated it; bytes per operator (TensorBoard's Memory
 * view); leaks. --log writes InternLM's memory.log. src/analysis/view_memory.c computes it,
 * docs/memory.md defines it.
 *
 * Exit status: 0; 1 when the file cannot be read or parsed, or an output cannot be written;
 * 2 on a usage error.
 */
#include "analysis/memory.h"
#include "analysis/views.h"
#include "cli/commands.h"
#include "cli/runner.h"
#include "report/memory_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* The state of one invocation. */
struct memory_args {
    cli_job job;
    tl_view_opts vo;
    const char *log; /* --log OUT */
};
#define CLI_STATE struct memory_args

/* --device: "cpu" or "host" (-1), "gpu3", "GPU3" or "3"; field: the view options. */
static int parse_device(const char *v, void *field)
{
    tl_view_opts *vo = field;
    if (!strcasecmp(v, "cpu") || !strcasecmp(v, "host") || !strcmp(v, "-1")) {
        vo->device = -1;
        vo->device_set = 1;
        return 0;
    }
    int64_t d;
    if (cli_device_id(v, &d) != 0)
        return -1;
    vo->device = (int32_t)d;
    vo->device_set = 1;
    return 0;
}

static const cli_option options[] = {
    CLI_PARSED("device", vo, "D", parse_device, "cpu, gpuN, mtiaN or N",
               "show one device: cpu (host memory), gpu0 (or 0), ..."),
    CLI_OPTION("log", 0, CLI_STRING, log, "OUT",
               "also write InternLM's memory.log: to OUT when it ends in .log, else to\n"
               "OUT/rank<R>/memory.log (R: the trace's rank, 0 when it has none)"),
    CLI_OPTION("top", 0, CLI_COUNT, vo.top, "N",
               "rows of the per-operator tables (default 20; 0 = 20)"),
    CLI_OPTION("sort", 0, CLI_STRING, vo.sort, "KEY",
               "sort the per-operator table by a column (default self_increase_bytes)"),
    CLI_OPTION("asc", 0, CLI_FLAG, vo.ascending, NULL, "sort ascending"),
    CLI_RENDER_OPTIONS,
};

static void docs_help(FILE *f)
{
    fputs("Tables: Memory (per device), Memory timeline (csv/json: every point), Memory at the\n"
          "peak (by category), Layout at the peak (dotted names), Alive at the peak (by\n"
          "operator), Memory by operator, Leaks. docs/memory.md defines every column and where\n"
          "they follow TensorBoard's PyTorch profiler plugin.\n",
          f);
}

static const cli_command command = CLI_TRACE_COMMAND(
    "memory", "FILE", "a trace file",
    "Where the bytes go: per device the peak (when, which step), the timeline, what the peak\n"
    "holds (parameters, gradients, optimizer state, activations; a layout tree; the operators\n"
    "that allocated it), bytes per operator, leaks. Reads tally's traces and PyTorch's\n"
    "(profile_memory=True) and Paddle's.",
    docs_help);

/* mkdir -p of the folders of path (not path itself). */
static int make_parents(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

static int write_log(const tl_trace *t, const struct memory_args *a, tl_error *err)
{
    tl_mem m;
    if (tl_mem_compute(t, &m) != 0) {
        tl_error_setc(err, TL_ERR_NOMEM, "out of memory");
        return -1;
    }
    const tl_mem_device *d =
        a->vo.device_set ? tl_mem_device_of(&m, a->vo.device) : tl_mem_main_device(&m);
    int rc = -1;
    char path[4096];
    size_t n = strlen(a->log);
    if (!d || !d->timeline) {
        tl_error_set(err, "--log: %s",
                     !t->nmem                 ? "the trace has no memory events"
                     : !d && a->vo.device_set ? "no such device in the trace"
                                              : "no level to log: the memory events carry "
                                                "neither addresses nor the allocator's totals");
        goto out;
    }
    if (n > 4 && !strcmp(a->log + n - 4, ".log"))
        snprintf(path, sizeof path, "%s", a->log);
    else if (snprintf(path, sizeof path, "%s/rank%d/memory.log", a->log,
                      t->rank >= 0 ? (int)t->rank : 0) >= (int)sizeof path) {
        tl_error_set(err, "--log: path too long");
        goto out;
    }
    FILE *f = make_parents(path) == 0 ? fopen(path, "w") : NULL;
    if (!f) {
        tl_error_set(err, "cannot write %s: %s", path, strerror(errno));
        goto out;
    }
    rc = tl_memory_log_write(f, t, &m, d, err);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        if (rc == 0)
            tl_error_set(err, "error writing %s: %s", path, strerror(errno));
        rc = -1;
    }
    if (rc == 0)
        fprintf(stderr, "tally memory: wrote %s\n", path);
out:
    tl_mem_free(&m);
    return rc;
}

static tl_table *views(const tl_trace *t, void *state, tl_error *err)
{
    struct memory_args *a = state;
    a->vo.series = a->job.fmt != TL_FMT_TEXT;
    if (a->log && write_log(&t[0], a, err) != 0)
        return NULL;
    return tl_view_memory(&t[0], &a->vo, err);
}

int cmd_memory(int argc, char **argv)
{
    struct memory_args a = {.job = {.views = views}};
    return cli_main(&command, argc, argv, &a.job);
}
