/*
 * cmd_demo.c — `tally demo`: profile the built-in Llama-style workload (examples/llama) in this
 * process and print the report.
 *
 * The workload runs in a session under tally_start/tally_stop with the trace files written to
 * -o DIR: one warm-up step that the schedule skips (skip_first = 1), then --steps recorded ones.
 * The trace-ready handler notes where each window's files went and lets the default handler write
 * the Chrome JSON; the report is then read back from the .tally file, as `tally report` would, and
 * printed on stdout in the chosen format. By default (`--rmsnorm both`) it runs one session per
 * RMSNorm kind on the same model and ends with a line comparing their time per rmsnorm call,
 * measured from the two traces; `--rmsnorm unfused|fused` runs that one only.
 *
 * Exit status: 0; 1 when the session or the report fails; 2 on a usage error.
 */
#include "cli/commands.h"
#include "report/summary.h"

#include "llama.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <tally.h>

static const char usage[] =
    "usage: tally demo [--steps N] [--rmsnorm unfused|fused|both] [model options] [-o DIR]\n"
    "                  [--views LIST] [--top N] [--format text|csv|json]\n";

enum opt_id { OPT_OUTPUT, OPT_RMSNORM_BOTH, OPT_VIEWS, OPT_TOP, OPT_FORMAT, OPT_HELP };

static const struct option_def {
    enum opt_id id;
    const char *name; /* long form, without "--" */
    char short_name;  /* 0 = none */
    const char *arg;  /* argument name, NULL = flag */
    const char *help;
} options[] = {
    {OPT_OUTPUT, "output", 'o', "DIR", "where the traces go (default ./tally-out)"},
    {OPT_RMSNORM_BOTH, "rmsnorm", 0, "KIND",
     "both (default): unfused, then fused, and compare; or unfused, fused"},
    {OPT_VIEWS, "views", 0, "LIST", "views to print (default: the summary and operator views)"},
    {OPT_TOP, "top", 0, "N", "rows of sortable views (default 0 = all)"},
    {OPT_FORMAT, "format", 0, "FMT", "text (default), csv or json, on standard output"},
    {OPT_HELP, "help", 'h', NULL, "this help"},
};
#define NOPTIONS    (sizeof options / sizeof options[0])

#define MAX_WINDOWS 16
#define DEMO_STEPS  6 /* per variant: 2 x (6 + 1 warm-up) steps, about 4 s on 2 cores */

/* Everything one run of the command knows. */
struct demo {
    llama_config cfg;
    int both; /* --rmsnorm both */
    const char *outdir;
    const char *views; /* --views, or NULL for the default list */
    int top;           /* --top; -1 = not given */
    char default_views[256];
    tl_format fmt;
    /* filled by the trace-ready handler during tally_stop */
    char *paths[MAX_WINDOWS];
    int npaths;
    int ready_failed;
};

/* Measured from one variant's trace. */
struct variant_stats {
    int64_t rms_ns; /* total time in "rmsnorm" operator ranges */
    int64_t rms_calls;
    int64_t step_ns; /* total time in steps */
    int64_t steps;
};

static void help(FILE *f)
{
    fputs(usage, f);
    fputs("\nRun the built-in workload — a Llama-style decoder in C on random weights: token\n"
          "embedding, RMSNorm, rotary embedding, grouped-query attention with a KV cache,\n"
          "SwiGLU MLP, LM head; each step a data-loading phase, a forward pass, a backward-like\n"
          "and an AdamW phase — under the profiler, print the report, and leave the trace\n"
          "(.tally and .json.gz, for `tally report` and Perfetto) in DIR.\n\noptions:\n",
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
    llama_config defaults;
    llama_config_default(&defaults);
    defaults.steps = DEMO_STEPS;
    fputs("\nmodel options:\n", f);
    llama_options_help(f, &defaults, 0);
    fputs(
        "\nTALLY_* environment variables (TALLY_SCHEDULE, TALLY_OUTPUT_DIR, ...) apply as in any\n"
        "profiled program; docs/demo.md describes the workload and what to look for.\n",
        f);
}

/* The program's side of a window: note where its .tally file went. The Chrome JSON and the
 * report are made from that file after tally_stop, as `tally run` does for other programs. */
static void on_ready(const tally_window *w, void *user)
{
    struct demo *d = user;
    if (d->npaths < MAX_WINDOWS && w->path) {
        d->paths[d->npaths] = strdup(w->path);
        if (d->paths[d->npaths])
            d->npaths++;
    }
}

/* PATH.tally -> PATH.json.gz, from the loaded trace. */
static int write_json(const tl_trace *t, const char *tally_path)
{
    size_t n = strlen(tally_path);
    if (n > 6 && !strcmp(tally_path + n - 6, ".tally"))
        n -= 6;
    char *out = malloc(n + 16);
    if (!out)
        return 1;
    snprintf(out, n + 16, "%.*s.json.gz", (int)n, tally_path);
    tl_error err = {{0}};
    int rc = 0;
    if (tl_write_chrome(t, out, &err) != 0) {
        fprintf(stderr, "tally demo: %s\n", err.msg[0] ? err.msg : out);
        rc = 1;
    } else {
        fprintf(stderr, "tally demo: trace %s, %s\n", tally_path, out);
    }
    free(out);
    return rc;
}

static void stats_of(const tl_trace *t, struct variant_stats *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->cat == TL_CAT_STEP) {
            s->step_ns += e->dur;
            s->steps++;
        } else if (e->cat == TL_CAT_OPERATOR && !strcmp(tl_str(&t->strings, e->name), "rmsnorm")) {
            s->rms_ns += e->dur;
            s->rms_calls++;
        }
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One profiled session of the workload with the model's current RMSNorm kind; prints its
 * report and fills st from the trace. Returns 0, or 1 on a failure (message printed). */
static int run_variant(struct demo *d, llama_model *m, const char *name, struct variant_stats *st)
{
    const llama_config *c = llama_get_config(m);
    tally_config tc;
    memset(&tc, 0, sizeof tc);
    tc.output_dir = d->outdir;
    tc.name = name;
    tc.write = TALLY_WRITE_TALLY; /* JSON and the report: made here from the file */
    tc.samples_unit = "tokens";
    tc.skip_first = 1; /* a warm-up step in the session, not recorded (torch's skip_first) */
    tc.active = c->steps;
    tc.repeat = 1;
    tc.on_trace_ready = on_ready;
    tc.user = d;
    for (int i = 0; i < d->npaths; i++)
        free(d->paths[i]);
    d->npaths = 0;
    d->ready_failed = 0;

    int rc = tally_start(&tc);
    if (rc != 0) {
        fprintf(stderr, "tally demo: cannot start profiling: %s\n", tally_strerror(rc));
        return 1;
    }
    fprintf(stderr, "tally demo: %d steps, rmsnorm %s, %d x %d tokens per step\n", c->steps,
            llama_rmsnorm_name(c->rmsnorm), c->batch, c->seq);
    float loss = llama_step(m, -1); /* the skipped warm-up step */
    double t1 = now_s();
    for (int i = 0; i < c->steps; i++)
        loss = llama_step(m, i);
    double dt = now_s() - t1;
    rc = tally_stop();
    fprintf(stderr,
            "tally demo: %d steps in %.2f s (wall, writing the trace included), loss %.4f\n",
            c->steps, dt, loss);
    if (rc != 0) {
        fprintf(stderr, "tally demo: stopping the session failed: %s\n", tally_strerror(rc));
        return 1;
    }
    if (d->npaths == 0) {
        fprintf(stderr, "tally demo: no trace was written (TALLY_TIMER_ONLY or a schedule that "
                        "records no step?)\n");
        memset(st, 0, sizeof *st);
        return d->ready_failed;
    }

    memset(st, 0, sizeof *st);
    for (int i = 0; i < d->npaths; i++) {
        tl_trace t;
        tl_trace_init(&t);
        tl_error err = {{0}};
        if (tl_load(&t, d->paths[i], 0, &err) != 0) {
            fprintf(stderr, "tally demo: %s\n", err.msg);
            tl_trace_free(&t);
            return 1;
        }
        if (write_json(&t, d->paths[i]) != 0)
            d->ready_failed = 1;
        tl_report_opts ro;
        memset(&ro, 0, sizeof ro);
        ro.views = d->views ? d->views : d->default_views;
        ro.vo.top = d->top >= 0 ? d->top : 0;
        ro.fmt = d->fmt;
        ro.unit = TL_UNIT_AUTO;
        ro.header = 1;
        int wrc = tl_report_write(stdout, &t, &ro, &err);
        struct variant_stats s;
        stats_of(&t, &s);
        st->rms_ns += s.rms_ns, st->rms_calls += s.rms_calls;
        st->step_ns += s.step_ns, st->steps += s.steps;
        tl_trace_free(&t);
        if (wrc != 0) {
            fprintf(stderr, "tally demo: %s\n", err.msg);
            return wrc == -1 ? 2 : 1;
        }
        fflush(stdout);
    }
    return d->ready_failed;
}

static void compare(const struct demo *d, const struct variant_stats *u,
                    const struct variant_stats *f)
{
    FILE *out = d->fmt == TL_FMT_TEXT ? stdout : stderr;
    if (!u->rms_calls || !f->rms_calls || !f->rms_ns) {
        fprintf(stderr, "tally demo: no rmsnorm ranges recorded: nothing to compare\n");
        return;
    }
    char a[32], b[32], su[32], sf[32];
    tl_fmt_time(a, sizeof a, u->rms_ns / u->rms_calls, TL_UNIT_AUTO);
    tl_fmt_time(b, sizeof b, f->rms_ns / f->rms_calls, TL_UNIT_AUTO);
    tl_fmt_time(su, sizeof su, u->steps ? u->step_ns / u->steps : 0, TL_UNIT_AUTO);
    tl_fmt_time(sf, sizeof sf, f->steps ? f->step_ns / f->steps : 0, TL_UNIT_AUTO);
    fprintf(out,
            "\nrmsnorm per call: unfused %s (%lld calls), fused %s (%lld calls): unfused/fused = "
            "%.2fx; step: unfused %s, fused %s\n",
            a, (long long)u->rms_calls, b, (long long)f->rms_calls,
            ((double)u->rms_ns / u->rms_calls) / ((double)f->rms_ns / f->rms_calls), su, sf);
}

static int parse(struct demo *d, int argc, char **argv)
{
    char err[200];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help(stdout);
            return -1;
        }
        if (!strcmp(a, "--rmsnorm=both") ||
            (!strcmp(a, "--rmsnorm") && i + 1 < argc && !strcmp(argv[i + 1], "both"))) {
            d->both = 1;
            i += a[9] == 0;
            continue;
        }
        if (!strncmp(a, "--rmsnorm", 9))
            d->both = 0; /* one kind named: run that one only */
        int r = llama_parse_option(&d->cfg, argc, argv, &i, err, sizeof err);
        if (r < 0) {
            fprintf(stderr, "tally demo: %s\n", err);
            return 2;
        }
        if (r > 0)
            continue;
        /* the command's own options */
        const char *val = NULL;
        int id = -1;
        for (size_t k = 0; k < NOPTIONS && id < 0; k++) {
            size_t n = strlen(options[k].name);
            if (!options[k].arg)
                continue;
            if (options[k].short_name && a[0] == '-' && a[1] == options[k].short_name && !a[2])
                id = (int)options[k].id;
            else if (!strncmp(a, "--", 2) && !strncmp(a + 2, options[k].name, n) &&
                     (a[2 + n] == 0 || a[2 + n] == '=')) {
                id = (int)options[k].id;
                if (a[2 + n] == '=')
                    val = a + 3 + n;
            }
        }
        if (id < 0) {
            fprintf(stderr, "tally demo: unknown option '%s'; 'tally demo --help' lists them\n", a);
            return 2;
        }
        if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tally demo: %s needs a value\n", a);
                return 2;
            }
            val = argv[++i];
        }
        switch ((enum opt_id)id) {
        case OPT_OUTPUT:
            d->outdir = val;
            break;
        case OPT_VIEWS:
            d->views = val;
            break;
        case OPT_TOP: {
            char *end;
            errno = 0;
            long v = strtol(val, &end, 10);
            if (errno || end == val || *end || v < 0 || v > 1000000) {
                fprintf(stderr, "tally demo: --top: expected a count, got '%s'\n", val);
                return 2;
            }
            d->top = (int)v;
            break;
        }
        case OPT_FORMAT: {
            int f = tl_format_parse(val);
            if (f < 0) {
                fprintf(stderr, "tally demo: --format: expected text, csv or json, got '%s'\n",
                        val);
                return 2;
            }
            d->fmt = (tl_format)f;
            break;
        }
        case OPT_RMSNORM_BOTH:
        case OPT_HELP:
            break;
        }
    }
    if (llama_config_check(&d->cfg, err, sizeof err) < 0) {
        fprintf(stderr, "tally demo: %s\n", err);
        return 2;
    }
    if (d->views) {
        tl_error e = {{0}};
        if (tl_report_check_views(d->views, &e) != 0) {
            fprintf(stderr, "tally demo: %s\n", e.msg);
            return 2;
        }
    }
    return 0;
}

/* The short summary's views, plus the operator view where this build has one (else the ops
 * table): the workload's operators (rmsnorm and its passes, matmul, attention, ...) are
 * TALLY_OPERATOR ranges, which the ranges view leaves to them. */
static void make_default_views(struct demo *d)
{
    const char *ops = tl_view_lookup("operator") ? "operator" : tl_view_lookup("ops") ? "ops" : "";
    size_t n = 0;
    d->default_views[0] = 0;
    for (int i = 0; i < tl_nview_defs; i++) {
        const tl_view_def *v = &tl_view_defs[i];
        int want = !strcmp(v->name, ops) || (v->in_summary && !v->needs_device);
        if (!want)
            continue;
        int w = snprintf(d->default_views + n, sizeof d->default_views - n, "%s%s", n ? "," : "",
                         v->name);
        if (w < 0 || (size_t)w >= sizeof d->default_views - n)
            break;
        n += (size_t)w;
    }
}

int cmd_demo(int argc, char **argv)
{
    struct demo d;
    memset(&d, 0, sizeof d);
    llama_config_default(&d.cfg);
    d.outdir = "tally-out";
    d.fmt = TL_FMT_TEXT;
    d.top = -1;
    d.both = 1;      /* the default shows the fused/unfused comparison */
    d.cfg.steps = 6; /* per variant: 2 x (6 + 1 warm-up) steps in ~4 s on 2 cores */
    make_default_views(&d);
    int rc = parse(&d, argc, argv);
    if (rc != 0)
        return rc < 0 ? 0 : rc;

    if (mkdir(d.outdir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "tally demo: cannot create %s: %s\n", d.outdir, strerror(errno));
        return 1;
    }
    char err[200];
    llama_model *m = llama_create(&d.cfg, err, sizeof err);
    if (!m) {
        fprintf(stderr, "tally demo: %s\n", err);
        return 1;
    }
    fprintf(stderr,
            "tally demo: model with %zu parameters (%d layers, dim %d, %d/%d heads, ffn %d, "
            "vocab %d), %d threads\n",
            llama_param_count(m), d.cfg.layers, d.cfg.dim, d.cfg.heads, d.cfg.kv_heads, d.cfg.ffn,
            d.cfg.vocab, llama_get_config(m)->threads);
    struct variant_stats su, sf;
    if (d.both) {
        /* json: the two reports as one array, so that stdout stays one document */
        int json = d.fmt == TL_FMT_JSON;
        if (json)
            fputs("[\n", stdout);
        llama_set_rmsnorm(m, LLAMA_RMSNORM_UNFUSED);
        rc = run_variant(&d, m, "demo-unfused", &su);
        if (rc == 0) {
            if (json)
                fputs(",\n", stdout);
            llama_set_rmsnorm(m, LLAMA_RMSNORM_FUSED);
            rc = run_variant(&d, m, "demo-fused", &sf);
        }
        if (json)
            fputs("]\n", stdout);
        if (rc == 0)
            compare(&d, &su, &sf);
    } else {
        rc = run_variant(&d, m,
                         d.cfg.rmsnorm == LLAMA_RMSNORM_FUSED ? "demo-fused" : "demo-unfused", &su);
    }
    for (int i = 0; i < d.npaths; i++)
        free(d.paths[i]);
    llama_free(m);
    return rc;
}
