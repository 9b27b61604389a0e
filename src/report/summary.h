/*
 * summary.h — the report of a trace: which views exist, in which order they print, and the
 * one function that computes the selected ones and writes them (text, CSV or JSON). Used by
 * `tally report`, `tally demo` and the default trace-ready handler (summary on stderr).
 */
#ifndef TALLY_REPORT_SUMMARY_H
#define TALLY_REPORT_SUMMARY_H

#include "analysis/views.h"

enum { TL_NEEDS_DEVICE = 1, TL_NEEDS_MEMORY = 2 };

/* One report view. The registry (summary.c, tl_view_defs) lists them in print order. */
typedef struct tl_view_def {
    const char *name; /* the --views word: "overview" */
    tl_view_fn fn;    /* computes the table(s) */
    int needs;        /* TL_NEEDS_*: "all" skips it on a trace without these events */
    int sortable;     /* takes --sort/--top (the view sorts its rows by a column) */
    int in_summary;   /* part of the short summary printed after a run */
    int cost;         /* its compute time on the 1 GB trace of bench_json, ms (one thread): the
                         report's threads start the costliest views first */
    int memos;        /* bits 1 << TL_MEMO_*: the shared results it reads (tl_trace_memo); a
                         report releases each once the last view reading it is computed */
    int scratch;      /* its peak memory above the loaded trace while it computes, in bytes an
                         event, plus bytes a memory record (scratch_mem) and an event of its own
                         category (scratch_own bytes an event of the categories own_cats,
                         bits 1 << tl_cat: the operators, ranges or device work it works on),
                         measured alone on the 1 GB trace of bench_json at 4 and 16 threads,
                         less the shared results it reads (the report counts those once): a
                         report's threads start no more views at once than their sum fits in
                         its scratch budget */
    int scratch_mem, scratch_own, own_cats;
    /* At least bytes a device event (kernel, copy, memset, GPU annotation) when that is more
     * than the sum above: what a view holds for a trace of device work only, where the Kineto
     * shape's bytes an event fall short (breakdown and findings keep an interval or a gap a
     * kernel, ~50-60 bytes, where a Kineto trace's nested host events merge into few) */
    int scratch_dev;
    /* A view with a row per distinct name (ranges, operator, kernel, ops): bytes a distinct
     * name of its categories (name_cats: bits 1 << tl_cat) while it computes (scratch_name, in
     * its scratch estimate) and held by its table from then until the report writes it
     * (keep_name); measured alone on traces of a million distinct names
     * (bench/gen_many_names.py) */
    int scratch_name, keep_name, name_cats;
    const char *help; /* one line for --help */
} tl_view_def;

extern const tl_view_def tl_view_defs[];
extern const int tl_nview_defs;

/* The view named name (case-insensitive), or NULL. */
const tl_view_def *tl_view_lookup(const char *name);

/* View d's scratch estimate on trace t, bytes (what a report's threads hold it to), and what
 * its table holds from then until the report writes it (*keep: its rows per distinct name). */
size_t tl_view_estimate(const tl_view_def *d, const tl_trace *t, size_t *keep);

typedef struct tl_report_opts {
    const char *views; /* comma-separated view names; NULL or "all" = every applicable view */
    tl_view_opts vo;   /* sort, top, thread_sep ... handed to every view */
    tl_format fmt;
    tl_unit unit;
    int summary; /* short form: only in_summary views, sortable ones cut to top 10 */
    int header;  /* text: a first line naming the trace (path, source, counts) */
    int wide;    /* text: print names whole (tl_out.wide) */
    int threads; /* views computed ahead of the one being written, each in a thread of its own:
                    0 = TALLY_THREADS, else the cores (tl_default_threads); 1 = one at a time.
                    The output is the same for any count; the scratch the views hold at once,
                    and the tables of a row per name computed before their turn, keep within
                    scratch_budget. */
    /* The scratch the views computed at once may hold between them, bytes, by the views'
     * estimates (tl_view_def.scratch): 0 = two thirds of the loaded trace's arrays; a view
     * whose estimate is larger runs alone. The output is the same for any budget. */
    size_t scratch_budget;
    struct tl_report_sched *sched; /* when set, how the views were scheduled (below) */
    /* When set, the report goes into this output, begun and ended by the caller: several
     * reports in one csv document (tally demo: one header row for its runs); f is unused. */
    struct tl_out *out;
    const char *key_prefix; /* when set, each table's key (csv's view column) starts with it */
} tl_report_opts;

/* How a report's threads computed its views (tl_report_opts.sched). */
typedef struct tl_report_sched {
    int threads;         /* threads that computed views (0: the caller, in turn) */
    int most_running;    /* the most views computed at once */
    size_t budget;       /* the scratch budget used, bytes */
    size_t model;        /* the loaded trace's bytes it is reckoned from */
    size_t most_at_once; /* the largest scratch estimate held while two or more views ran
                            (the shared results and the tables waiting for their turn
                            included): never above budget */
    size_t most_held;    /* the same at any time, a view running alone included (threads) */
    int started[64];     /* the views in the order threads (or the caller, with none) started
                            them (0 = the first view the report writes), nstarted of them */
    int nstarted;
} tl_report_sched;

/* The process's resident or peak resident memory in kB (key "VmRSS:" or "VmHWM:" of
 * /proc/self/status); -1 where it cannot be read. And the peak that VmHWM reports reset to the
 * memory resident now (Linux: clear_refs 5): 0 when done. For TALLY_READ_STATS, which prints
 * each view's own peak, and the test that holds the estimates to them. */
long tl_proc_kb(const char *key);
int tl_peak_reset(void);

/* Check the view list: 0, or -1 with "unknown view 'x'; expected one of: ..." in err. */
int tl_report_check_views(const char *views, tl_error *err);

/* Compute the selected views in the fixed order and write each to f as soon as it is computed
 * (then free it), preceded by the trace's loss counters as warnings (text: in the output;
 * json: "messages"; csv: stderr). Returns 0; -1 with err filled on a usage error (an unknown
 * view, a sort key that no selected sortable view has: nothing is written); -2 with err filled
 * when a view fails (out of memory): the views before it are written, the output stops there
 * unfinished (tl_out_abort: JSON unclosed, CSV nothing). Write errors are left in ferror(f).
 * The trace must outlive the call (tables borrow its names). */
int tl_report_write(FILE *f, const tl_trace *t, const tl_report_opts *o, tl_error *err);

/* The trace's metadata as one JSON object (path, source, rank, world size, pid, counts, span,
 * devices), the "trace" member of JSON output; malloc'd, NULL when out of memory. */
char *tl_trace_meta_json(const tl_trace *t);

/* The default short report in text to f (used after a run and by `tally demo`). */
int tl_summary_print(FILE *f, const tl_trace *t);

/* The loss counters of a trace as one line each ("12 records dropped at the memory cap").
 * Calls fn for each; returns how many. */
int tl_trace_warnings(const tl_trace *t, void (*fn)(const char *line, void *arg), void *arg);

#endif
