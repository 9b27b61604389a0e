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

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: tally ops FILE [--sort KEY] [--asc] [--top N] [--group-by-shape]\n"
    "                      [--unit auto|ns|us|ms|s] [--format text|csv|json] [-o OUT]\n";

enum opt_id { OPT_SORT, OPT_ASC, OPT_TOP, OPT_SHAPE, OPT_UNIT, OPT_FORMAT, OPT_OUTPUT, OPT_HELP };

static const struct option_def {
    enum opt_id id;
    const char *name; /* long form, without "--" */
    char short_name;  /* 0 = none */
    const char *arg;  /* argument name, NULL = flag */
    const char *help;
} options[] = {
    {OPT_SORT, "sort", 0, "KEY",
     "sort by a column key or torch sort_by name; 'none' keeps first-seen order\n"
     "                             (default: self_cuda_us with device time, else cpu_total_us)"},
    {OPT_ASC, "asc", 0, NULL, "sort ascending (default: descending)"},
    {OPT_TOP, "top", 0, "N", "print the first N rows (0 = all; percentages use all rows)"},
    {OPT_SHAPE, "group-by-shape", 0, NULL, "one row per op and input shapes"},
    {OPT_UNIT, "unit", 0, "UNIT", "text times in auto (default), ns, us, ms or s"},
    {OPT_FORMAT, "format", 0, "FMT", "text (default), csv or json"},
    {OPT_OUTPUT, "output", 'o', "OUT", "write to OUT instead of standard output"},
    {OPT_HELP, "help", 'h', NULL, "this help"},
};
#define NOPTIONS (sizeof options / sizeof options[0])

static void help(FILE *f)
{
    fputs(usage, f);
    fputs("\nPyTorch's key_averages().table() for any trace tally reads (PyTorch, Paddle, tally,\n"
          "Chrome): every op, annotation, runtime call and device event name with Self CPU,\n"
          "CPU total, Self CUDA, CUDA total, CPU/CUDA memory and calls, as PyTorch defines them.\n"
          "\noptions:\n",
          f);
    for (size_t i = 0; i < NOPTIONS; i++) {
        char left[48];
        if (options[i].short_name)
            snprintf(left, sizeof left, "-%c, --%s%s%s", options[i].short_name, options[i].name,
                     options[i].arg ? " " : "", options[i].arg ? options[i].arg : "");
        else
            snprintf(left, sizeof left, "    --%s%s%s", options[i].name, options[i].arg ? " " : "",
                     options[i].arg ? options[i].arg : "");
        fprintf(f, "  %-26s %s\n", left, options[i].help);
    }
    fputs("\nsort keys: self_cpu_us, cpu_total_us, cpu_avg_us, self_cuda_us, cuda_total_us,\n"
          "cuda_avg_us, cpu_mem_bytes, self_cpu_mem_bytes, cuda_mem_bytes, self_cuda_mem_bytes,\n"
          "calls, name; or torch's cpu_time_total, self_cpu_time_total, cuda_time_total,\n"
          "self_cuda_time_total, cpu_time, cuda_time, count, cpu_memory_usage,\n"
          "self_cpu_memory_usage, cuda_memory_usage, self_cuda_memory_usage. docs/ops.md\n"
          "defines every column.\n",
          f);
}

/* The state of one invocation. */
struct ops_args {
    const char *file;
    const char *out;
    tl_view_opts vo;
    tl_format fmt;
    tl_unit unit;
};

static const struct option_def *find_option(const char *arg, const char **value)
{
    *value = NULL;
    if (arg[0] == '-' && arg[1] == '-') {
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        for (size_t i = 0; i < NOPTIONS; i++)
            if (strlen(options[i].name) == n && strncmp(options[i].name, name, n) == 0) {
                if (eq)
                    *value = eq + 1;
                return &options[i];
            }
        return NULL;
    }
    if (arg[0] == '-' && arg[1] && !arg[2])
        for (size_t i = 0; i < NOPTIONS; i++)
            if (options[i].short_name == arg[1])
                return &options[i];
    return NULL;
}

/* 0 = go on, 1 = --help printed, -1 = usage error (message printed). */
static int parse_args(int argc, char **argv, struct ops_args *a)
{
    int only_files = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (only_files || arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (a->file) {
                fprintf(stderr, "tally ops: one trace file expected, got '%s' and '%s'\n", a->file,
                        arg);
                return -1;
            }
            a->file = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            only_files = 1;
            continue;
        }
        const char *val;
        const struct option_def *o = find_option(arg, &val);
        if (!o) {
            fprintf(stderr, "tally ops: unknown option '%s'; 'tally ops --help' lists them\n", arg);
            return -1;
        }
        if (o->arg && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tally ops: %s needs a value (%s)\n", arg, o->arg);
                return -1;
            }
            val = argv[++i];
        } else if (!o->arg && val) {
            fprintf(stderr, "tally ops: --%s takes no value\n", o->name);
            return -1;
        }
        switch (o->id) {
        case OPT_SORT:
            a->vo.sort = val;
            break;
        case OPT_ASC:
            a->vo.ascending = 1;
            break;
        case OPT_TOP: {
            char *end;
            errno = 0;
            long n = strtol(val, &end, 10);
            if (errno || end == val || *end || n < 0 || n > 1000000000) {
                fprintf(stderr, "tally ops: --top expects a count >= 0, got '%s'\n", val);
                return -1;
            }
            a->vo.top = (int)n;
            break;
        }
        case OPT_SHAPE:
            a->vo.group_by_shape = 1;
            break;
        case OPT_UNIT: {
            int u = tl_unit_parse(val);
            if (u < 0) {
                fprintf(stderr, "tally ops: --unit expects auto, ns, us, ms or s, got '%s'\n", val);
                return -1;
            }
            a->unit = (tl_unit)u;
            break;
        }
        case OPT_FORMAT: {
            int fm = tl_format_parse(val);
            if (fm < 0) {
                fprintf(stderr, "tally ops: --format expects text, csv or json, got '%s'\n", val);
                return -1;
            }
            a->fmt = (tl_format)fm;
            break;
        }
        case OPT_OUTPUT:
            a->out = val;
            break;
        case OPT_HELP:
            help(stdout);
            return 1;
        }
    }
    if (!a->file) {
        fprintf(stderr, "tally ops: a trace file is expected\n%s", usage);
        return -1;
    }
    return 0;
}

int cmd_ops(int argc, char **argv)
{
    struct ops_args a;
    memset(&a, 0, sizeof a);
    a.fmt = TL_FMT_TEXT;
    a.unit = TL_UNIT_AUTO;
    int pr = parse_args(argc, argv, &a);
    if (pr != 0)
        return pr > 0 ? 0 : 2;

    tl_error err = {{0}};
    tl_trace t;
    tl_trace_init(&t);
    tl_table *tab = NULL;
    int status = 0;
    FILE *out = stdout;
    if (tl_load(&t, a.file, 1, &err) != 0) {
        fprintf(stderr, "tally ops: %s\n", err.msg);
        status = 1;
        goto done;
    }
    if (!t.finished && tl_trace_finish(&t) != 0) {
        fprintf(stderr, "tally ops: %s: out of memory\n", a.file);
        status = 1;
        goto done;
    }
    tab = tl_view_ops(&t, &a.vo, &err);
    if (!tab) {
        fprintf(stderr, "tally ops: %s\n", err.msg);
        status = strstr(err.msg, "out of memory") ? 1 : 2; /* a bad --sort is a usage error */
        goto done;
    }
    if (a.out && strcmp(a.out, "-") != 0) {
        out = fopen(a.out, "w");
        if (!out) {
            fprintf(stderr, "tally ops: cannot write %s: %s\n", a.out, strerror(errno));
            out = stdout;
            status = 1;
            goto done;
        }
    }
    tl_out o;
    tl_out_begin(&o, out, a.fmt, a.unit);
    for (const tl_table *x = tab; x; x = x->next)
        tl_out_table(&o, x);
    tl_out_end(&o);
    if (out != stdout) {
        int bad = ferror(out);
        if (fclose(out) != 0 || bad) {
            fprintf(stderr, "tally ops: error writing %s: %s\n", a.out, strerror(errno));
            status = 1;
        }
    }
done:
    tl_table_free(tab);
    tl_trace_free(&t);
    return status;
}
