/*
 * view_memory.c — `tally memory` and the report's memory view: per device the peak and the
 * levels at the window's start and end, the timeline, what the peak is made of (categories, the
 * layout tree of dotted names, the operators that allocated it), per-operator bytes and leaks.
 * The numbers come from memory.c; docs/memory.md defines each column.
 */
#include "analysis/memory.h"
#include "analysis/views.h"
#include "trace/checked.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define SPARK_WIDTH 48
#define TOP_DEFAULT 20 /* rows of the per-operator tables without --top */

static int shown(const tl_view_opts *o, int32_t device)
{
    return !o || !o->device_set || o->device == device;
}

/* Device i when it is shown and has a peak (its name into name[32]), else NULL. */
static const tl_mem_device *peaked(const tl_mem *m, const tl_view_opts *o, size_t i, char *name)
{
    const tl_mem_device *d = &m->dev[i];
    if (!shown(o, d->device) || !d->timeline || d->peak <= 0)
        return NULL;
    tl_mem_device_name(d->device, name, 32);
    return d;
}

static int top_rows(const tl_view_opts *o)
{
    return o && o->top > 0 ? o->top : TOP_DEFAULT;
}

/* ---- per device --------------------------------------------------------------------------- */

enum {
    D_DEV,
    D_PEAK,
    D_AT,
    D_STEP,
    D_RES_PEAK,
    D_PEAK_RES,
    D_START,
    D_END,
    D_RSTART,
    D_REND,
    D_ALLOCS,
    D_FREES,
    D_NCOLS
};

static const tl_col dev_cols[D_NCOLS] = {
    [D_DEV] = {"Device", "device", TL_COL_STR, 1},
    [D_PEAK] = {"Peak allocated", "peak_allocated_bytes", TL_COL_BYTES, 0},
    [D_AT] = {"Peak at", "peak_at_us", TL_COL_TIME, 0},
    [D_STEP] = {"Peak step", "peak_step", TL_COL_INT, 0},
    [D_RES_PEAK] = {"Reserved at peak", "reserved_at_peak_bytes", TL_COL_BYTES, 0},
    [D_PEAK_RES] = {"Peak reserved", "peak_reserved_bytes", TL_COL_BYTES, 0},
    [D_START] = {"Allocated start", "allocated_start_bytes", TL_COL_BYTES, 0},
    [D_END] = {"Allocated end", "allocated_end_bytes", TL_COL_BYTES, 0},
    [D_RSTART] = {"Reserved start", "reserved_start_bytes", TL_COL_BYTES, 0},
    [D_REND] = {"Reserved end", "reserved_end_bytes", TL_COL_BYTES, 0},
    [D_ALLOCS] = {"Allocs", "allocs", TL_COL_INT, 0},
    [D_FREES] = {"Frees", "frees", TL_COL_INT, 0},
};

static void bytes_or_unknown(tl_table *tab, int r, int c, int64_t v)
{
    if (v >= 0)
        tl_table_bytes(tab, r, c, v);
}

static tl_table *device_table(const tl_trace *t, const tl_mem *m, const tl_view_opts *o)
{
    tl_table *tab = tl_table_new("Memory", "memory", dev_cols, D_NCOLS);
    if (!tab)
        return NULL;
    int64_t t0, t1;
    tl_trace_span(t, &t0, &t1);
    char name[32], a[32];
    int no_timeline = 0;
    for (size_t i = 0; i < m->ndev; i++) {
        const tl_mem_device *d = &m->dev[i];
        if (!shown(o, d->device))
            continue;
        int r = tl_table_add_row(tab);
        if (r < 0)
            break;
        tl_mem_device_name(d->device, name, sizeof name);
        tl_table_str(tab, r, D_DEV, name);
        tl_table_int(tab, r, D_ALLOCS, (int64_t)d->allocs);
        tl_table_int(tab, r, D_FREES, (int64_t)d->frees);
        if (!d->timeline) {
            no_timeline = 1;
            continue;
        }
        bytes_or_unknown(tab, r, D_PEAK, d->peak);
        if (d->peak >= 0)
            tl_table_time(tab, r, D_AT, d->peak_ts - t0);
        if (d->peak_step >= 0)
            tl_table_int(tab, r, D_STEP, m->steps[d->peak_step].number);
        bytes_or_unknown(tab, r, D_RES_PEAK, d->res_at_peak);
        bytes_or_unknown(tab, r, D_PEAK_RES, d->peak_res);
        bytes_or_unknown(tab, r, D_START, d->alloc_start);
        bytes_or_unknown(tab, r, D_END, d->alloc_end);
        bytes_or_unknown(tab, r, D_RSTART, d->res_start);
        bytes_or_unknown(tab, r, D_REND, d->res_end);
        if (d->res_at_peak > d->peak && d->peak > 0) {
            tl_fmt_bytes(a, sizeof a, d->res_at_peak - d->peak);
            /* strictly between 0 and 100: never printed as either */
            double pct = 100.0 * (double)(d->res_at_peak - d->peak) / (double)d->res_at_peak;
            char p[16];
            if (pct < 1)
                snprintf(p, sizeof p, "<1");
            else if (pct >= 99.5)
                snprintf(p, sizeof p, "%.1f", pct < 99.9 ? pct : 99.9);
            else
                snprintf(p, sizeof p, "%.0f", pct);
            tl_table_note(tab,
                          "%s: at the peak %s reserved by the allocator was not allocated "
                          "(%s%% of reserved: cached free blocks, fragmentation).",
                          name, a, p);
        }
        if (d->leak) {
            tl_fmt_bytes(a, sizeof a, d->leak_per_step);
            tl_table_note(tab,
                          "%s: %s per step allocated and never freed in steps %lld..%lld while "
                          "the level grew: a leak (see Leaks).",
                          name, a, (long long)m->steps[d->leak_first].number,
                          (long long)m->steps[d->leak_last].number);
        }
    }
    if (no_timeline)
        tl_table_note(tab, "Devices without a peak: the trace's memory events carry neither "
                           "addresses nor the allocator's totals (PyTorch before 1.10), so no "
                           "level over time can be stated; their bytes count per operator.");
    if (m->unmatched) {
        tl_table_note(tab,
                      "%llu frees of addresses with no allocation in the trace (allocated before "
                      "recording began).",
                      (unsigned long long)m->unmatched);
    }
    if (m->reused)
        tl_table_note(tab,
                      "%llu allocations at an address still allocated (the older block is "
                      "taken as freed there).",
                      (unsigned long long)m->reused);
    if (m->labels_lost)
        tl_table_note(tab, "%llu category labels of addresses with no block (ignored).",
                      (unsigned long long)m->labels_lost);
    return tab;
}

/* ---- timeline ----------------------------------------------------------------------------- */

enum { T_DEV, T_LOW, T_HIGH, T_SPARK, T_NCOLS };
static const tl_col spark_cols[T_NCOLS] = {
    [T_DEV] = {"Device", "device", TL_COL_STR, 1},
    [T_LOW] = {"Low", "low_bytes", TL_COL_BYTES, 0},
    [T_HIGH] = {"High", "high_bytes", TL_COL_BYTES, 0},
    [T_SPARK] = {"Allocated over the trace", "sparkline", TL_COL_STR, 1},
};

enum { S_DEV, S_TIME, S_ALLOC, S_RES, S_NCOLS };
static const tl_col series_cols[S_NCOLS] = {
    [S_DEV] = {"Device", "device", TL_COL_STR, 1},
    [S_TIME] = {"Time", "time_us", TL_COL_TIME, 0},
    [S_ALLOC] = {"Allocated", "allocated_bytes", TL_COL_BYTES, 0},
    [S_RES] = {"Reserved", "reserved_bytes", TL_COL_BYTES, 0},
};

static tl_table *timeline_table(const tl_trace *t, const tl_mem *m, const tl_view_opts *o)
{
    int series = o && o->series;
    tl_table *tab = series
                        ? tl_table_new("Memory timeline", "memory_timeline", series_cols, S_NCOLS)
                        : tl_table_new("Memory timeline", "memory_timeline", spark_cols, T_NCOLS);
    if (!tab)
        return NULL;
    int64_t t0, t1;
    tl_trace_span(t, &t0, &t1);
    char name[32];
    for (size_t i = 0; i < m->ndev; i++) {
        const tl_mem_device *d = &m->dev[i];
        if (!shown(o, d->device) || !d->timeline || !d->nseries)
            continue;
        tl_mem_device_name(d->device, name, sizeof name);
        if (series) {
            for (size_t p = 0; p < d->nseries; p++) {
                int r = tl_table_add_row(tab);
                if (r < 0)
                    return tab;
                tl_table_str(tab, r, S_DEV, name);
                tl_table_time(tab, r, S_TIME, d->series[p].ts - t0);
                tl_table_bytes(tab, r, S_ALLOC, d->series[p].allocated);
                bytes_or_unknown(tab, r, S_RES, d->series[p].reserved);
            }
            continue;
        }
        /* the highest level in each of SPARK_WIDTH equal slices of the trace */
        int64_t hi[SPARK_WIDTH], low = d->alloc_start, high = d->alloc_start;
        int64_t span = t1 > t0 ? t1 - t0 : 1, level = d->alloc_start;
        size_t p = 0;
        for (int k = 0; k < SPARK_WIDTH; k++) {
            int64_t end = tl_add_sat(t0, tl_d_to_i64((double)span * (k + 1) / SPARK_WIDTH));
            hi[k] = level;
            for (; p < d->nseries && (d->series[p].ts < end || k == SPARK_WIDTH - 1); p++) {
                level = d->series[p].allocated;
                if (level > hi[k])
                    hi[k] = level;
            }
        }
        for (int k = 0; k < SPARK_WIDTH; k++) {
            low = hi[k] < low ? hi[k] : low;
            high = hi[k] > high ? hi[k] : high;
        }
        static const char *const bars[8] = {"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83",
                                            "\xe2\x96\x84", "\xe2\x96\x85", "\xe2\x96\x86",
                                            "\xe2\x96\x87", "\xe2\x96\x88"};
        char line[SPARK_WIDTH * 3 + 1];
        size_t n = 0;
        for (int k = 0; k < SPARK_WIDTH; k++) {
            /* in doubles: high - low need not fit in an int64 (levels from a file's absurd
             * sizes), and its wrapped value indexed bars[] out of bounds; levels a few bytes
             * apart near 2^63 are one double (range 0: 0/0 was NaN, and NaN to int is
             * undefined), so the bar is clamped to the 8 there are */
            double range = (double)high - (double)low;
            double f = range > 0 ? ((double)hi[k] - (double)low) / range : 0;
            int b = f > 0 ? (f < 1 ? (int)(7.0 * f + 0.5) : 7) : 0;
            memcpy(line + n, bars[b], 3);
            n += 3;
        }
        line[n] = 0;
        int r = tl_table_add_row(tab);
        if (r < 0)
            return tab;
        tl_table_str(tab, r, T_DEV, name);
        tl_table_bytes(tab, r, T_LOW, low);
        tl_table_bytes(tab, r, T_HIGH, high);
        tl_table_str(tab, r, T_SPARK, line);
    }
    if (!series)
        tl_table_note(tab,
                      "The highest allocated level in each 1/%d of the trace; "
                      "--format csv or json gives every point.",
                      SPARK_WIDTH);
    return tab;
}

/* ---- the peak: categories ----------------------------------------------------------------- */

enum { P_DEV, P_CAT, P_BYTES, P_PCT, P_NCOLS };
static const tl_col peak_cols[P_NCOLS] = {
    [P_DEV] = {"Device", "device", TL_COL_STR, 1},
    [P_CAT] = {"Category", "category", TL_COL_STR, 1},
    [P_BYTES] = {"Bytes", "bytes", TL_COL_BYTES, 0},
    [P_PCT] = {"Of peak", "of_peak_pct", TL_COL_PCT, 0},
};

static tl_table *peak_table(const tl_mem *m, const tl_view_opts *o)
{
    tl_table *tab = tl_table_new("Memory at the peak", "memory_peak", peak_cols, P_NCOLS);
    if (!tab)
        return NULL;
    char name[32];
    for (size_t i = 0; i < m->ndev; i++) {
        const tl_mem_device *d = peaked(m, o, i, name);
        if (!d)
            continue;
        double known = 0; /* in doubles: sizes from a file may be absurd */
        for (int c = 0; c < TL_MEM_CAT_COUNT; c++)
            known += (double)d->at_peak[c];
        if (known > (double)d->peak) {
            char over[32];
            double x = known - (double)d->peak;
            tl_fmt_bytes(over, sizeof over, x < 9e18 ? (int64_t)x : INT64_MAX);
            tl_table_note(tab,
                          "%s: the categories exceed the allocator's level by %s: blocks "
                          "allocated before its count began (PyTorch's CPU allocator counts "
                          "only what was allocated after memory profiling started).",
                          name, over);
        }
        for (int c = 0; c <= TL_MEM_CAT_COUNT; c++) {
            int64_t v = c < TL_MEM_CAT_COUNT ? d->at_peak[c] : d->at_peak_unknown;
            if (v <= 0)
                continue;
            int r = tl_table_add_row(tab);
            if (r < 0)
                return tab;
            tl_table_str(tab, r, P_DEV, name);
            tl_table_str(tab, r, P_CAT,
                         c < TL_MEM_CAT_COUNT ? tl_mem_cat_name((tl_mem_cat)c)
                                              : "(before recording / no address)");
            tl_table_bytes(tab, r, P_BYTES, v);
            tl_table_pct(tab, r, P_PCT, 100.0 * (double)v / (double)d->peak);
        }
    }
    if (!m->any_categories)
        tl_table_note(tab, "No block says what it holds: record categories with tally_alloc, or "
                           "tally.memory.categorize(model, optimizer) in Python.");
    return tab;
}

/* ---- the peak: layout tree ---------------------------------------------------------------- */

enum { L_DEV, L_LAYER, L_LAYER_BYTES, L_TOTAL, L_NCOLS };
static const tl_col layout_cols[L_NCOLS] = {
    [L_DEV] = {"Device", "device", TL_COL_STR, 1},
    [L_LAYER] = {"Layer", "layer", TL_COL_STR, 1},
    [L_LAYER_BYTES] = {"Layer bytes", "layer_bytes", TL_COL_BYTES, 0},
    [L_TOTAL] = {"Total bytes", "total_bytes", TL_COL_BYTES, 0},
};

/* Pre-order rows under node k, its path in path[0..plen), down to depth max_depth. */
static void layout_rows(tl_table *tab, const tl_mem_tree *l, size_t k, const char *dev, char *path,
                        size_t plen, size_t cap, int depth, int max_depth)
{
    for (size_t c = l->n[k].first; c; c = l->n[c].next) {
        size_t n = tl_mem_tree_path(l, c, path, plen, cap);
        int r = tl_table_add_row(tab);
        if (r < 0)
            return;
        tl_table_str(tab, r, L_DEV, dev);
        tl_table_str(tab, r, L_LAYER, path);
        tl_table_indent(tab, r, L_LAYER, depth < 32 ? depth : 32);
        tl_table_bytes(tab, r, L_LAYER_BYTES, l->n[c].layer);
        tl_table_bytes(tab, r, L_TOTAL, l->n[c].total);
        if (depth < max_depth)
            layout_rows(tab, l, c, dev, path, n, cap, depth + 1, max_depth);
    }
}

static tl_table *layout_table(const tl_trace *t, const tl_mem *m, const tl_view_opts *o)
{
    tl_table *tab = tl_table_new("Layout at the peak", "memory_layout", layout_cols, L_NCOLS);
    if (!tab)
        return NULL;
    char dev[32], path[1024];
    for (size_t i = 0; i < m->ndev; i++) {
        const tl_mem_device *d = peaked(m, o, i, dev);
        if (!d)
            continue;
        tl_mem_tree l;
        if (tl_mem_tree_build(t, m, d, -1, &l) != 0) {
            tl_table_free(tab);
            return NULL;
        }
        path[0] = 0;
        /* text: the category and two components (parameter.layers.0); csv and json: all */
        layout_rows(tab, &l, 0, dev, path, 0, sizeof path, 0, o && o->series ? INT_MAX : 2);
        tl_mem_tree_free(&l);
    }
    tl_table_note(tab, o && o->series
                           ? "Blocks with a dotted name alive at the peak, one tree per category "
                             "(InternLM's layout): layer bytes are the block's own, total bytes "
                             "its subtree's."
                           : "Blocks with a dotted name alive at the peak, one tree per category "
                             "(InternLM's layout), three levels deep (--format csv: all): layer "
                             "bytes are the block's own, total bytes its subtree's.");
    return tab;
}

/* ---- per operator ------------------------------------------------------------------------- */

enum {
    O_DEV,
    O_NAME,
    O_CALLS,
    O_INC,
    O_SELF_INC,
    O_ALLOCS,
    O_SELF_ALLOCS,
    O_BYTES,
    O_SELF_BYTES,
    O_FREED,
    O_SELF_FREED,
    O_NCOLS
};
static const tl_col op_cols[O_NCOLS] = {
    [O_DEV] = {"Device", "device", TL_COL_STR, 1},
    [O_NAME] = {"Name", "name", TL_COL_STR, 1},
    [O_CALLS] = {"Calls", "calls", TL_COL_INT, 0},
    [O_INC] = {"Increase", "increase_bytes", TL_COL_BYTES, 0},
    [O_SELF_INC] = {"Self increase", "self_increase_bytes", TL_COL_BYTES, 0},
    [O_ALLOCS] = {"Allocs", "allocs", TL_COL_INT, 0},
    [O_SELF_ALLOCS] = {"Self allocs", "self_allocs", TL_COL_INT, 0},
    [O_BYTES] = {"Allocated", "allocated_bytes", TL_COL_BYTES, 0},
    [O_SELF_BYTES] = {"Self allocated", "self_allocated_bytes", TL_COL_BYTES, 0},
    [O_FREED] = {"Freed", "freed_bytes", TL_COL_BYTES, 0},
    [O_SELF_FREED] = {"Self freed", "self_freed_bytes", TL_COL_BYTES, 0},
};

static tl_table *ops_table(const tl_trace *t, const tl_mem *m, const tl_view_opts *o, tl_error *err)
{
    tl_table *tab = tl_table_new(m->ops_mode ? "Memory by operator" : "Memory by range",
                                 "memory_ops", op_cols, O_NCOLS);
    if (!tab)
        return NULL;
    char name[32];
    for (size_t i = 0; i < m->nops; i++) {
        const tl_mem_op *x = &m->ops[i];
        if (!shown(o, x->device))
            continue;
        int r = tl_table_add_row(tab);
        if (r < 0)
            break;
        tl_mem_device_name(x->device, name, sizeof name);
        tl_table_str(tab, r, O_DEV, name);
        tl_table_str(tab, r, O_NAME, tl_str(&t->strings, x->name));
        tl_table_int(tab, r, O_CALLS, x->calls);
        tl_table_bytes(tab, r, O_INC, x->alloc_bytes - x->freed_bytes);
        tl_table_bytes(tab, r, O_SELF_INC, x->self_alloc_bytes - x->self_freed_bytes);
        tl_table_int(tab, r, O_ALLOCS, x->allocs);
        tl_table_int(tab, r, O_SELF_ALLOCS, x->self_allocs);
        tl_table_bytes(tab, r, O_BYTES, x->alloc_bytes);
        tl_table_bytes(tab, r, O_SELF_BYTES, x->self_alloc_bytes);
        tl_table_bytes(tab, r, O_FREED, x->freed_bytes);
        tl_table_bytes(tab, r, O_SELF_FREED, x->self_freed_bytes);
    }
    tl_view_opts so = o ? *o : (tl_view_opts){0};
    if (!so.top)
        so.top = TOP_DEFAULT;
    if (tl_view_sort(tab, &so, "self_increase_bytes", 0, err) != 0) {
        tl_table_free(tab);
        return NULL;
    }
    tl_table_note(tab,
                  "Self: records the %s itself made (the innermost %s around them on their "
                  "thread); the others include those nested in it. Increase = allocated - "
                  "freed. %llu records belong to no %s.",
                  m->ops_mode ? "operator" : "range", m->ops_mode ? "operator" : "range",
                  (unsigned long long)m->unowned, m->ops_mode ? "operator" : "range");
    return tab;
}

/* ---- alive at the peak, by owner ---------------------------------------------------------- */

enum { W_DEV, W_OWNER, W_CAT, W_BLOCKS, W_BYTES, W_PCT, W_NCOLS };
static const tl_col owner_cols[W_NCOLS] = {
    [W_DEV] = {"Device", "device", TL_COL_STR, 1},
    [W_OWNER] = {"Allocated by", "allocated_by", TL_COL_STR, 1},
    [W_CAT] = {"Category", "category", TL_COL_STR, 1},
    [W_BLOCKS] = {"Blocks", "blocks", TL_COL_INT, 0},
    [W_BYTES] = {"Bytes", "bytes", TL_COL_BYTES, 0},
    [W_PCT] = {"Of peak", "of_peak_pct", TL_COL_PCT, 0},
};

static int alive_at_peak(const tl_mem_block *b, const void *arg)
{
    return tl_mem_alive_at_peak(b, arg);
}

static tl_table *owners_table(const tl_trace *t, const tl_mem *m, const tl_view_opts *o)
{
    tl_table *tab = tl_table_new("Alive at the peak", "memory_peak_owners", owner_cols, W_NCOLS);
    if (!tab)
        return NULL;
    char dev[32], buf[512];
    for (size_t i = 0; i < m->ndev; i++) {
        const tl_mem_device *d = peaked(m, o, i, dev);
        if (!d)
            continue;
        tl_mem_group *g;
        size_t n;
        if (tl_mem_group_blocks(t, m, d->device, alive_at_peak, d, &g, &n) != 0) {
            tl_table_free(tab);
            return NULL;
        }
        for (size_t k = 0; k < n && (int)k < top_rows(o); k++) {
            int r = tl_table_add_row(tab);
            if (r < 0)
                break;
            tl_mem_group_name(t, &g[k], buf, sizeof buf);
            tl_table_str(tab, r, W_DEV, dev);
            tl_table_str(tab, r, W_OWNER, buf);
            tl_table_str(tab, r, W_CAT, tl_mem_cat_name((tl_mem_cat)g[k].category));
            tl_table_int(tab, r, W_BLOCKS, g[k].blocks);
            tl_table_bytes(tab, r, W_BYTES, g[k].bytes);
            tl_table_pct(tab, r, W_PCT, 100.0 * (double)g[k].bytes / (double)d->peak);
        }
        free(g);
    }
    tl_table_note(tab,
                  "Blocks alive at the peak, by the %s that allocated them (the largest "
                  "first).",
                  m->ops_mode ? "operator" : "range");
    return tab;
}

/* ---- leaks --------------------------------------------------------------------------------- */

enum { K_DEV, K_OWNER, K_CAT, K_BLOCKS, K_PER_STEP, K_TOTAL, K_NCOLS };
static const tl_col leak_cols[K_NCOLS] = {
    [K_DEV] = {"Device", "device", TL_COL_STR, 1},
    [K_OWNER] = {"Allocated by", "allocated_by", TL_COL_STR, 1},
    [K_CAT] = {"Category", "category", TL_COL_STR, 1},
    [K_BLOCKS] = {"Blocks", "blocks", TL_COL_INT, 0},
    [K_PER_STEP] = {"Kept per step", "kept_per_step_bytes", TL_COL_BYTES, 0},
    [K_TOTAL] = {"Kept", "kept_bytes", TL_COL_BYTES, 0},
};

static tl_table *leak_table(const tl_trace *t, const tl_mem *m, const tl_view_opts *o)
{
    tl_table *tab = tl_table_new("Leaks", "memory_leaks", leak_cols, K_NCOLS);
    if (!tab)
        return NULL;
    char dev[32], buf[512];
    for (size_t i = 0; i < m->ndev; i++) {
        const tl_mem_device *d = &m->dev[i];
        if (!shown(o, d->device) || !d->leak)
            continue;
        tl_mem_group *g;
        size_t n;
        if (tl_mem_group_blocks(t, m, d->device, tl_mem_kept, d, &g, &n) != 0) {
            tl_table_free(tab);
            return NULL;
        }
        int steps = d->leak_last - d->leak_first + 1;
        tl_mem_device_name(d->device, dev, sizeof dev);
        for (size_t k = 0; k < n && (int)k < top_rows(o); k++) {
            int r = tl_table_add_row(tab);
            if (r < 0)
                break;
            tl_mem_group_name(t, &g[k], buf, sizeof buf);
            tl_table_str(tab, r, K_DEV, dev);
            tl_table_str(tab, r, K_OWNER, buf);
            tl_table_str(tab, r, K_CAT, tl_mem_cat_name((tl_mem_cat)g[k].category));
            tl_table_int(tab, r, K_BLOCKS, g[k].blocks);
            tl_table_bytes(tab, r, K_PER_STEP, g[k].bytes / steps);
            tl_table_bytes(tab, r, K_TOTAL, g[k].bytes);
        }
        free(g);
    }
    if (!tab->nrows)
        tl_table_note(tab, m->nsteps >= 3
                               ? "None: no step keeps memory it allocated while the "
                                 "level grows."
                               : "Needs three steps or more (ProfilerStep, tally_step).");
    else
        tl_table_note(tab, "Allocated in a step and never freed, in every step but the first and "
                           "the last, while allocated memory grew.");
    return tab;
}

/* ---- the view ------------------------------------------------------------------------------ */

static int link(tl_table **tail, tl_table *t)
{
    if (!t)
        return -1;
    (*tail)->next = t;
    *tail = t;
    return 0;
}

tl_table *tl_view_memory(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    const tl_mem *m = tl_mem_of(t); /* shared with findings */
    if (!m) {
        tl_error_setc(err, TL_ERR_NOMEM, "memory: out of memory");
        return NULL;
    }
    if (o && o->device_set && t->nmem) { /* a device the records are of: empty tables would
                                            read as "nothing allocated there" */
        int there = 0;
        char have[256] = "";
        size_t len = 0;
        for (size_t i = 0; i < m->ndev; i++) {
            there |= m->dev[i].device == o->device;
            if (len < sizeof have) {
                if (m->dev[i].device < 0)
                    len +=
                        (size_t)snprintf(have + len, sizeof have - len, "%shost", len ? ", " : "");
                else
                    len +=
                        (size_t)snprintf(have + len, sizeof have - len, "%s%s %d", len ? ", " : "",
                                         tl_accel_name(t), (int)m->dev[i].device);
            }
        }
        if (!there) {
            if (o->device < 0)
                tl_error_setc(err, TL_ERR_USAGE, "%s: no memory records of host memory; of: %s",
                              t->path ? t->path : "the trace", have);
            else
                tl_error_setc(err, TL_ERR_USAGE, "%s: no memory records of %s %d; of: %s",
                              t->path ? t->path : "the trace", tl_accel_name(t), (int)o->device,
                              have);
            return NULL;
        }
    }
    tl_table *head = device_table(t, m, o), *tail = head;
    if (!head)
        goto oom;
    if (!t->nmem) {
        tl_table_note(head, "No memory events in this trace: record them with "
                            "tally.profile(profile_memory=True), torch.profiler's "
                            "profile_memory=True, or tally_alloc/tally_free.");
        tl_table_note_is_why_empty(head);
        return head;
    }
    int any_timeline = 0, any_leak = 0;
    for (size_t i = 0; i < m->ndev; i++) {
        any_timeline |= m->dev[i].timeline && shown(o, m->dev[i].device);
        any_leak |= m->dev[i].leak && shown(o, m->dev[i].device);
    }
    if (o && o->brief) { /* the short form: the devices, the peak by category, any leak */
        if ((any_timeline && link(&tail, peak_table(m, o)) != 0) ||
            (any_leak && link(&tail, leak_table(t, m, o)) != 0))
            goto oom;
        return head;
    }
    if (any_timeline) {
        if (link(&tail, timeline_table(t, m, o)) != 0 || link(&tail, peak_table(m, o)) != 0)
            goto oom;
        if (m->any_names && link(&tail, layout_table(t, m, o)) != 0)
            goto oom;
        if (link(&tail, owners_table(t, m, o)) != 0)
            goto oom;
    }
    tl_table *ops = ops_table(t, m, o, err);
    if (!ops) {
        tl_table_free(head);
        return NULL;
    }
    link(&tail, ops);
    if (any_timeline && link(&tail, leak_table(t, m, o)) != 0)
        goto oom;
    return head;
oom:
    tl_table_free(head);
    tl_error_setc(err, TL_ERR_NOMEM, "memory: out of memory");
    return NULL;
}
