/*
 * nvtx_dump.c — prints a trace's host events one per line, for the NVTX and `tally run` tests
 * (built by those .sh files against libtally_static.a; not a prog_* program because it reads
 * the trace model, which libtally.so does not export).
 *
 *   nvtx_dump FILE              every host event: "thread|depth|Category|name|args|flags",
 *                               grouped by thread name, in time order within a thread
 *   nvtx_dump FILE --dur NAME   the duration in ns of the first event named NAME
 *   nvtx_dump FILE --device     device events: "Category|name|corr>0|linked" plus counts
 *   nvtx_dump FILE --kernels    "cat<TAB>name<TAB>dur_ns" per kernel, copy, memset and operator,
 *                               with Kineto's category names (examples/cuda/compare_traces.py)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/model.h"

static const char *thread_name(const tl_trace *t, const tl_track *k, char *buf, size_t cap)
{
    if (k->name)
        return tl_str(&t->strings, k->name);
    snprintf(buf, cap, "tid%lld", (long long)k->tid);
    return buf;
}

typedef struct line {
    char thread[64];
    int64_t ts;
    size_t idx;
    char *text;
} line;

static int line_cmp(const void *pa, const void *pb)
{
    const line *a = pa, *b = pb;
    int c = strcmp(a->thread, b->thread);
    if (c)
        return c;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int dump(const tl_trace *t, int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[2], "--dur")) {
        for (size_t i = 0; i < t->nev; i++)
            if (!strcmp(tl_str(&t->strings, t->ev[i].name), argv[3])) {
                printf("%lld\n", (long long)t->ev[i].dur);
                return 0;
            }
        fprintf(stderr, "nvtx_dump: no event named %s\n", argv[3]);
        return 1;
    }
    if (argc >= 3 && !strcmp(argv[2], "--kernels")) {
        for (size_t i = 0; i < t->nev; i++) {
            const tl_event *e = &t->ev[i];
            const char *cat = e->cat == TL_CAT_KERNEL     ? "kernel"
                              : e->cat == TL_CAT_MEMCPY   ? "gpu_memcpy"
                              : e->cat == TL_CAT_MEMSET   ? "gpu_memset"
                              : e->cat == TL_CAT_OPERATOR ? "cpu_op"
                                                          : NULL;
            if (cat)
                printf("%s\t%s\t%lld\n", cat, tl_str(&t->strings, e->name), (long long)e->dur);
        }
        return 0;
    }
    int device = argc >= 3 && !strcmp(argv[2], "--device");
    if (device)
        for (uint32_t i = 0; i < t->ndevices; i++)
            printf("device %d|%s|memory=%lld|sms=%d|cc=%d.%d\n", t->devices[i].id,
                   tl_str(&t->strings, t->devices[i].name), (long long)t->devices[i].memory,
                   t->devices[i].sm_count, t->devices[i].cc_major, t->devices[i].cc_minor);
    line *lines = calloc(t->nev ? t->nev : 1, sizeof *lines);
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        const tl_track *k = &t->tracks[e->track];
        int is_dev = k->kind == TL_TRACK_STREAM;
        if (is_dev != device)
            continue;
        char tbuf[32], text[1024];
        const char *tn = is_dev ? "device" : thread_name(t, k, tbuf, sizeof tbuf);
        if (is_dev)
            snprintf(text, sizeof text, "%s|%s|corr=%s|linked=%s", tl_cat_name((tl_cat)e->cat),
                     tl_str(&t->strings, e->name), e->corr ? "yes" : "no",
                     e->link != TL_NONE ? "yes" : "no");
        else
            snprintf(text, sizeof text, "%s|%d|%s|%s|%s|%s%s", tn, e->depth,
                     tl_cat_name((tl_cat)e->cat), tl_str(&t->strings, e->name),
                     tl_str(&t->strings, e->args), (e->flags & TL_EV_ASYNC) ? "async" : "",
                     (e->flags & TL_EV_UNCLOSED) ? "unclosed" : "");
        snprintf(lines[n].thread, sizeof lines[n].thread, "%s", tn);
        lines[n].ts = e->ts;
        lines[n].idx = i;
        lines[n].text = strdup(text);
        n++;
    }
    qsort(lines, n, sizeof *lines, line_cmp);
    for (size_t i = 0; i < n; i++) {
        printf("%s\n", lines[i].text);
        free(lines[i].text);
    }
    free(lines);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: nvtx_dump FILE [--dur NAME | --kernels | --device]\n");
        return 2;
    }
    tl_trace t;
    tl_error err;
    tl_trace_init(&t);
    int rc = 1;
    if (tl_read_tally(&t, argv[1], &err) != 0)
        fprintf(stderr, "nvtx_dump: %s\n", err.msg);
    else if (!t.finished && tl_trace_finish(&t) != 0)
        fprintf(stderr, "nvtx_dump: finish failed\n");
    else
        rc = dump(&t, argc, argv);
    tl_trace_free(&t);
    return rc;
}
