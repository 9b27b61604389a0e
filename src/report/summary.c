/*
 * summary.c — the registry of report views and the writer of a whole report.
 *
 * The registry is one table, in print order (Paddle's order: device, overview, model, perf,
 * distributed, operator, kernel, memcpy, ranges; then ops, gaps, and findings last). A view is
 * added by adding a line: its name on the command line, its function (declared in
 * analysis/views.h), whether it needs device events, whether it takes --sort and
 * --top, whether it belongs to the short summary printed after a run.
 *
 * Each view is written as soon as it is computed and freed before the next one is computed,
 * so that a report holds one view's tables at a time (a trace with a row per distinct name
 * makes two such tables, ops and ranges). A bad --sort key still gives one error line and no
 * output: views are held until one of them takes the key. A failing view (out of memory) stops
 * the report after the views before it, with its error.
 */
#include "report/summary.h"
#include "trace/checked.h"
#include "trace/now.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The categories whose events or distinct names a view's estimate counts (tl_view_def.own_cats,
 * name_cats) */
#define RANGES  (1 << TL_CAT_USER)
#define OPS     (1 << TL_CAT_OPERATOR)
#define KERNELS (1 << TL_CAT_KERNEL)
#define HOST    (RANGES | OPS)
/* device work: what the device views build their intervals of */
#define DEVICE                                                                                     \
    ((1 << TL_CAT_KERNEL) | (1 << TL_CAT_MEMCPY) | (1 << TL_CAT_MEMSET) | (1 << TL_CAT_GPU_USER))
/* the ops view: every event torch turns into a row (view_ops.c) */
#define ROWS                                                                                       \
    ((1 << TL_CAT_COUNT) - 1 -                                                                     \
     ((1 << TL_CAT_PYTHON) | (1 << TL_CAT_OVERHEAD) | (1 << TL_CAT_INSTANT) |                      \
      (1 << TL_CAT_COUNTER)))

/* clang-format off */
const tl_view_def tl_view_defs[] = {
    /* name          function              needs             sort  summary  cost  memos                 scratch  mem  own  own_cats  dev  name  keep  cats      help */
    {"device",       tl_view_device,       TL_NEEDS_DEVICE,  0,    1,       31,   0,                    4,       0,   32,  DEVICE,   0,   0,    0,    0,        "per device and stream: busy time (kernels, copies), utilization"},
    {"overview",     tl_view_overview,     0,                0,    1,       58,   1 << TL_MEMO_PHASES,  1,       0,   24,  HOST,     16,  0,    0,    0,        "time per event type (interval union), ratio to the step time"},
    {"model",        tl_view_model,        0,                0,    1,       41,   1 << TL_MEMO_PHASES,  3,       0,   0,   0,        0,   0,    0,    0,        "per step: Dataloader, Forward, Backward, Optimization, Other"},
    {"perf",         tl_view_perf,         0,                0,    1,       9,    0,                    0,       0,   0,   0,        0,   0,    0,    0,        "step time, reader cost, throughput: avg/max/min"},
    {"breakdown",    tl_view_breakdown,    0,                0,    0,       93,   0,                    10,      0,   30,  RANGES,   48,  0,    0,    0,        "per step: Kernel, Memcpy, Memset, Runtime, DataLoader, CPU Exec, Other (TensorBoard)"},
    {"gpu",          tl_view_gpu,          TL_NEEDS_DEVICE,  0,    0,       28,   0,                    0,       0,   50,  DEVICE,   0,   0,    0,    0,        "per device over all streams: computation, communication, memcpy, exposed, idle"},
    {"distributed",  tl_view_distributed,  TL_NEEDS_DEVICE,  0,    0,       31,   0,                    1,       0,   32,  DEVICE,   0,   0,    0,    0,        "communication vs computation and their overlap"},
    {"operator",     tl_view_operator,     0,                1,    0,       62,   0,                    1,       0,   24,  OPS,      0,   88,   84,   OPS,      "host operators: calls, CPU total/self, GPU time of their kernels"},
    {"kernel",       tl_view_kernel,       TL_NEEDS_DEVICE,  1,    1,       32,   0,                    1,       0,   0,   0,        0,   53,   44,   KERNELS,  "kernels by name: calls, total/avg/max/min, share of GPU time"},
    {"memcpy",       tl_view_memcpy,       TL_NEEDS_DEVICE,  1,    0,       20,   0,                    1,       0,   0,   0,        0,   0,    0,    0,        "copies by kind and memsets: calls, bytes, time, GB/s"},
    {"ranges",       tl_view_ranges,       0,                1,    1,       25,   0,                    1,       0,   8,   RANGES,   0,   53,   52,   RANGES,   "user-defined ranges by name: calls, total, self, avg/max/min"},
    {"memory",       tl_view_memory,       TL_NEEDS_MEMORY,  1,    1,       135,  1 << TL_MEMO_MEMORY,  0,       62,  0,   0,        0,   0,    0,    0,        "per device: peak, timeline, what the peak holds, per operator, leaks"},
    {"ops",          tl_view_ops,          0,                1,    0,       137,  0,                    9,       50,  0,   0,        0,   53,   48,   ROWS,     "PyTorch's key_averages().table(): self/total CPU and CUDA time"},
    {"gaps",         tl_view_gaps,         TL_NEEDS_DEVICE,  1,    0,       86,   0,                    4,       0,   33,  DEVICE,   0,   0,    0,    0,        "GPU idle time, its causes, kernel launches"},
    {"findings",     tl_view_findings,     0,                0,    1,       259,  1 << TL_MEMO_MEMORY,  7,       0,   0,   0,        34,  8,    0,    HOST,     "ranked findings with their evidence (printed last)"},
};
/* clang-format on */
const int tl_nview_defs = (int)(sizeof tl_view_defs / sizeof tl_view_defs[0]);

const tl_view_def *tl_view_lookup(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; i < tl_nview_defs; i++)
        if (strcasecmp(tl_view_defs[i].name, name) == 0)
            return &tl_view_defs[i];
    return NULL;
}

static void say(void (*fn)(const char *line, void *arg), void *arg, const char *line, int *n)
{
    if (fn)
        fn(line, arg);
    (*n)++;
}

int tl_trace_warnings(const tl_trace *t, void (*fn)(const char *line, void *arg), void *arg)
{
    /* a killed program writes no counts: the reader counts the ranges it found open itself */
    uint64_t open = t->open_ranges > t->unclosed ? t->open_ranges : t->unclosed;
    struct {
        uint64_t n;
        const char *what, *one; /* the line for n > 1, and for 1 */
    } w[] = {
        {t->dropped, "records dropped at the memory cap: the trace is incomplete",
         "record dropped at the memory cap: the trace is incomplete"},
        {t->bad_pops, "pops without a matching push", "pop without a matching push"},
        {t->bad_ends, "range ends with an unknown, stale or foreign handle",
         "range end with an unknown, stale or foreign handle"},
        {t->unmatched_ends, "'E' events without a 'B' open on their thread: ignored",
         "'E' event without a 'B' open on its thread: ignored"},
        {t->negative_durs, "'X' events with a negative dur: read as lasting 0",
         "'X' event with a negative dur: read as lasting 0"},
        {t->clamped_times,
         "events whose ts or end lies more than 146 years (2^62 ns) from 0: clamped there, "
         "their times are not to be trusted",
         "event whose ts or end lies more than 146 years (2^62 ns) from 0: clamped there, its "
         "times are not to be trusted"},
        {t->calls_outside, "calls made outside a session (before start or after stop)",
         "call made outside a session (before start or after stop)"},
        {open,
         "ranges never closed (still open when recording ended; drawn to the end of the trace)",
         "range never closed (still open when recording ended; drawn to the end of the trace)"},
        {t->mem_unmatched_frees,
         "tally_free calls of addresses tally_alloc never gave (or gave and saw freed): not "
         "recorded",
         "tally_free call of an address tally_alloc never gave (or gave and saw freed): not "
         "recorded"},
        {t->mem_reused,
         "tally_alloc calls at an address still allocated (counted as a free and a new "
         "allocation)",
         "tally_alloc call at an address still allocated (counted as a free and a new "
         "allocation)"},
        {t->mem_bad_sizes,
         "tally_alloc calls of more than INT64_MAX bytes (a negative size?): ignored",
         "tally_alloc call of more than INT64_MAX bytes (a negative size?): ignored"},
    };
    int n = 0;
    char line[256];
    for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
        if (!w[i].n)
            continue;
        snprintf(line, sizeof line, "warning: %llu %s", (unsigned long long)w[i].n,
                 w[i].n == 1 ? w[i].one : w[i].what);
        say(fn, arg, line, &n);
    }
    if (t->lost) {
        snprintf(line, sizeof line,
                 "warning: %llu records lost: the file could not be written (%s); the trace "
                 "ends where writing stopped",
                 (unsigned long long)t->lost, t->io_errno ? strerror(t->io_errno) : "I/O error");
        say(fn, arg, line, &n);
    }
    /* who lost them: the worst threads (the reader sorted them) */
    if (t->nthread_losses && (t->dropped || t->lost)) {
        size_t k = (size_t)snprintf(line, sizeof line, "warning: records lost per thread:");
        for (uint32_t i = 0; i < t->nthread_losses && i < 4 && k < sizeof line; i++) {
            const struct tl_thread_loss *l = &t->thread_losses[i];
            const char *name = "";
            for (uint32_t j = 0; j < t->ntracks; j++)
                if (t->tracks[j].kind == TL_TRACK_THREAD && t->tracks[j].tid == l->tid)
                    name = tl_str(&t->strings, t->tracks[j].name);
            k += (size_t)snprintf(line + k, sizeof line - k, "%s %s%stid %lld %llu", i ? "," : "",
                                  name, *name ? " " : "", (long long)l->tid,
                                  (unsigned long long)(l->dropped + l->lost));
        }
        if (t->nthread_losses > 4 && k < sizeof line)
            snprintf(line + k, sizeof line - k, ", and %u more threads", t->nthread_losses - 4);
        say(fn, arg, line, &n);
    }
    /* a .tally file the program did not finish writing (killed, disk full) */
    if (t->cut_at) {
        snprintf(line, sizeof line,
                 "warning: the file ends inside a chunk at offset %llu (the program was "
                 "killed?): read up to its last complete record",
                 (unsigned long long)t->cut_at);
        say(fn, arg, line, &n);
    }
    if (t->unwritten) {
        snprintf(line, sizeof line,
                 "warning: %llu chunks of the file were never written in full (the first at "
                 "offset %llu; the program was killed?): read up to their last complete record",
                 (unsigned long long)t->unwritten, (unsigned long long)t->unwritten_at);
        say(fn, arg, line, &n);
    }
    return n;
}

/* Split the comma list into selected[]; -1 on an unknown word. */
static int select_views(const char *views, int *selected, int *explicit_all, tl_error *err)
{
    memset(selected, 0, (size_t)tl_nview_defs * sizeof *selected);
    *explicit_all = 0;
    if (!views || !*views || strcasecmp(views, "all") == 0) {
        for (int i = 0; i < tl_nview_defs; i++)
            selected[i] = 1;
        *explicit_all = 1;
        return 0;
    }
    const char *p = views;
    while (*p) {
        const char *q = strchr(p, ',');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        char word[64];
        if (n >= sizeof word)
            n = sizeof word - 1;
        memcpy(word, p, n);
        word[n] = '\0';
        if (n > 0) {
            if (strcasecmp(word, "all") == 0) {
                for (int i = 0; i < tl_nview_defs; i++)
                    selected[i] = 1;
                *explicit_all = 1;
            } else {
                const tl_view_def *d = tl_view_lookup(word);
                if (!d) {
                    char names[512];
                    size_t k = 0;
                    names[0] = '\0';
                    for (int i = 0; i < tl_nview_defs && k + 1 < sizeof names; i++)
                        k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", i ? "," : "",
                                              tl_view_defs[i].name);
                    tl_error_setc(err, TL_ERR_USAGE, "unknown view '%s'; expected one of: all,%s",
                                  word, names);
                    return -1;
                }
                selected[d - tl_view_defs] = 1;
            }
        }
        p += n;
        if (q)
            p = q + 1;
        else
            break;
    }
    return 0;
}

int tl_report_check_views(const char *views, tl_error *err)
{
    int sel[64], all;
    return select_views(views, sel, &all, err);
}

static void warn_text(const char *line, void *arg)
{
    tl_out_text((tl_out *)arg, "%s", line);
}

static void warn_stderr(const char *line, void *arg)
{
    (void)arg;
    fprintf(stderr, "tally: %s\n", line);
}

/* Each source's word for scripts (JSON "source") and name for people (the header line). */
static const struct {
    tl_source source;
    const char *slug, *name;
} sources[] = {
    {TL_SRC_TALLY, "tally", "tally"},
    {TL_SRC_KINETO, "kineto", "PyTorch (Kineto)"},
    {TL_SRC_TORCH_LEGACY, "torch_legacy", "PyTorch (legacy)"},
    {TL_SRC_PADDLE, "paddle", "Paddle"},
    {TL_SRC_CHROME, "chrome", "Chrome trace"},
};

static const char *source_word(tl_source s, int slug)
{
    for (size_t i = 0; i < sizeof sources / sizeof *sources; i++)
        if (sources[i].source == s)
            return slug ? sources[i].slug : sources[i].name;
    return "unknown";
}

/* Threads and streams that hold an event or a memory row: a track a reader made for a thread
 * that did nothing (the collector thread a .tally file names; JSON has no such track) is not
 * counted, so that a trace and its export say the same. */
static void track_counts(const tl_trace *t, uint32_t *threads, uint32_t *streams)
{
    *threads = *streams = 0;
    uint8_t *used = calloc(t->ntracks ? t->ntracks : 1, 1); /* NULL (no memory): count all */
    for (size_t i = 0; used && i < t->nev; i++)
        if (t->ev[i].track < t->ntracks)
            used[t->ev[i].track] = 1;
    for (size_t i = 0; used && i < t->nmem; i++)
        if (t->mem[i].track < t->ntracks)
            used[t->mem[i].track] = 1;
    for (uint32_t i = 0; i < t->ntracks; i++) {
        if (used && !used[i])
            continue;
        if (t->tracks[i].kind == TL_TRACK_STREAM)
            (*streams)++;
        else
            (*threads)++;
    }
    free(used);
}

char *tl_trace_meta_json(const tl_trace *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    uint32_t threads, streams;
    track_counts(t, &threads, &streams);
    int64_t t0 = 0, t1 = 0;
    tl_trace_span(t, &t0, &t1);
    tl_window w;
    tl_profiled_window(t, &w);
    fputs("{\"path\": ", f);
    if (t->path)
        tl_json_str(f, t->path);
    else
        fputs("null", f);
    fprintf(f, ", \"source\": \"%s\", \"format\": \"%s\"", source_word(t->source, 1),
            source_word(t->source, 0));
    if (t->rank >= 0)
        fprintf(f, ", \"rank\": %d", (int)t->rank);
    else
        fputs(", \"rank\": null", f);
    if (t->world_size > 0)
        fprintf(f, ", \"world_size\": %d", (int)t->world_size);
    else
        fputs(", \"world_size\": null", f);
    const char *dist[2][2] = {{"backend", t->backend}, {"nccl_version", t->nccl_version}};
    for (int k = 0; k < 2; k++) {
        fprintf(f, ", \"%s\": ", dist[k][0]);
        if (dist[k][1][0])
            tl_json_str(f, dist[k][1]);
        else
            fputs("null", f);
    }
    if (t->pid)
        fprintf(f, ", \"pid\": %lld", (long long)t->pid);
    else
        fputs(", \"pid\": null", f);
    fprintf(f, ", \"events\": %zu, \"threads\": %u, \"streams\": %u, \"steps\": %d", t->nev,
            threads, streams, w.nsteps);
    fprintf(f, ", \"span_us\": %.3f", (double)(t1 - t0) / 1e3);
    if (t->wall_offset)
        fprintf(f, ", \"start_unix_us\": %.3f", (double)tl_add_sat(t0, t->wall_offset) / 1e3);
    else
        fputs(", \"start_unix_us\": null", f);
    fputs(", \"devices\": [", f);
    for (uint32_t i = 0; i < t->ndevices; i++) {
        const tl_device *d = &t->devices[i];
        fprintf(f, "%s{\"id\": %d, \"name\": ", i ? ", " : "", (int)d->id);
        tl_json_str(f, tl_str(&t->strings, d->name));
        if (d->memory > 0)
            fprintf(f, ", \"memory_bytes\": %lld", (long long)d->memory);
        else
            fputs(", \"memory_bytes\": null", f);
        if (d->sm_count > 0)
            fprintf(f, ", \"sm_count\": %d", (int)d->sm_count);
        else
            fputs(", \"sm_count\": null", f);
        if (d->cc_major > 0)
            fprintf(f, ", \"compute_capability\": \"%d.%d\"}", (int)d->cc_major, (int)d->cc_minor);
        else
            fputs(", \"compute_capability\": null}", f);
    }
    fputs("]}", f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void header_line(tl_out *out, const tl_trace *t)
{
    uint32_t threads, streams;
    track_counts(t, &threads, &streams);
    int64_t t0 = 0, t1 = 0;
    tl_trace_span(t, &t0, &t1);
    char span[64];
    tl_fmt_time(span, sizeof span, t1 - t0, TL_UNIT_AUTO);
    tl_out_text(out, "Trace: %s (%s): %zu event%s, %u thread%s, %u stream%s, span %s",
                t->path ? t->path : "(memory)", source_word(t->source, 0), t->nev,
                t->nev == 1 ? "" : "s", threads, threads == 1 ? "" : "s", streams,
                streams == 1 ? "" : "s", span);
}

/* The output of a report, begun at its first table: the header and the warnings go first. */
typedef struct report_out {
    tl_out own;
    tl_out *out; /* own, or the caller's (tl_report_opts.out) */
    int begun;
} report_out;

static void report_begin(report_out *r, FILE *f, const tl_trace *t, const tl_report_opts *o)
{
    if (r->begun)
        return;
    r->begun = 1;
    tl_out *out = o->out ? o->out : &r->own;
    r->out = out;
    if (!o->out)
        tl_out_begin(out, f, o->fmt, o->unit);
    out->wide = o->wide;
    if (o->fmt == TL_FMT_JSON) {
        char *meta = tl_trace_meta_json(t);
        tl_out_json(out, "trace", meta);
        free(meta);
    }
    if (o->header && o->fmt == TL_FMT_TEXT)
        header_line(out, t);
    if (o->fmt == TL_FMT_CSV)
        tl_trace_warnings(t, warn_stderr, NULL);
    else
        tl_trace_warnings(t, warn_text, out);
    if (o->header && o->fmt == TL_FMT_TEXT)
        tl_out_text(out, "%s", "");
}

/* Write the held views (in order) and free them. */
static void report_flush(report_out *r, FILE *f, const tl_trace *t, const tl_report_opts *o,
                         tl_table **held)
{
    report_begin(r, f, t, o);
    for (int i = 0; i < tl_nview_defs; i++) {
        tl_table_name_accel(held[i], tl_accel_name(t)); /* (out of memory: left as it was) */
        for (tl_table *tab = held[i]; tab && o->key_prefix; tab = tab->next) {
            size_t n = strlen(o->key_prefix) + strlen(tab->key) + 1;
            char *k = malloc(n);
            if (k) { /* (out of memory: the key as it was) */
                snprintf(k, n, "%s%s", o->key_prefix, tab->key);
                free(tab->key);
                tab->key = k;
            }
        }
        for (const tl_table *tab = held[i]; tab; tab = tab->next)
            tl_out_table(r->out, tab);
        tl_table_free(held[i]);
        held[i] = NULL;
    }
}

/* ---- views computed ahead -------------------------------------------------------------- */

/* Whether the report shows view d (sel: it was selected). */
static int view_wanted(const tl_view_def *d, int sel, int all, int device, const tl_trace *t,
                       const tl_report_opts *o)
{
    return sel && !(all && (d->needs & TL_NEEDS_DEVICE) && !device) &&
           !(all && (d->needs & TL_NEEDS_MEMORY) && !t->nmem) && !(o->summary && !d->in_summary);
}

/* The options view d is computed with. */
static tl_view_opts view_opts(const tl_view_def *d, const tl_report_opts *o)
{
    tl_view_opts vo = o->vo;
    vo.series = o->fmt != TL_FMT_TEXT; /* memory: the whole timeline in csv and json */
    vo.brief |= o->summary;
    vo.made_rows = 1;   /* tables go only to tl_out */
    if (!d->sortable) { /* --top still caps the findings (the others have no rows to cut) */
        vo.sort = NULL;
        vo.ascending = 0;
    } else if (o->summary && vo.top == 0) {
        vo.top = 10;
    }
    return vo;
}

/* The views of a report (idx: their tl_view_defs indices, in order), computed by up to 64
 * threads, the costliest first (order: views by tl_view_def.cost, so that the longest view does
 * not start last and bound the report), and written in order. A thread starts the first view in
 * that order whose scratch estimate fits in what the views running hold of the budget, so that
 * memory does not grow with the thread count (scratch_budget). A table of a row per distinct
 * name computed before its turn counts in the budget until it is written (keep). When none
 * runs, the view the writer waits for starts, fitting or not, and so does any other when
 * nothing is held and its table holds no row per name. While the writer writes a table, no
 * view starts that does not fit beside it: a table of 1M names (~70 MB) is not written while
 * the next such view is computed. */
typedef struct ahead {
    const tl_trace *t;
    const tl_report_opts *o;
    int idx[64], n;
    int order[64];              /* views in the order threads start them */
    int readers[TL_MEMO_COUNT]; /* views not yet computed that read each shared result */
    size_t need[64];            /* view k's scratch estimate, bytes */
    size_t keep[64];            /* what view k's table holds until written, bytes (<= need) */
    /* A shared result's estimate (bytes), counted in inuse once, from the start of its first
     * reader (which makes it) to its release after the last. */
    size_t memo_need[TL_MEMO_COUNT];
    unsigned char memo_held[TL_MEMO_COUNT];
    size_t budget, inuse; /* scratch: allowed at once; held by the running views and results */
    int running;          /* views being computed by the threads */
    tl_report_sched sched;
    tl_table *res[64];
    tl_error err[64];
    unsigned char started[64], done[64];
    int stop, nth;
    int waiting; /* the view the writer waits for; -1 while it writes (its table held) */
    double t0;   /* when the report began (TALLY_READ_STATS) */
    pthread_t th[64];
    pthread_mutex_t mu;
    pthread_cond_t cv;
} ahead;

long tl_proc_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kb = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0) {
            kb = strtol(line + n, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

int tl_peak_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return -1;
    int rc = fputs("5", f) < 0;
    return fclose(f) != 0 || rc ? -1 : 0;
}

/* What the memory replay (tl_mem_of, shared by the memory and findings views) keeps, bytes a
 * memory record (the 1 GB trace of bench_json: 24.7 MB for 430,513 records). */
#define MEMORY_REPLAY_KEPT 60
/* What the phase ranges (tl_phases_of, shared by the model view and the overview) keep, bytes an
 * event: the outermost range of each (4), and the ranges themselves (8 each, fewer than an
 * event in 8 on PyTorch's traces). */
#define PHASES_KEPT 5

/* The loaded trace's own arrays, bytes: its events, memory records, tracks and strings. */
static size_t model_bytes(const tl_trace *t)
{
    const tl_strtab *s = &t->strings;
    size_t b = t->nev * sizeof(tl_event) + t->nmem * sizeof(tl_memev) +
               (size_t)t->ntracks * sizeof(tl_track) +
               (size_t)s->nslots * (sizeof *s->slots + sizeof *s->tags);
    for (uint32_t i = 0; i < s->count; i++)
        b += s->len[i] + 1 + sizeof *s->str + sizeof *s->len;
    return b;
}

/* What the process holds beside the model and the views' scratch: its code and libraries,
 * the allocator's spare, and the view threads' stacks (after loading a 92 MB trace, 3.4 / 4.9 /
 * 5.7 MB at -j 1 / 2 / 16, 2026-11-30; 6 MB allowed let a 92 MB trace's views run two at once
 * and its report peak at 0.31x the file at -j 2 and 16, 8 MB keeps them one at a time: 0.29x,
 * in the same time). */
#define PROCESS_ALLOWANCE ((size_t)8 << 20)
/* What a view thread keeps beside its view's scratch (its arena's free memory, its stack), in
 * the choice of how many threads to start */
#define VIEW_THREAD_KEPT ((size_t)1 << 20)

/* The scratch the views computed at once may hold between them by their estimates: two
 * thirds of the loaded trace (model: model_bytes) less what the process holds beside it, so
 * that a report's peak stays near 1.7 times the trace's model at any thread count (for a
 * Kineto trace, whose model is ~0.17 times the file: under 0.3 times the file;
 * docs/PERFORMANCE.md). Without the allowance a 92 MB trace's report held 0.30-0.34x it from
 * 2 threads up, the process's 6 MB being 0.065x of it. A view runs alone when its estimate is
 * larger (for a trace of a few tens of MB: every view, one at a time). */
static size_t scratch_budget(size_t model)
{
    size_t b = model / 3 * 2;
    return b > PROCESS_ALLOWANCE + 64 ? b - PROCESS_ALLOWANCE : 64;
}

/* The estimates of the shared results view k reads, bytes: all of them, or (unmade) those no
 * view has made yet. */
static size_t ahead_memo_need(const ahead *a, int k, int unmade)
{
    size_t need = 0;
    for (int key = 0; key < TL_MEMO_COUNT; key++)
        if ((tl_view_defs[a->idx[k]].memos >> key & 1) && !(unmade && a->memo_held[key]))
            need += a->memo_need[key];
    return need;
}

/* View k of a, computed. With TALLY_READ_STATS, its time and, when it is the only view being
 * computed (one at a time), its scratch: its peak resident memory above what was resident when
 * it began (the figures the scheduler's estimates come from, docs/PERFORMANCE.md). */
static tl_table *ahead_compute(const ahead *a, int k, tl_error *err)
{
    const tl_view_def *d = &tl_view_defs[a->idx[k]];
    tl_view_opts vo = view_opts(d, a->o);
    int stats = getenv("TALLY_READ_STATS") != NULL;
    long rss0 = stats && !a->nth && tl_peak_reset() == 0 ? tl_proc_kb("VmRSS:") : -1;
    tl_malloc_advise(); /* the heap it grew to since the last view began, in huge pages */
    double t0 = tl_now_s();
    tl_table *res = d->fn(a->t, &vo, err);
    if (stats) { /* what each view costs (docs/PERFORMANCE.md) */
        double t1 = tl_now_s();
        long hwm = rss0 >= 0 ? tl_proc_kb("VmHWM:") : -1;
        fprintf(stderr, "tally: view %s: %.3f s (%.3f to %.3f s into the report)", d->name, t1 - t0,
                t0 - a->t0, t1 - a->t0);
        if (hwm >= 0) /* with its estimate, and the shared results it may make */
            fprintf(stderr, ", peak +%.1f MB over %.1f MB (estimate %.1f MB + %.1f MB shared)",
                    (double)(hwm - rss0) / 1024, (double)rss0 / 1024, (double)a->need[k] / 1048576,
                    (double)ahead_memo_need(a, k, 0) / 1048576);
        fputc('\n', stderr);
    }
    return res;
}

/* View k is computed (under a->mu where threads compute): the shared results no view left to
 * compute reads are released (the memory replay, 30 MB for the 1 GB trace, is not held while
 * the views after its last reader run). */
static void ahead_computed(ahead *a, int k)
{
    int memos = tl_view_defs[a->idx[k]].memos;
    for (int key = 0; key < TL_MEMO_COUNT; key++) {
        if (!(memos >> key & 1))
            continue;
        if (--a->readers[key] == 0) {
            tl_trace_memo_release(a->t, key);
            if (a->memo_held[key])
                a->inuse -= a->memo_need[key];
            a->memo_held[key] = 0;
        }
    }
}

/* What starting view k adds to a->inuse: its estimate and the shared results it reads that no
 * view has made yet. */
static size_t ahead_need(const ahead *a, int k)
{
    return a->need[k] + ahead_memo_need(a, k, 1);
}

/* Whether view k fits now: its estimate within the budget beside what is in use; and for a
 * view whose table is held until written (keep: a row per name), that table too beside the
 * largest view written before it that has not started, which computes while the table waits
 * (the kernels' table of 1M names, 42 MB, computed first at -j 2 was held through gpu's 47 MB:
 * 190 MB against 172 one table at a time). */
static int ahead_fits(const ahead *a, int k)
{
    if (a->inuse + ahead_need(a, k) > a->budget)
        return 0;
    size_t before = 0;
    for (int j = 0; a->keep[k] && j < k; j++)
        if (!a->started[j] && ahead_need(a, j) > before)
            before = ahead_need(a, j);
    return !a->keep[k] || a->inuse + a->keep[k] + before <= a->budget;
}

/* The position in a->order of the view a thread may start now, or -1 when none may; *left:
 * the views not yet started. Under a->mu. */
static int ahead_pick(const ahead *a, int *left)
{
    int pick = -1;
    *left = 0;
    for (int p = 0; p < a->n; p++) {
        int k = a->order[p];
        if (a->started[k])
            continue;
        ++*left;
        if (pick < 0 &&
            ((!a->running && (k == a->waiting || (!a->inuse && !a->keep[k]))) || ahead_fits(a, k)))
            pick = p;
    }
    return pick;
}

static void *ahead_main(void *arg)
{
    ahead *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        int left, p;
        while ((p = ahead_pick(a, &left)) < 0 && left > 0 && !a->stop)
            pthread_cond_wait(&a->cv, &a->mu);
        if (a->stop || p < 0)
            break;
        int k = a->order[p];
        a->started[k] = 1;
        a->running++;
        a->inuse += ahead_need(a, k);
        for (int key = 0; key < TL_MEMO_COUNT; key++)
            if (tl_view_defs[a->idx[k]].memos >> key & 1)
                a->memo_held[key] = 1;
        if (a->running > a->sched.most_running)
            a->sched.most_running = a->running;
        if (a->running > 1 && a->inuse > a->sched.most_at_once)
            a->sched.most_at_once = a->inuse;
        if (a->inuse > a->sched.most_held)
            a->sched.most_held = a->inuse;
        a->sched.started[a->sched.nstarted++] = k;
        pthread_mutex_unlock(&a->mu);
        tl_error e = {{0}};
        tl_table *res = ahead_compute(a, k, &e);
        pthread_mutex_lock(&a->mu);
        a->res[k] = res;
        a->err[k] = e;
        a->done[k] = 1;
        a->running--;
        a->inuse -= a->need[k] - a->keep[k]; /* its table's until written */
        ahead_computed(a, k);
        pthread_cond_broadcast(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* The events of each category (ncat) and, for the categories in cats (bits 1 << tl_cat), their
 * distinct names (names; a bit a string id and category; the events' count when those bits
 * cannot be had). */
static void count_by_cat(const tl_trace *t, unsigned cats, size_t ncat[TL_CAT_COUNT],
                         size_t names[TL_CAT_COUNT])
{
    size_t words = ((size_t)t->strings.count + 64) / 64; /* ids above the table: id 0's bit */
    uint64_t *seen[TL_CAT_COUNT] = {0};
    for (int c = 0; c < TL_CAT_COUNT; c++)
        if (cats >> c & 1)
            seen[c] = calloc(words, sizeof *seen[c]);
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        int c = e->cat < TL_CAT_COUNT ? e->cat : 0;
        ncat[c]++;
        if (!(cats >> c & 1))
            continue;
        uint32_t nm = e->name < t->strings.count ? e->name : 0;
        if (!seen[c])
            names[c]++;
        else if (!(seen[c][nm / 64] >> (nm % 64) & 1)) {
            seen[c][nm / 64] |= (uint64_t)1 << (nm % 64);
            names[c]++;
        }
    }
    for (int c = 0; c < TL_CAT_COUNT; c++)
        free(seen[c]);
}

/* View d's scratch estimate on t, bytes, and what its table holds until written (*keep), from
 * the counts of count_by_cat. */
static size_t estimate(const tl_view_def *d, const tl_trace *t, const size_t ncat[TL_CAT_COUNT],
                       const size_t names[TL_CAT_COUNT], size_t *keep)
{
    size_t nnames = 0, nown = 0;
    for (int c = 0; c < TL_CAT_COUNT; c++) {
        nnames += (d->name_cats >> c & 1) ? names[c] : 0;
        nown += (d->own_cats >> c & 1) ? ncat[c] : 0;
    }
    *keep = (size_t)d->keep_name * nnames;
    size_t est = (size_t)d->scratch * t->nev + (size_t)d->scratch_mem * t->nmem +
                 (size_t)d->scratch_own * nown + (size_t)d->scratch_name * nnames;
    size_t dev = 0; /* the device work's bound, for the views that have one */
    for (int c = 0; d->scratch_dev && c < TL_CAT_COUNT; c++)
        dev += (DEVICE >> c & 1) ? (size_t)d->scratch_dev * ncat[c] : 0;
    return dev > est ? dev : est;
}

size_t tl_view_estimate(const tl_view_def *d, const tl_trace *t, size_t *keep)
{
    size_t ncat[TL_CAT_COUNT] = {0}, names[TL_CAT_COUNT] = {0};
    count_by_cat(t, (unsigned)d->name_cats, ncat, names);
    return estimate(d, t, ncat, names, keep);
}

/* Start computing the n views of a->idx (one thread, or none, computes them in turn when
 * o->threads is 1 or no thread can be had). */
static void ahead_start(ahead *a, const tl_trace *t, const tl_report_opts *o, int n)
{
    a->t = t;
    a->o = o;
    a->n = n;
    a->t0 = tl_now_s();
    a->stop = a->nth = a->running = 0;
    a->waiting = -1;
    a->inuse = 0;
    size_t model = model_bytes(t);
    a->budget = o->scratch_budget ? o->scratch_budget : scratch_budget(model);
    memset(&a->sched, 0, sizeof a->sched);
    a->sched.budget = a->budget;
    a->sched.model = model;
    memset(a->started, 0, sizeof a->started);
    memset(a->memo_held, 0, sizeof a->memo_held);
    memset(a->done, 0, sizeof a->done);
    memset(a->res, 0, sizeof a->res);
    memset(a->readers, 0, sizeof a->readers);
    for (int k = 0; k < n; k++)
        for (int key = 0; key < TL_MEMO_COUNT; key++)
            a->readers[key] += tl_view_defs[a->idx[k]].memos >> key & 1;
    int threads = o->threads > 0 ? o->threads : tl_default_threads();
    if (threads > n)
        threads = n;
    int stats = getenv("TALLY_READ_STATS") != NULL;
    /* The views' estimates, read only by the threads' choice and TALLY_READ_STATS (a pass over
     * the events by category and their distinct names when a view's estimate asks) */
    size_t ncat[TL_CAT_COUNT] = {0}, names[TL_CAT_COUNT] = {0};
    unsigned cats = 0;
    int by_cat = 0;
    for (int k = 0; (threads > 1 || stats) && k < n; k++) {
        by_cat |= tl_view_defs[a->idx[k]].own_cats != 0 || tl_view_defs[a->idx[k]].scratch_dev;
        cats |= (unsigned)tl_view_defs[a->idx[k]].name_cats;
    }
    if (by_cat || cats)
        count_by_cat(t, cats, ncat, names);
    for (int k = 0; k < n; k++)
        a->need[k] = estimate(&tl_view_defs[a->idx[k]], t, ncat, names, &a->keep[k]);
    a->memo_need[TL_MEMO_MEMORY] = MEMORY_REPLAY_KEPT * t->nmem;
    a->memo_need[TL_MEMO_PHASES] = PHASES_KEPT * t->nev;
    for (int k = 0; k < n; k++) { /* by cost, stable */
        int j = k;
        while (j > 0 && tl_view_defs[a->idx[a->order[j - 1]]].cost < tl_view_defs[a->idx[k]].cost) {
            a->order[j] = a->order[j - 1];
            j--;
        }
        a->order[j] = k;
    }
    /* Threads the budget has work for: as many as the smallest estimates fit in it together,
     * one at least. A small trace's budget fits none or one: its views are then computed here,
     * in turn, not by threads that could only take turns, each holding a stack and an arena of
     * its own (a 31 MB trace at -j 16: 11.3 MB against 8.5 at -j 1). A budget the caller set
     * keeps the threads asked for (the tests of the threads' schedule set tight ones). Each
     * thread counts VIEW_THREAD_KEPT beside its view's estimate: what its arena and stack keep
     * (hta_df_index_resolver, 54 MB, at -j 2: two threads for views that each fit alone peaked
     * 1.4-1.8 MB over none). */
    size_t by_need[64], fit = 0;
    int most = 0;
    for (int k = 0; k < n; k++) { /* ascending */
        int j = k;
        for (; j > 0 && by_need[j - 1] > a->need[k]; j--)
            by_need[j] = by_need[j - 1];
        by_need[j] = a->need[k];
    }
    while (most < n && by_need[most] + VIEW_THREAD_KEPT <= a->budget - fit)
        fit += by_need[most++] + VIEW_THREAD_KEPT;
    if (!o->scratch_budget && threads > most)
        threads = most > 1 ? most : 1;
    if (stats)
        fprintf(stderr, "tally: views: %d threads, scratch at once %.1f MB (the trace %.1f MB)\n",
                threads > 1 ? threads : 0, (double)a->budget / 1048576, (double)model / 1048576);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    for (int i = 0; threads > 1 && i < threads; i++)
        if (tl_thread_start(&a->th[a->nth], ahead_main, a) == 0) /* signals blocked */
            a->nth++;
    a->sched.threads = a->nth;
}

/* View k computed by the caller (no threads), its table and error kept for its turn. */
static void ahead_here(ahead *a, int k)
{
    a->sched.started[a->sched.nstarted++] = k;
    memset(&a->err[k], 0, sizeof a->err[k]);
    a->res[k] = ahead_compute(a, k, &a->err[k]);
    a->done[k] = 1;
    ahead_computed(a, k);
}

/* With no threads, the views are computed in turn, except that the views after k that read a
 * shared result k made and hold no row per name are computed at once after k, their tables
 * (a few rows) kept for their turn: the result is released then, not held through the views
 * in between (the memory replay, 24.6 MB of the 1 GB trace, was held from the memory view
 * through ops and gaps to findings). */
static void ahead_here_with_readers(ahead *a, int k)
{
    unsigned memos = (unsigned)tl_view_defs[a->idx[k]].memos;
    ahead_here(a, k);
    for (int key = 0; key < TL_MEMO_COUNT; key++) {
        if (!(memos >> key & 1))
            continue;
        for (int j = k + 1; j < a->n && a->readers[key] > 0; j++)
            if (!a->done[j] && (tl_view_defs[a->idx[j]].memos >> key & 1) &&
                !tl_view_defs[a->idx[j]].keep_name)
                ahead_here(a, j);
    }
}

/* View k, computed here when no thread took it; NULL with *err when it failed. */
static tl_table *ahead_take(ahead *a, int k, tl_error *err)
{
    if (!a->nth) { /* no threads: computed here, in turn (ahead_here_with_readers) */
        if (!a->done[k])
            ahead_here_with_readers(a, k);
        tl_table *res = a->res[k];
        a->res[k] = NULL;
        *err = a->err[k];
        return res;
    }
    pthread_mutex_lock(&a->mu);
    if (!a->done[k]) { /* k may start now, fitting or not, once nothing runs */
        a->waiting = k;
        pthread_cond_broadcast(&a->cv);
        while (!a->done[k])
            pthread_cond_wait(&a->cv, &a->mu);
        a->waiting = -1;
    }
    tl_table *res = a->res[k];
    a->res[k] = NULL;
    *err = a->err[k];
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return res;
}

/* View k's table is written and freed: what it held leaves the budget. */
static void ahead_written(ahead *a, int k)
{
    if (!a->nth)
        return;
    pthread_mutex_lock(&a->mu);
    a->inuse -= a->keep[k];
    a->keep[k] = 0;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* Stop the threads and free what was computed but not taken. */
static void ahead_end(ahead *a)
{
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    for (int i = 0; i < a->nth; i++)
        pthread_join(a->th[i], NULL);
    if (!a->nth && a->n)
        a->sched.most_running = 1;
    if (getenv("TALLY_READ_STATS"))
        fprintf(stderr, "tally: views: at most %d at once, %.1f MB of scratch estimates\n",
                a->sched.most_running, (double)a->sched.most_at_once / 1048576);
    if (a->o->sched)
        *a->o->sched = a->sched;
    for (int k = 0; k < a->n; k++)
        tl_table_free(a->res[k]);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
}

int tl_report_write(FILE *f, const tl_trace *t, const tl_report_opts *o, tl_error *err)
{
    int sel[64];
    int all;
    if (tl_nview_defs > 64) {
        tl_error_set(err, "too many views");
        return -1;
    }
    if (select_views(o->views, sel, &all, err) != 0)
        return -1;
    int device = tl_trace_has_cats(t, TL_DEVICE_WORK);
    /* Views computed but not yet written: only while a --sort key has not been taken by a
     * view yet (an unknown key is an error with nothing written). Otherwise a view is written
     * as soon as it is computed and freed before the next one: a trace with a row per distinct
     * name holds one such table at a time, not all of them. */
    tl_table *held[64] = {0};
    report_out ro = {0};
    int sort_given = o->vo.sort && *o->vo.sort;
    int sortable_selected = 0, sort_accepted = 0;
    const char *first_sortable = NULL;
    int rc = 0;

    /* Without --sort, the views are computed ahead in threads (every view reads the trace and
     * writes only its own table) and written in order as each is done. */
    ahead a;
    int nahead = 0;
    if (!sort_given) {
        for (int i = 0; i < tl_nview_defs; i++)
            if (view_wanted(&tl_view_defs[i], sel[i], all, device, t, o))
                a.idx[nahead++] = i;
        ahead_start(&a, t, o, nahead);
    }
    int k = 0; /* views taken from a */

    for (int i = 0; i < tl_nview_defs; i++) {
        const tl_view_def *d = &tl_view_defs[i];
        if (!view_wanted(d, sel[i], all, device, t, o))
            continue;
        tl_view_opts vo = view_opts(d, o);
        if (d->sortable) {
            sortable_selected++;
            if (!first_sortable)
                first_sortable = d->name;
        }
        tl_error verr = {{0}};
        tl_table *res = !sort_given ? ahead_take(&a, k++, &verr) : d->fn(t, &vo, &verr);
        if (!res && vo.sort) {
            /* The key may belong to another selected view: use this view's default order. */
            vo.sort = NULL;
            tl_error verr2 = {{0}};
            res = d->fn(t, &vo, &verr2);
            if (!res)
                verr = verr2;
        } else if (res && vo.sort) {
            sort_accepted = 1;
        }
        if (!res) {
            /* The views before this one stay written; the output stops here (report.md). */
            tl_error_setc(err, verr.code, "%s: %s", d->name, verr.msg[0] ? verr.msg : "failed");
            rc = -2;
            goto out;
        }
        held[i] = res;
        if (!sort_given || sort_accepted)
            report_flush(&ro, f, t, o, held);
        if (!sort_given)
            ahead_written(&a, k - 1);
    }
    if (sort_given && !sort_accepted) {
        if (!sortable_selected) {
            char names[256];
            size_t n = 0;
            names[0] = 0;
            for (int i = 0; i < tl_nview_defs && n < sizeof names; i++)
                if (tl_view_defs[i].sortable)
                    n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "",
                                          tl_view_defs[i].name);
            tl_error_setc(err, TL_ERR_USAGE,
                          "--sort '%s': none of the selected views is sortable (sortable: %s)",
                          o->vo.sort, names);
        } else {
            tl_error_setc(err, TL_ERR_USAGE,
                          "unknown sort key '%s': no selected view has that column (a column's "
                          "key or title; 'tally report FILE --views %s --format csv' shows the "
                          "keys)",
                          o->vo.sort, first_sortable);
        }
        rc = -1;
        goto out;
    }
    report_flush(&ro, f, t, o, held); /* begins the output of a report with no view */
    if (!o->out)
        tl_out_end(ro.out);
    if (!sort_given)
        ahead_end(&a);
    return 0;
out:
    if (!sort_given)
        ahead_end(&a);
    if (ro.begun && !o->out)
        tl_out_abort(ro.out);
    for (int i = 0; i < tl_nview_defs; i++)
        tl_table_free(held[i]);
    return rc;
}

int tl_summary_print(FILE *f, const tl_trace *t)
{
    tl_report_opts o;
    memset(&o, 0, sizeof o);
    o.fmt = TL_FMT_TEXT;
    o.unit = TL_UNIT_AUTO;
    o.summary = 1;
    o.header = 1;
    tl_error err = {{0}};
    if (tl_report_write(f, t, &o, &err) != 0) {
        fprintf(f, "tally: %s\n", err.msg);
        return -1;
    }
    return 0;
}
