/*
 * cmd_diff.c — `tally diff A B`: what changed between two traces of the same program.
 *
 * Step time before and after, then for the ops table, the kernel summary and the user ranges,
 * one row per name with before, after, delta and ratio, sorted by the size of the change, with
 * new and vanished rows marked (src/analysis/view_diff.c). The two traces may be of different
 * formats: each is read by tl_load. docs/diff.md says what each column means.
 *
 * Exit status: 0; 1 when a file cannot be read or parsed, or the output cannot be written;
 * 2 on a usage error.
 */
#include "analysis/insight.h"
#include "cli/commands.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: tally diff A B [--views ops,kernel,ranges] [--top N] [--metric KEY]\n"
    "                      [--unit auto|ns|us|ms|s] [--format text|csv|json] [-o OUT]\n";

enum opt_id { OPT_VIEWS, OPT_TOP, OPT_METRIC, OPT_UNIT, OPT_FORMAT, OPT_OUTPUT, OPT_HELP };

static const struct option_def {
    enum opt_id id;
    const char *name; /* long form, without "--" */
    char short_name;  /* 0 = none */
    const char *arg;  /* argument name, NULL = flag */
    const char *help;
} options[] = {
    {OPT_VIEWS, "views", 0, "LIST", "views to compare: ops, kernel, ranges (default: all three)"},
    {OPT_TOP, "top", 0, "N", "rows per view, largest changes first (default 20, 0 = all)"},
    {OPT_METRIC, "metric", 0, "KEY",
     "column to compare (default: self_cuda_us / self_cpu_us for ops, total_us otherwise)"},
    {OPT_UNIT, "unit", 0, "UNIT", "text times in auto (default), ns, us, ms or s"},
    {OPT_FORMAT, "format", 0, "FMT", "text (default), csv or json"},
    {OPT_OUTPUT, "output", 'o', "OUT", "write to OUT instead of standard output"},
    {OPT_HELP, "help", 'h', NULL, "this help"},
};
#define NOPTIONS (sizeof options / sizeof options[0])

static void help(FILE *f)
{
    fputs(usage, f);
    fputs("\nCompare two traces (A = before, B = after; any formats tally reads): the average\n"
          "step time, then per view one row per name with before, after, delta = after - before\n"
          "and ratio = after / before, sorted by |delta|; rows only in B are 'new', rows only in\n"
          "A 'vanished'. The rows are those of the views 'tally report' and 'tally ops' print.\n"
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
    fputs("\nSee docs/diff.md for the field names of csv and json output.\n", f);
}

/* The state of one invocation. */
struct diff_args {
    const char *file[2];
    const char *out;
    const char *views;
    tl_view_opts vo; /* vo.sort carries --metric, vo.top --top */
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
static int parse_args(int argc, char **argv, struct diff_args *a)
{
    int only_files = 0, nfiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (only_files || arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (nfiles == 2) {
                fprintf(stderr, "tally diff: two trace files expected, got a third: '%s'\n", arg);
                return -1;
            }
            a->file[nfiles++] = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            only_files = 1;
            continue;
        }
        const char *val;
        const struct option_def *o = find_option(arg, &val);
        if (!o) {
            fprintf(stderr, "tally diff: unknown option '%s'; 'tally diff --help' lists them\n",
                    arg);
            return -1;
        }
        if (o->arg && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tally diff: %s needs a value (%s)\n", arg, o->arg);
                return -1;
            }
            val = argv[++i];
        } else if (!o->arg && val) {
            fprintf(stderr, "tally diff: --%s takes no value\n", o->name);
            return -1;
        }
        switch (o->id) {
        case OPT_VIEWS:
            a->views = val;
            break;
        case OPT_TOP: {
            char *end;
            errno = 0;
            long n = strtol(val, &end, 10);
            if (errno || end == val || *end || n < 0 || n > 1000000000) {
                fprintf(stderr, "tally diff: --top expects a count >= 0, got '%s'\n", val);
                return -1;
            }
            a->vo.top = (int)n;
            break;
        }
        case OPT_METRIC:
            a->vo.sort = val;
            break;
        case OPT_UNIT: {
            int u = tl_unit_parse(val);
            if (u < 0) {
                fprintf(stderr, "tally diff: --unit expects auto, ns, us, ms or s, got '%s'\n",
                        val);
                return -1;
            }
            a->unit = (tl_unit)u;
            break;
        }
        case OPT_FORMAT: {
            int fm = tl_format_parse(val);
            if (fm < 0) {
                fprintf(stderr, "tally diff: --format expects text, csv or json, got '%s'\n", val);
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
    if (nfiles != 2) {
        fprintf(stderr, "tally diff: two trace files are expected (before and after)\n%s", usage);
        return -1;
    }
    return 0;
}

int cmd_diff(int argc, char **argv)
{
    struct diff_args a;
    memset(&a, 0, sizeof a);
    a.fmt = TL_FMT_TEXT;
    a.unit = TL_UNIT_AUTO;
    a.vo.top = 20;
    int pr = parse_args(argc, argv, &a);
    if (pr != 0)
        return pr > 0 ? 0 : 2;

    tl_error err = {{0}};
    /* A misspelt view is a usage error: say so before reading two big files. */
    if (tl_diff_check_views(a.views, &err) != 0) {
        fprintf(stderr, "tally diff: %s\n", err.msg);
        return 2;
    }
    tl_trace t[2];
    tl_trace_init(&t[0]);
    tl_trace_init(&t[1]);
    tl_table *tab = NULL;
    int status = 0;
    FILE *out = stdout;
    for (int k = 0; k < 2; k++) {
        if (tl_load(&t[k], a.file[k], 1, &err) != 0) {
            fprintf(stderr, "tally diff: %s\n", err.msg);
            status = 1;
            goto done;
        }
        if (!t[k].finished && tl_trace_finish(&t[k]) != 0) {
            fprintf(stderr, "tally diff: %s: out of memory\n", a.file[k]);
            status = 1;
            goto done;
        }
    }
    tab = tl_view_diff(&t[0], &t[1], a.views, &a.vo, &err);
    if (!tab) {
        fprintf(stderr, "tally diff: %s\n", err.msg);
        status = strstr(err.msg, "memory") ? 1 : 2; /* an unknown --metric is a usage error */
        goto done;
    }
    tl_table_note(tab, "Before: %s. After: %s.", a.file[0], a.file[1]);
    if (a.out && strcmp(a.out, "-") != 0) {
        out = fopen(a.out, "w");
        if (!out) {
            fprintf(stderr, "tally diff: cannot write %s: %s\n", a.out, strerror(errno));
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
            fprintf(stderr, "tally diff: error writing %s: %s\n", a.out, strerror(errno));
            status = 1;
        }
    }
done:
    tl_table_free(tab);
    tl_trace_free(&t[0]);
    tl_trace_free(&t[1]);
    return status;
}
