/*
 * cmd_report.c — `tally report FILE`: load a trace of any supported format and print the
 * summary views.
 *
 * The views themselves, their order and which of them need device events are one table in
 * src/report/summary.c (tl_view_defs): the same registry serves `tally report`, `tally demo`
 * and the summary printed after a run, so a view is registered once, there.
 *
 * Exit status: 0; 1 when the file cannot be read or parsed, or the output cannot be written;
 * 2 on a usage error (unknown option, view, sort key, format or unit).
 */
#include "cli/commands.h"
#include "report/summary.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: tally report FILE [--views LIST] [--sort KEY] [--asc] [--top N] [--thread-sep]\n"
    "                         [--unit auto|ns|us|ms|s] [--format text|csv|json] [-o OUT]\n";

enum opt_id {
    OPT_VIEWS,
    OPT_SORT,
    OPT_ASC,
    OPT_TOP,
    OPT_THREAD_SEP,
    OPT_EXPAND,
    OPT_PER_STREAM,
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
    {OPT_VIEWS, "views", 0, "LIST", "comma-separated views, or 'all' (default); see below"},
    {OPT_SORT, "sort", 0, "KEY", "sort rows by a column key or title (total_us, self, calls, ...)"},
    {OPT_ASC, "asc", 0, NULL, "sort ascending (default: descending)"},
    {OPT_TOP, "top", 0, "N", "keep the first N rows of sortable views (0 = all)"},
    {OPT_THREAD_SEP, "thread-sep", 0, NULL, "one group of rows per thread (ranges view)"},
    {OPT_EXPAND, "expand", 0, NULL, "operator view: list the kernels under each operator"},
    {OPT_PER_STREAM, "per-stream", 0, NULL, "kernel view: one row per kernel and stream"},
    {OPT_UNIT, "unit", 0, "UNIT", "text times in auto (default), ns, us, ms or s"},
    {OPT_FORMAT, "format", 0, "FMT", "text (default), csv or json"},
    {OPT_OUTPUT, "output", 'o', "OUT", "write to OUT instead of standard output"},
    {OPT_HELP, "help", 'h', NULL, "this help"},
};
#define NOPTIONS (sizeof options / sizeof options[0])

static void help(FILE *f)
{
    fputs(usage, f);
    fputs("\nPrint the summary views of a trace: tally's .tally files, PyTorch (Kineto or legacy)\n"
          "and Paddle JSON, plain Chrome traces, .json.gz.\n\noptions:\n",
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
    fputs("\nviews (printed in this order):\n", f);
    for (int i = 0; i < tl_nview_defs; i++)
        fprintf(f, "  %-12s %s%s\n", tl_view_defs[i].name, tl_view_defs[i].help,
                tl_view_defs[i].needs_device ? " [device]" : "");
    fputs("\n'all' skips the [device] views on a trace without device events. csv and json carry\n"
          "plain numbers with the unit in the field name (total_us, ratio_pct); docs/VIEWS.md\n"
          "lists every field.\n",
          f);
}

/* The state of one invocation. */
struct report_args {
    const char *file;
    const char *out;
    tl_report_opts ro;
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
static int parse_args(int argc, char **argv, struct report_args *a)
{
    int only_files = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (only_files || arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (a->file) {
                fprintf(stderr, "tally report: one trace file expected, got '%s' and '%s'\n",
                        a->file, arg);
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
            fprintf(stderr, "tally report: unknown option '%s'; 'tally report --help' lists them\n",
                    arg);
            return -1;
        }
        if (o->arg && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tally report: %s needs a value (%s)\n", arg, o->arg);
                return -1;
            }
            val = argv[++i];
        } else if (!o->arg && val) {
            fprintf(stderr, "tally report: --%s takes no value\n", o->name);
            return -1;
        }
        switch (o->id) {
        case OPT_VIEWS:
            a->ro.views = val;
            break;
        case OPT_SORT:
            a->ro.vo.sort = val;
            break;
        case OPT_ASC:
            a->ro.vo.ascending = 1;
            break;
        case OPT_TOP: {
            char *end;
            errno = 0;
            long n = strtol(val, &end, 10);
            if (errno || end == val || *end || n < 0 || n > 1000000000) {
                fprintf(stderr, "tally report: --top expects a count >= 0, got '%s'\n", val);
                return -1;
            }
            a->ro.vo.top = (int)n;
            break;
        }
        case OPT_THREAD_SEP:
            a->ro.vo.thread_sep = 1;
            break;
        case OPT_EXPAND:
            a->ro.vo.expand = 1;
            break;
        case OPT_PER_STREAM:
            a->ro.vo.per_stream = 1;
            break;
        case OPT_UNIT: {
            int u = tl_unit_parse(val);
            if (u < 0) {
                fprintf(stderr, "tally report: --unit expects auto, ns, us, ms or s, got '%s'\n",
                        val);
                return -1;
            }
            a->ro.unit = (tl_unit)u;
            break;
        }
        case OPT_FORMAT: {
            int fm = tl_format_parse(val);
            if (fm < 0) {
                fprintf(stderr, "tally report: --format expects text, csv or json, got '%s'\n",
                        val);
                return -1;
            }
            a->ro.fmt = (tl_format)fm;
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
        fprintf(stderr, "tally report: a trace file is expected\n%s", usage);
        return -1;
    }
    return 0;
}

int cmd_report(int argc, char **argv)
{
    struct report_args a;
    memset(&a, 0, sizeof a);
    a.ro.fmt = TL_FMT_TEXT;
    a.ro.unit = TL_UNIT_AUTO;
    a.ro.header = 1;
    int pr = parse_args(argc, argv, &a);
    if (pr != 0)
        return pr > 0 ? 0 : 2;

    tl_error err = {{0}};
    /* A misspelt view is a usage error: say so before reading a big file. */
    if (tl_report_check_views(a.ro.views, &err) != 0) {
        fprintf(stderr, "tally report: %s\n", err.msg);
        return 2;
    }

    tl_trace t;
    tl_trace_init(&t);
    int status = 0;
    FILE *out = stdout;
    if (tl_load(&t, a.file, 1, &err) != 0) {
        fprintf(stderr, "tally report: %s\n", err.msg);
        status = 1;
        goto done;
    }
    if (!t.finished && tl_trace_finish(&t) != 0) {
        fprintf(stderr, "tally report: %s: out of memory\n", a.file);
        status = 1;
        goto done;
    }
    if (a.out && strcmp(a.out, "-") != 0) {
        out = fopen(a.out, "w");
        if (!out) {
            fprintf(stderr, "tally report: cannot write %s: %s\n", a.out, strerror(errno));
            out = stdout;
            status = 1;
            goto done;
        }
    }
    int rc = tl_report_write(out, &t, &a.ro, &err);
    if (rc != 0) {
        fprintf(stderr, "tally report: %s\n", err.msg);
        status = rc == -1 ? 2 : 1; /* a bad --sort is a usage error */
    }
    if (out != stdout) {
        int bad = ferror(out);
        if (fclose(out) != 0 || bad) {
            fprintf(stderr, "tally report: error writing %s: %s\n", a.out, strerror(errno));
            if (!status)
                status = 1;
        }
    }
done:
    tl_trace_free(&t);
    return status;
}
