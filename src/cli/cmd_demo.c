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
#include "cli/runner.h"
#include "record/env_check.h"
#include "report/summary.h"

#include "llama.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>

#include <tally.h>

#define MAX_WINDOWS 16
#define DEMO_STEPS  6 /* per variant: 2 x (6 + 1 warm-up) steps, about 4 s on 2 cores */

/* Everything one run of the command knows. */
struct demo {
    llama_config cfg; /* the model options (examples/llama parses them) */
    int rmsnorm;      /* --rmsnorm: an index in rmsnorm_words */
    const char *outdir;
    const char *views; /* --views, or NULL for the default list */
    int top;           /* --top */
    int fmt;           /* --format: a tl_format */
    char default_views[256];
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

#define CLI_STATE struct demo

static const char *const rmsnorm_words[] = {"both", "unfused", "fused", NULL};
enum { RMSNORM_BOTH, RMSNORM_UNFUSED, RMSNORM_FUSED };

static const cli_option options[] = {
    CLI_OPTION("output", 'o', CLI_STRING, outdir, "DIR",
               "where the traces go (default ./tally-out)"),
    CLI_WORDS("rmsnorm", rmsnorm, "KIND", rmsnorm_words,
              "both (default): unfused, then fused, and compare; or unfused, fused"),
    CLI_OPTION("views", 0, CLI_STRING, views, "LIST",
               "views to print (default: the summary and operator views)"),
    CLI_OPTION("top", 0, CLI_COUNT, top, "N", "rows of sortable views (default 0 = all)"),
    CLI_WORDS("format", fmt, "FMT", cli_format_words,
              "text (default), csv or json, on standard output"),
};

/* The model's options belong to examples/llama (tally-llama and the benchmark take them too):
 * its parser reads them, its help lists them. */
static int model_option(void *state, int argc, char **argv, int *i, char *msg, size_t cap)
{
    struct demo *d = state;
    return llama_parse_option(&d->cfg, argc, argv, i, msg, cap);
}

/* Their names, for "did you mean", read from that help so that the list stays llama's. */
static const char *const *model_option_names(void)
{
    static char text[4096];
    static const char *names[64];
    size_t n = 0;
    FILE *f = fmemopen(text, sizeof text - 1, "w");
    if (f) {
        llama_options_help(f, NULL, 1);
        fclose(f);
    }
    for (char *p = text; n + 1 < sizeof names / sizeof names[0] && (p = strstr(p, "--"));) {
        names[n++] = p += 2;
        p += strcspn(p, " \n");
        if (*p)
            *p++ = 0;
    }
    names[n] = NULL;
    return names;
}

static void model_help(FILE *f)
{
    llama_config defaults;
    llama_config_default(&defaults);
    defaults.steps = DEMO_STEPS;
    fputs("model options:\n", f);
    llama_options_help(f, &defaults, 0);
    fputs(
        "\nTALLY_* environment variables (TALLY_SCHEDULE, TALLY_OUTPUT_DIR, ...) apply as in any\n"
        "profiled program; docs/demo.md describes the workload and what to look for.\n",
        f);
}

static const cli_command command = {
    .verb = "demo",
    .about = "Run the built-in workload — a Llama-style decoder in C on random weights: token\n"
             "embedding, RMSNorm, rotary embedding, grouped-query attention with a KV cache,\n"
             "SwiGLU MLP, LM head; each step a data-loading phase, a forward pass, a\n"
             "backward-like and an AdamW phase — under the profiler, print the report, and\n"
             "leave the trace (.tally and .json.gz, for `tally report` and Perfetto) in DIR.",
    CLI_TABLE,
    .more_help = model_help,
    .other = model_option,
    .other_usage = "[model options]",
    .other_names = model_option_names,
};

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
    int rc = cli_write_chrome(command.verb, t, out);
    if (rc == 0)
        fprintf(stderr, "tally demo: trace %s, %s\n", tally_path, out);
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
    /* the recorder never overwrites a trace: the demo replaces its own previous run's files
     * (DIR/demo-fused.tally ...) so that they keep their names */
    const char *exts[] = {".tally", ".json.gz"};
    for (int i = 0; i < 2; i++) {
        char old[PATH_MAX];
        if (snprintf(old, sizeof old, "%s/%s%s", d->outdir, name, exts[i]) < (int)sizeof old)
            unlink(old);
    }
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
        if (cli_load(command.verb, &t, d->paths[i], 0) != 0) {
            tl_trace_free(&t);
            return 1;
        }
        if (write_json(&t, d->paths[i]) != 0)
            d->ready_failed = 1;
        tl_report_opts ro;
        memset(&ro, 0, sizeof ro);
        ro.views = d->views ? d->views : d->default_views;
        ro.vo.top = d->top;
        ro.fmt = (tl_format)d->fmt;
        ro.unit = TL_UNIT_AUTO;
        ro.header = 1;
        int wrc = tl_report_write(stdout, &t, &ro, &err);
        struct variant_stats s;
        stats_of(&t, &s);
        st->rms_ns += s.rms_ns, st->rms_calls += s.rms_calls;
        st->step_ns += s.step_ns, st->steps += s.steps;
        tl_trace_free(&t);
        if (wrc != 0)
            return cli_fail(command.verb, &err);
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

/* The command line into d: CLI_CONTINUE, or the exit status. */
static int parse(struct demo *d, int argc, char **argv)
{
    int rc = cli_parse(&command, argc, argv, d);
    if (rc != CLI_CONTINUE)
        return rc;
    if (d->rmsnorm != RMSNORM_BOTH)
        d->cfg.rmsnorm = d->rmsnorm == RMSNORM_FUSED ? LLAMA_RMSNORM_FUSED : LLAMA_RMSNORM_UNFUSED;
    char err[512];
    if (llama_config_check(&d->cfg, err, sizeof err) < 0) {
        fprintf(stderr, "tally demo: %s\n", err);
        return 2;
    }
    tl_error e = {{0}};
    if (d->views && tl_report_check_views(d->views, &e) != 0)
        return cli_fail(command.verb, &e);
    /* the session reads the TALLY_* settings: a misspelt one would silently do nothing */
    if (tally__env_check(err, sizeof err) != 0) {
        fprintf(stderr, "tally demo: %s\n", err);
        return 2;
    }
    return CLI_CONTINUE;
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
        int want = !strcmp(v->name, ops) || (v->in_summary && !(v->needs & TL_NEEDS_DEVICE));
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
    d.rmsnorm = RMSNORM_BOTH; /* the default shows the fused/unfused comparison */
    d.cfg.steps = DEMO_STEPS;
    make_default_views(&d);
    int rc = parse(&d, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;

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
    if (d.rmsnorm == RMSNORM_BOTH) {
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
