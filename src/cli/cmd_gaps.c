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

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: tally gaps FILE [--top N] [--threshold-us X] [--kernel-wait-us X] [--sort KEY]\n"
    "                       [--asc] [--unit auto|ns|us|ms|s] [--format text|csv|json] [-o OUT]\n";

enum opt_id {
    OPT_TOP,
    OPT_THRESHOLD,
    OPT_KERNEL_WAIT,
    OPT_SORT,
    OPT_ASC,
    OPT_UNIT,
    OPT_FORMAT,
    OPT_OUTPUT,
    OPT_HELP
};

static const struct option_def {
    enum opt_id id;
    const char *name; /* long form, without "--" */
    char short_name;  /* 0 = none */
    const char *arg;  /* argument name, NULL = flag */
    const char *help;
} options[] = {
    {OPT_TOP, "top", 0, "N", "list the N largest gaps (default 10)"},
    {OPT_THRESHOLD, "threshold-us", 0, "X", "a kernel shorter than X us is 'short' (default 10)"},
    {OPT_KERNEL_WAIT, "kernel-wait-us", 0, "X",
     "a gap under X us after a kernel launched in time is 'kernel wait' (default 30)"},
    {OPT_SORT, "sort", 0, "KEY", "sort the per-stream table by a column (default idle_us)"},
    {OPT_ASC, "asc", 0, NULL, "sort ascending"},
    {OPT_UNIT, "unit", 0, "UNIT", "text times in auto (default), ns, us, ms or s"},
    {OPT_FORMAT, "format", 0, "FMT", "text (default), csv or json"},
    {OPT_OUTPUT, "output", 'o', "OUT", "write to OUT instead of standard output"},
    {OPT_HELP, "help", 'h', NULL, "this help"},
};
#define NOPTIONS (sizeof options / sizeof options[0])

static void help(FILE *f)
{
    fputs(usage, f);
    fputs("\nGPU idle time per stream, inside [first op, last op], split as HolisticTraceAnalysis\n"
          "does: host wait (the op's launch call started after the previous op ended), kernel\n"
          "wait (launched in time, short gap) and other; the largest gaps with the host ranges\n"
          "running during each; kernel launch delay (kernel start - launch call start) and the\n"
          "share of short kernels; the launch queue. Thresholds are in real microseconds.\n"
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
        fprintf(f, "  %-24s %s\n", left, options[i].help);
    }
    fputs("\nSee docs/gaps.md for the definitions and the csv/json field names.\n", f);
}

/* The state of one invocation. */
struct gaps_args {
    const char *file;
    const char *out;
    tl_view_opts vo;
    int64_t kernel_wait_ns;
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

/* Microseconds > 0 to ns; -1 on a bad value. */
static int64_t parse_us(const char *val)
{
    char *end;
    errno = 0;
    double us = strtod(val, &end);
    if (errno || end == val || *end || !(us > 0) || us > 1e12 || isnan(us))
        return -1;
    int64_t ns = (int64_t)llround(us * 1e3);
    return ns > 0 ? ns : -1;
}

/* 0 = go on, 1 = --help printed, -1 = usage error (message printed). */
static int parse_args(int argc, char **argv, struct gaps_args *a)
{
    int only_files = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (only_files || arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (a->file) {
                fprintf(stderr, "tally gaps: one trace file expected, got '%s' and '%s'\n", a->file,
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
            fprintf(stderr, "tally gaps: unknown option '%s'; 'tally gaps --help' lists them\n",
                    arg);
            return -1;
        }
        if (o->arg && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tally gaps: %s needs a value (%s)\n", arg, o->arg);
                return -1;
            }
            val = argv[++i];
        } else if (!o->arg && val) {
            fprintf(stderr, "tally gaps: --%s takes no value\n", o->name);
            return -1;
        }
        switch (o->id) {
        case OPT_TOP: {
            char *end;
            errno = 0;
            long n = strtol(val, &end, 10);
            if (errno || end == val || *end || n < 0 || n > 1000000000) {
                fprintf(stderr, "tally gaps: --top expects a count >= 0, got '%s'\n", val);
                return -1;
            }
            a->vo.top = (int)n;
            break;
        }
        case OPT_THRESHOLD:
        case OPT_KERNEL_WAIT: {
            int64_t ns = parse_us(val);
            if (ns < 0) {
                fprintf(stderr, "tally gaps: --%s expects microseconds > 0, got '%s'\n", o->name,
                        val);
                return -1;
            }
            if (o->id == OPT_THRESHOLD)
                a->vo.threshold_ns = ns;
            else
                a->kernel_wait_ns = ns;
            break;
        }
        case OPT_SORT:
            a->vo.sort = val;
            break;
        case OPT_ASC:
            a->vo.ascending = 1;
            break;
        case OPT_UNIT: {
            int u = tl_unit_parse(val);
            if (u < 0) {
                fprintf(stderr, "tally gaps: --unit expects auto, ns, us, ms or s, got '%s'\n",
                        val);
                return -1;
            }
            a->unit = (tl_unit)u;
            break;
        }
        case OPT_FORMAT: {
            int fm = tl_format_parse(val);
            if (fm < 0) {
                fprintf(stderr, "tally gaps: --format expects text, csv or json, got '%s'\n", val);
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
        fprintf(stderr, "tally gaps: a trace file is expected\n%s", usage);
        return -1;
    }
    return 0;
}

int cmd_gaps(int argc, char **argv)
{
    struct gaps_args a;
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
        fprintf(stderr, "tally gaps: %s\n", err.msg);
        status = 1;
        goto done;
    }
    if (!t.finished && tl_trace_finish(&t) != 0) {
        fprintf(stderr, "tally gaps: %s: out of memory\n", a.file);
        status = 1;
        goto done;
    }
    tab = tl_view_gaps_ex(&t, &a.vo, a.kernel_wait_ns, &err);
    if (!tab) {
        fprintf(stderr, "tally gaps: %s\n", err.msg);
        status = strstr(err.msg, "memory") ? 1 : 2; /* a bad --sort is a usage error */
        goto done;
    }
    if (a.out && strcmp(a.out, "-") != 0) {
        out = fopen(a.out, "w");
        if (!out) {
            fprintf(stderr, "tally gaps: cannot write %s: %s\n", a.out, strerror(errno));
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
            fprintf(stderr, "tally gaps: error writing %s: %s\n", a.out, strerror(errno));
            status = 1;
        }
    }
done:
    tl_table_free(tab);
    tl_trace_free(&t);
    return status;
}
