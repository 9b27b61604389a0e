/*
 * memory_log.c — InternLM's memory.log from a trace: what SimpleMemoryProfiler writes, from
 * what the allocator did rather than from tensor sizes.
 *
 * One "Memory State" per step end (the summary: parameters, gradients, optimizer state and
 * activations alive then), and at the peak one with the "---Layout---" trees of the named
 * blocks alive then, in time order. The format is InternLM's (MB = 2^20 bytes, two decimals;
 * time in seconds since the trace began, as Python prints a float); docs/memory.md maps tally's
 * categories onto its five (os_params_memory stays 0: tally has no category for an optimizer's
 * copy of the parameters).
 */
#include "report/memory_log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MB (1024.0 * 1024.0)

/* A float as Python's repr() prints it: the shortest form that reads back, with ".0" on whole
 * numbers. */
static void py_float(char *buf, size_t n, double v)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    if (!strpbrk(buf, ".einn"))
        strncat(buf, ".0", n - strlen(buf) - 1);
}

/* The state's five sums, InternLM's names: the labelled parameters, gradients and optimizer
 * state alive then, and as activations the rest of the allocated level (what is allocated beyond
 * them, as InternLM counts it; not below 0 where labels stand for blocks the level does not
 * hold), so that the total is the level. */
static void summary(FILE *f, const int64_t *cat, int64_t level)
{
    double p = (double)cat[TL_MEM_PARAMETER] / MB, g = (double)cat[TL_MEM_GRADIENT] / MB,
           os = (double)cat[TL_MEM_OPTIMIZER_STATE] / MB;
    double a = (double)level / MB - (p + g + os); /* in doubles: sizes from a file may be absurd */
    if (a < 0)
        a = 0;
    fprintf(f, "---summary---\ntotal_memory: %.2f MB\n", p + g + os + a);
    fprintf(f,
            "params_memory: %.2f MB, grads_memory: %.2f MB, os_params_memory: %.2f MB, "
            "os_state_memory: %.2f MB, activation_memory: %.2f MB\n",
            p, g, 0.0, os, a);
}

/* ---- layout trees ----------------------------------------------------------------------- */

static void dump(FILE *f, const tl_mem_tree *l, size_t k, char *path, size_t plen, size_t cap)
{
    size_t n = tl_mem_tree_path(l, k, path, plen, cap);
    fprintf(f, "layer: %s, layer_mem: %.2f MB, total_mem: %.2f MB\n", path,
            (double)l->n[k].layer / MB, (double)l->n[k].total / MB);
    for (size_t c = l->n[k].first; c; c = l->n[c].next)
        dump(f, l, c, path, n, cap);
}

/* One layout block: "<title>:" then the tree (its root named root) of the named blocks of
 * category cat alive at the peak; cat < 0: an empty tree. */
static int layout(FILE *f, const tl_trace *t, const tl_mem *m, const tl_mem_device *d,
                  const char *title, const char *root, int cat)
{
    tl_mem_tree l;
    tl_mem_node empty;
    memset(&empty, 0, sizeof empty);
    if (cat >= 0) {
        if (tl_mem_tree_build(t, m, d, cat, &l) != 0)
            return -1;
    } else {
        l = (tl_mem_tree){.n = &empty, .count = 1, .cap = 1};
    }
    l.n[0].comp = root;
    l.n[0].len = strlen(root);
    char path[1024];
    fprintf(f, "%s:\n", title);
    dump(f, &l, 0, path, 0, sizeof path);
    if (cat >= 0)
        tl_mem_tree_free(&l);
    return 0;
}

static const struct {
    const char *title, *root;
    int cat; /* -1: InternLM's optimizer copy of the parameters, which tally has no category for */
} layouts[] = {
    {"params_layout", "param_mem", TL_MEM_PARAMETER},
    {"grads_layout", "grad_mem", TL_MEM_GRADIENT},
    {"os_params_layout", "os_params_mem", -1},
    {"os_state_layout", "os_state_mem", TL_MEM_OPTIMIZER_STATE},
    {"activation_base_layout", "activations_0", TL_MEM_ACTIVATION},
};

/* ---- the log ----------------------------------------------------------------------------- */

int tl_memory_log_write(FILE *f, const tl_trace *t, const tl_mem *m, const tl_mem_device *d,
                        tl_error *err)
{
    /* the states: each step's end, and the peak (with the layouts), in time order */
    size_t n = m->nsteps + 1, np = 0;
    size_t *pos = malloc(n * sizeof *pos);
    int64_t *when = malloc(n * sizeof *when);
    int *is_peak = calloc(n, sizeof *is_peak);
    int64_t(*cat)[TL_MEM_CAT_COUNT] = malloc(n * sizeof *cat);
    if (!pos || !when || !is_peak || !cat) {
        free(pos);
        free(when);
        free(is_peak);
        free(cat);
        tl_error_setc(err, TL_ERR_NOMEM, "memory log: out of memory");
        return -1;
    }
    int peak_done = 0;
    for (size_t s = 0; s <= m->nsteps; s++) {
        int64_t end = s < m->nsteps ? m->steps[s].end : INT64_MAX;
        if (!peak_done && d->peak_ts <= end) {
            pos[np] = d->peak_pos;
            when[np] = d->peak_ts;
            is_peak[np++] = 1;
            peak_done = 1;
        }
        if (s < m->nsteps) {
            pos[np] = tl_mem_pos_at(t, end);
            when[np++] = end;
        }
    }
    int rc = tl_mem_alive_at(m, d, pos, np, cat);
    int64_t t0 = 0, t1 = 0;
    tl_trace_span(t, &t0, &t1);
    char num[64];
    for (size_t k = 0; k < np && rc == 0; k++) {
        py_float(num, sizeof num, (double)(when[k] - t0) / 1e9);
        fprintf(f, "Memory State:\ntime: %s\n", num);
        summary(f, cat[k], is_peak[k] ? d->peak : tl_mem_level_at(d, when[k]));
        if (is_peak[k]) {
            fputs("---Layout---\n", f);
            for (size_t j = 0; j < sizeof layouts / sizeof *layouts && rc == 0; j++)
                rc = layout(f, t, m, d, layouts[j].title, layouts[j].root, layouts[j].cat);
        }
        fputc('\n', f);
    }
    free(pos);
    free(when);
    free(is_peak);
    free(cat);
    if (rc != 0)
        tl_error_setc(err, TL_ERR_NOMEM, "memory log: out of memory");
    return rc;
}
