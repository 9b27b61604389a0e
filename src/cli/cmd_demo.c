/*
 * cmd_demo.c — `tally demo`: profile the built-in Llama-style workload (examples/llama) in this
 * process and print the report.
 *
 * The workload runs in a session under tally_start/tally_stop with the trace files written to
 * -o DIR: one warm-up step that the schedule skips (skip_first = 1), then --steps recorded ones.
 * The trace-ready handler notes where each window's files went and lets the default handler write
 * the Chrome JSON; the report is then read back from the .tally file, as `tally report` would, and
 * printed on stdout in the chosen format, and written as an HTML page beside the trace
 * (PATH.html, tally report --html). By default (`--rmsnorm both`) it runs one session per
 * RMSNorm kind on the same model and ends with a line comparing their time per rmsnorm call,
 * measured from the two traces; `--rmsnorm unfused|fused` runs that one only.
 *
 * Exit status: 0; 1 when the session or the report fails; 2 on a usage error.
 */
#include "analysis/memory.h"
#include "trace/now.h"
#include "cli/commands.h"
#include "cli/runner.h"
#include "record/env_check.h"
#include "report/html_report.h"
#include "report/summary.h"

#include "llama.h"

#include <errno.h>
#include <math.h>
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
    const char *views;    /* --views, or NULL for the default list */
    const char *seq_lens; /* --seq-lens: the sequence-length study instead */
    int top;              /* --top */
    int wide;             /* --wide */
    int fmt;              /* --format: a tl_format */
    char default_views[256];
    int quiet_report; /* the sequence-length study: no report per run */
    /* csv: every report of the run (each variant, each window) in one document, one header
     * row; csv's view column then starts with the trace's name ("demo-fused.ops") */
    tl_out csv;
    int csv_begun;
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
    int64_t attn_ns; /* total time in "attention" operator ranges */
    /* host memory as the workload tells it (tally_alloc): the peak, what it holds, whether it
     * falls in a backward pass; the highest level of activations at any time; the bytes of
     * attention's probabilities a step holds */
    int64_t peak, peak_step, at_peak[TL_MEM_CAT_COUNT], act_peak, probs;
    int peak_in_backward;
};

#define CLI_STATE struct demo

static const char *const rmsnorm_words[] = {"both", "unfused", "fused", NULL};
enum { RMSNORM_BOTH, RMSNORM_UNFUSED, RMSNORM_FUSED };

static const cli_option options[] = {
    CLI_OPTION("output", 'o', CLI_STRING, outdir, "DIR",
               "where the traces go (default ./tally-out)"),
    CLI_OPTION("seq-lens", 0, CLI_STRING, seq_lens, "L1,L2,...",
               "instead: one profiled step per sequence length, then attention time and\n"
               "activation memory per length and how they grow (log-log slope)"),
    CLI_WORDS("rmsnorm", rmsnorm, "KIND", rmsnorm_words,
              "both (default): unfused, then fused, and compare; or unfused, fused"),
    CLI_OPTION("views", 0, CLI_STRING, views, "LIST",
               "views to print (default: the summary and operator views)"),
    CLI_OPTION("top", 0, CLI_COUNT, top, "N", "rows of sortable views (default 0 = all)"),
    CLI_WORDS("format", fmt, "FMT", cli_format_words,
              "text (default), csv or json, on standard output"),
    CLI_OPTION("wide", 0, CLI_FLAG, wide, NULL, "text: print names whole (default: cut at 60)"),
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
             "leave the trace (.tally and .json.gz, for `tally report` and Perfetto) and the\n"
             "report as an HTML page with charts (demo-unfused.html, demo-fused.html: what\n"
             "`tally report --html` writes) in DIR.",
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

/* PATH.tally -> PATH<ext>, malloc'd (NULL when out of memory). */
static char *beside(const char *tally_path, const char *ext)
{
    size_t n = strlen(tally_path);
    if (n > 6 && !strcmp(tally_path + n - 6, ".tally"))
        n -= 6;
    size_t cap = n + strlen(ext) + 1;
    char *out = malloc(cap);
    if (out)
        snprintf(out, cap, "%.*s%s", (int)n, tally_path, ext);
    return out;
}

/* PATH.tally -> PATH.json.gz, from the loaded trace. */
static int write_json(const tl_trace *t, const char *tally_path)
{
    char *out = beside(tally_path, ".json.gz");
    if (!out)
        return 1;
    int rc = cli_write_chrome(command.verb, t, out);
    if (rc == 0)
        fprintf(stderr, "tally demo: trace %s, %s\n", tally_path, out);
    free(out);
    return rc;
}

/* PATH.tally -> PATH.html: every view of the trace as one page (tally report --html). */
static int write_html(const tl_trace *t, const char *tally_path)
{
    char *out = beside(tally_path, ".html");
    if (!out)
        return 1;
    FILE *f = fopen(out, "w");
    int rc = 0;
    if (!f) {
        fprintf(stderr, "tally demo: cannot write %s: %s\n", out, strerror(errno));
        rc = 1;
    } else {
        tl_report_opts ro;
        memset(&ro, 0, sizeof ro);
        tl_error err = {{0}};
        if (tl_report_write_html(f, t, &ro, &err) != 0)
            rc = cli_fail(command.verb, &err);
        if ((ferror(f) | (fclose(f) != 0)) && !rc) {
            fprintf(stderr, "tally demo: error writing %s: %s\n", out, strerror(errno));
            rc = 1;
        }
        if (rc == 0)
            fprintf(stderr, "tally demo: report %s\n", out);
    }
    free(out);
    return rc;
}

/* The host memory figures of s from t (the workload records host memory only). */
static void memory_of(const tl_trace *t, struct variant_stats *s)
{
    tl_mem m;
    if (tl_mem_compute(t, &m) != 0)
        return;
    const tl_mem_device *d = tl_mem_device_of(&m, -1);
    if (d && d->timeline && d->peak > 0) {
        s->peak = d->peak;
        s->peak_step = d->peak_step >= 0 ? m.steps[d->peak_step].number : -1;
        memcpy(s->at_peak, d->at_peak, sizeof s->at_peak);
        for (size_t i = 0; i < t->nev; i++)
            if (t->ev[i].cat == TL_CAT_BACKWARD && t->ev[i].ts <= d->peak_ts &&
                d->peak_ts < t->ev[i].ts + t->ev[i].dur)
                s->peak_in_backward = 1;
        /* activations after every record */
        size_t *pos = malloc((t->nmem ? t->nmem : 1) * sizeof *pos);
        int64_t(*cat)[TL_MEM_CAT_COUNT] = malloc((t->nmem ? t->nmem : 1) * sizeof *cat);
        if (pos && cat) {
            for (size_t i = 0; i < t->nmem; i++)
                pos[i] = i;
            if (tl_mem_alive_at(&m, d, pos, t->nmem, cat) == 0)
                for (size_t i = 0; i < t->nmem; i++)
                    if (cat[i][TL_MEM_ACTIVATION] > s->act_peak)
                        s->act_peak = cat[i][TL_MEM_ACTIVATION];
        }
        free(pos);
        free(cat);
        static const char probs[] = ".attention.probs";
        for (size_t i = 0; i < m.nblocks; i++) {
            const char *n = tl_str(&t->strings, m.blocks[i].name);
            size_t len = strlen(n);
            if (m.blocks[i].step >= 0 && len >= sizeof probs - 1 &&
                !strcmp(n + len - (sizeof probs - 1), probs))
                s->probs += m.blocks[i].bytes;
        }
    }
    tl_mem_free(&m);
}

static void stats_of(const tl_trace *t, struct variant_stats *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->cat == TL_CAT_STEP) {
            s->step_ns += e->dur;
            s->steps++;
        } else if (e->cat == TL_CAT_OPERATOR) {
            const char *n = tl_str(&t->strings, e->name);
            if (!strcmp(n, "rmsnorm")) {
                s->rms_ns += e->dur;
                s->rms_calls++;
            } else if (!strcmp(n, "attention")) {
                s->attn_ns += e->dur;
            }
        }
    }
    memory_of(t, s);
}

/* The memory line of a variant: what the workload holds at its peak. */
static void print_memory(const struct demo *d, const llama_model *m, const struct variant_stats *s)
{
    if (!s->peak)
        return;
    FILE *out = d->fmt == TL_FMT_TEXT ? stdout : stderr;
    char pk[32], p[32], g[32], os[32], a[32], tmp[32], ap[32];
    tl_fmt_bytes(pk, sizeof pk, s->peak);
    tl_fmt_bytes(p, sizeof p, s->at_peak[TL_MEM_PARAMETER]);
    tl_fmt_bytes(g, sizeof g, s->at_peak[TL_MEM_GRADIENT]);
    tl_fmt_bytes(os, sizeof os, s->at_peak[TL_MEM_OPTIMIZER_STATE]);
    tl_fmt_bytes(a, sizeof a, s->at_peak[TL_MEM_ACTIVATION]);
    tl_fmt_bytes(tmp, sizeof tmp, s->at_peak[TL_MEM_TEMPORARY]);
    tl_fmt_bytes(ap, sizeof ap, s->act_peak);
    fprintf(out,
            "\nmemory: peak %s in step %lld%s: parameters %s (%zu x 4 B), gradients %s, AdamW "
            "state %s (2 x), activations %s, temporaries %s; activations peak at %s\n",
            pk, (long long)s->peak_step, s->peak_in_backward ? ", in the backward pass" : "", p,
            llama_param_count(m), g, os, a, tmp, ap);
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
    fprintf(stderr, "tally demo: %d step%s, rmsnorm %s, %d x %d tokens per step\n", c->steps,
            c->steps == 1 ? "" : "s", llama_rmsnorm_name(c->rmsnorm), c->batch, c->seq);
    float loss = llama_step(m, -1); /* the skipped warm-up step */
    double t1 = tl_now_s();
    for (int i = 0; i < c->steps; i++)
        loss = llama_step(m, i);
    double dt = tl_now_s() - t1;
    rc = tally_stop();
    fprintf(stderr,
            "tally demo: %d step%s in %.2f s (wall, writing the trace included), loss %.4f\n",
            c->steps, c->steps == 1 ? "" : "s", dt, loss);
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
        if (write_json(&t, d->paths[i]) != 0 || write_html(&t, d->paths[i]) != 0)
            d->ready_failed = 1;
        tl_report_opts ro;
        memset(&ro, 0, sizeof ro);
        ro.views = d->views ? d->views : d->default_views;
        ro.vo.top = d->top;
        ro.wide = d->wide;
        ro.fmt = (tl_format)d->fmt;
        ro.unit = TL_UNIT_AUTO;
        ro.header = 1;
        ro.vo.brief = !d->views; /* the memory view's short form in the default report */
        char prefix[128];
        if (d->fmt == TL_FMT_CSV) {
            if (!d->csv_begun) {
                tl_out_begin(&d->csv, stdout, TL_FMT_CSV, TL_UNIT_AUTO);
                d->csv_begun = 1;
            }
            const char *base = strrchr(d->paths[i], '/');
            base = base ? base + 1 : d->paths[i];
            const char *dot = strrchr(base, '.');
            snprintf(prefix, sizeof prefix, "%.*s.", dot ? (int)(dot - base) : (int)strlen(base),
                     base);
            ro.out = &d->csv;
            ro.key_prefix = prefix;
        }
        int wrc = d->quiet_report ? 0 : tl_report_write(stdout, &t, &ro, &err);
        struct variant_stats s;
        stats_of(&t, &s);
        st->rms_ns += s.rms_ns, st->rms_calls += s.rms_calls;
        st->step_ns += s.step_ns, st->steps += s.steps;
        st->attn_ns += s.attn_ns;
        if (s.peak > st->peak) { /* the windows' highest peak, with what it holds */
            st->peak = s.peak, st->peak_step = s.peak_step;
            st->peak_in_backward = s.peak_in_backward;
            memcpy(st->at_peak, s.at_peak, sizeof st->at_peak);
        }
        if (s.act_peak > st->act_peak)
            st->act_peak = s.act_peak;
        st->probs += s.probs;
        tl_trace_free(&t);
        if (wrc != 0)
            return cli_fail(command.verb, &err);
        fflush(stdout);
    }
    if (!d->quiet_report)
        print_memory(d, m, st);
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
    if (u->act_peak && f->act_peak) {
        char ua[32], fa[32];
        tl_fmt_bytes(ua, sizeof ua, u->act_peak);
        tl_fmt_bytes(fa, sizeof fa, f->act_peak);
        fprintf(out, "activations peak: unfused %s, fused %s (%.0f%% less with the fused kernel)\n",
                ua, fa, 100.0 * (double)(u->act_peak - f->act_peak) / (double)u->act_peak);
    }
}

/* ---- the sequence-length study ---------------------------------------------------------- */

#define MAX_LENS 16

/* --seq-lens "64,128,256": ascending lengths >= 2 into lens; their count, or -1. */
static int parse_lens(const char *s, int *lens)
{
    int n = 0;
    while (*s) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 2 || v > 65536 || n == MAX_LENS || (n && v <= lens[n - 1]) ||
            (*end && *end != ','))
            return -1;
        lens[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return n ? n : -1;
}

/* The slope of log y against log x (least squares): y grows as x to this power. */
static double loglog_slope(const int *x, const int64_t *y, int n)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (y[i] <= 0)
            continue;
        double lx = log((double)x[i]), ly = log((double)y[i]);
        sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
        k++;
    }
    double den = k * sxx - sx * sx;
    return k >= 2 && den > 0 ? (k * sxy - sx * sy) / den : NAN;
}

enum { Q_SEQ, Q_ATTN, Q_STEP, Q_PROBS, Q_ACT, Q_PEAK, Q_NCOLS };
static const tl_col study_cols[Q_NCOLS] = {
    [Q_SEQ] = {"Seq", "seq", TL_COL_INT, 0},
    [Q_ATTN] = {"Attention time", "attention_us", TL_COL_TIME, 0},
    [Q_STEP] = {"Step time", "step_us", TL_COL_TIME, 0},
    [Q_PROBS] = {"Attention memory", "attention_memory_bytes", TL_COL_BYTES, 0},
    [Q_ACT] = {"Activations peak", "activations_peak_bytes", TL_COL_BYTES, 0},
    [Q_PEAK] = {"Peak", "peak_bytes", TL_COL_BYTES, 0},
};

/* One profiled step per length (after a warm-up step), each a model and a session of its own;
 * then the table and the growth exponents. */
static int seq_study(struct demo *d)
{
    int lens[MAX_LENS];
    int n = parse_lens(d->seq_lens, lens);
    if (n < 0) {
        fprintf(stderr,
                "tally demo: --seq-lens expects ascending lengths >= 2 separated by "
                "commas (at most 16), got '%s'\n",
                d->seq_lens);
        return 2;
    }
    int64_t attn[MAX_LENS], probs[MAX_LENS], act[MAX_LENS];
    tl_table *tab = tl_table_new("Sequence length", "seq_lens", study_cols, Q_NCOLS);
    if (!tab)
        return 1;
    int rc = 0;
    d->quiet_report = 1;
    for (int i = 0; i < n && rc == 0; i++) {
        llama_config c = d->cfg;
        c.seq = lens[i];
        c.steps = 1;
        char err[200], name[32];
        llama_model *m = llama_create(&c, err, sizeof err);
        if (!m) {
            fprintf(stderr, "tally demo: seq %d: %s\n", lens[i], err);
            rc = 1;
            break;
        }
        snprintf(name, sizeof name, "demo-seq%d", lens[i]);
        struct variant_stats st;
        rc = run_variant(d, m, name, &st);
        llama_free(m);
        if (rc != 0 || !st.steps)
            break;
        attn[i] = st.attn_ns / st.steps;
        probs[i] = st.probs / st.steps;
        act[i] = st.act_peak;
        int r = tl_table_add_row(tab);
        tl_table_int(tab, r, Q_SEQ, lens[i]);
        tl_table_time(tab, r, Q_ATTN, attn[i]);
        tl_table_time(tab, r, Q_STEP, st.step_ns / st.steps);
        tl_table_bytes(tab, r, Q_PROBS, probs[i]);
        tl_table_bytes(tab, r, Q_ACT, act[i]);
        tl_table_bytes(tab, r, Q_PEAK, st.peak);
    }
    if (rc == 0 && tab->nrows == n) {
        tl_table_note(tab,
                      "Grows as seq^k (log-log slope over the lengths): attention time k = %.2f, "
                      "attention memory k = %.2f, activations peak k = %.2f.",
                      loglog_slope(lens, attn, n), loglog_slope(lens, probs, n),
                      loglog_slope(lens, act, n));
        tl_table_note(tab, "Attention memory: the softmax probabilities eager attention keeps "
                           "for the backward pass ([batch, heads, seq, seq] per layer), which a "
                           "fused (flash) attention does not keep.");
        tl_out o;
        tl_out_begin(&o, stdout, (tl_format)d->fmt, TL_UNIT_AUTO);
        tl_out_table(&o, tab);
        tl_out_end(&o);
    }
    tl_table_free(tab);
    return rc;
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
    if (d.seq_lens) {
        if (mkdir(d.outdir, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "tally demo: cannot create %s: %s\n", d.outdir, strerror(errno));
            return 1;
        }
        rc = seq_study(&d);
        for (int i = 0; i < d.npaths; i++)
            free(d.paths[i]);
        return rc;
    }

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
            "vocab %d), %d thread%s\n",
            llama_param_count(m), d.cfg.layers, d.cfg.dim, d.cfg.heads, d.cfg.kv_heads, d.cfg.ffn,
            d.cfg.vocab, llama_get_config(m)->threads,
            llama_get_config(m)->threads == 1 ? "" : "s");
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
    if (d.csv_begun)
        tl_out_end(&d.csv);
    for (int i = 0; i < d.npaths; i++)
        free(d.paths[i]);
    llama_free(m);
    return rc;
}
