/*
 * view_device.c — Device summary: how busy each GPU and each of its streams was.
 *
 * Busy time is the length of the union of intervals, never a sum: two kernels that overlap on
 * different streams of one device count once for the device. Kernels and copies (memcpy and
 * memset) are measured separately, then together. Every interval is first clipped to the
 * profiled window — the union of the steps when the trace has steps, else the span of the
 * trace — so busy <= window and utilization <= 100% by construction. (Paddle divides the
 * unclipped kernel union by the step time, which can exceed 100% when kernels run past the
 * last step; we clip instead and say so in the note.)
 */
#include "analysis/attrib.h"
#include "analysis/views.h"

#include <stdlib.h>
#include <string.h>

enum {
    C_NAME,
    C_DEVICE,
    C_STREAM,
    C_KERNELS,
    C_KBUSY,
    C_KUTIL,
    C_COPIES,
    C_CBUSY,
    C_CUTIL,
    C_BUSY,
    C_UTIL,
    C_NCOLS
};

static const tl_col cols[C_NCOLS] = {
    [C_NAME] = {"Device", "name", TL_COL_STR, 1},
    [C_DEVICE] = {"Dev", "device", TL_COL_INT, 0},
    [C_STREAM] = {"Stream", "stream", TL_COL_INT, 0},
    [C_KERNELS] = {"Kernels", "kernels", TL_COL_INT, 0},
    [C_KBUSY] = {"Kernel Busy", "kernel_busy_us", TL_COL_TIME, 0},
    [C_KUTIL] = {"Kernel Util", "kernel_util_pct", TL_COL_PCT, 0},
    [C_COPIES] = {"Copies", "copies", TL_COL_INT, 0},
    [C_CBUSY] = {"Copy Busy", "copy_busy_us", TL_COL_TIME, 0},
    [C_CUTIL] = {"Copy Util", "copy_util_pct", TL_COL_PCT, 0},
    [C_BUSY] = {"Busy", "busy_us", TL_COL_TIME, 0},
    [C_UTIL] = {"Util", "util_pct", TL_COL_PCT, 0},
};

/* Per-track accumulation. */
typedef struct stream_acc {
    tl_ivset kern, copy;
    int64_t nkern, ncopy;
    int used;
} stream_acc;

static void fill_row(tl_table *tab, int r, const tl_ivset *k, const tl_ivset *c, int64_t nk,
                     int64_t nc, int64_t window)
{
    const tl_ivset *each[2] = {k, c};
    int64_t kb = tl_ivset_length(k), cb = tl_ivset_length(c);
    int64_t b = tl_ivset_union_length(each, 2); /* the union, not made */
    tl_table_int(tab, r, C_KERNELS, nk);
    tl_table_time(tab, r, C_KBUSY, kb);
    tl_table_int(tab, r, C_COPIES, nc);
    tl_table_time(tab, r, C_CBUSY, cb);
    tl_table_time(tab, r, C_BUSY, b);
    if (window > 0) {
        tl_table_pct(tab, r, C_KUTIL, 100.0 * (double)kb / (double)window);
        tl_table_pct(tab, r, C_CUTIL, 100.0 * (double)cb / (double)window);
        tl_table_pct(tab, r, C_UTIL, 100.0 * (double)b / (double)window);
    }
}

static int track_cmp(const void *pa, const void *pb, void *ctx)
{
    const tl_trace *t = ctx;
    const tl_track *a = &t->tracks[*(const uint32_t *)pa];
    const tl_track *b = &t->tracks[*(const uint32_t *)pb];
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return (a->tid > b->tid) - (a->tid < b->tid);
}

tl_table *tl_view_device(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    tl_table *tab = tl_table_new("Device Summary", "device", cols, C_NCOLS);
    stream_acc *acc = calloc(t->ntracks ? t->ntracks : 1, sizeof *acc);
    uint32_t *order = malloc((t->ntracks ? t->ntracks : 1) * sizeof *order);
    tl_gpu_scope sc;
    int scope_ok = tl_gpu_scope_init(t, o, &sc) == 0;
    if (!tab || !acc || !order || !scope_ok) {
        tl_gpu_scope_free(&sc);
        tl_table_free(tab);
        free(acc);
        free(order);
        tl_error_setc(err, TL_ERR_NOMEM, "device view: out of memory");
        return NULL;
    }
    const tl_ivset win = sc.window; /* the steps, or the whole file (--window all) */
    int64_t window = sc.total;

    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_DEVICE_WORK); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (!tl_is_device_work(e) || e->track >= t->ntracks || !tl_gpu_scope_touches(&sc, e))
            continue;
        stream_acc *a = &acc[e->track];
        a->used = 1;
        if (e->cat == TL_CAT_KERNEL) {
            a->nkern++;
            tl_ivset_extend(&a->kern, e->ts, e->ts + e->dur);
        } else {
            a->ncopy++;
            tl_ivset_extend(&a->copy, e->ts, e->ts + e->dur);
        }
    }
    uint32_t nused = 0;
    for (uint32_t k = 0; k < t->ntracks; k++) {
        if (!acc[k].used)
            continue;
        order[nused++] = k;
        tl_ivset tmp = {0};
        tl_ivset_normalize(&acc[k].kern);
        tl_ivset_intersect(&acc[k].kern, &win, &tmp);
        tl_ivset_free(&acc[k].kern);
        acc[k].kern = tmp;
        memset(&tmp, 0, sizeof tmp);
        tl_ivset_normalize(&acc[k].copy);
        tl_ivset_intersect(&acc[k].copy, &win, &tmp);
        tl_ivset_free(&acc[k].copy);
        acc[k].copy = tmp;
    }
    qsort_r(order, nused, sizeof *order, track_cmp, (void *)t);

    for (uint32_t i = 0; i < nused;) {
        int32_t dev = t->tracks[order[i]].device;
        uint32_t j = i;
        tl_ivset dk = {0}, dc = {0}, tmp = {0};
        int64_t nk = 0, nc = 0;
        for (; j < nused && t->tracks[order[j]].device == dev; j++) {
            stream_acc *a = &acc[order[j]];
            tl_ivset_union(&dk, &a->kern, &tmp);
            tl_ivset_free(&dk);
            dk = tmp;
            memset(&tmp, 0, sizeof tmp);
            tl_ivset_union(&dc, &a->copy, &tmp);
            tl_ivset_free(&dc);
            dc = tmp;
            memset(&tmp, 0, sizeof tmp);
            nk += a->nkern;
            nc += a->ncopy;
        }
        int r = tl_table_add_row(tab);
        if (r >= 0) {
            const tl_device *d = NULL;
            for (uint32_t q = 0; q < t->ndevices; q++)
                if (t->devices[q].id == dev)
                    d = &t->devices[q];
            if (d && d->name)
                tl_table_strf(tab, r, C_NAME, "%s %d (%s)", tl_accel_name(t), dev,
                              tl_str(&t->strings, d->name));
            else
                tl_table_strf(tab, r, C_NAME, "%s %d", tl_accel_name(t), dev);
            tl_table_int(tab, r, C_DEVICE, dev);
            fill_row(tab, r, &dk, &dc, nk, nc, window);
        }
        tl_ivset_free(&dk);
        tl_ivset_free(&dc);
        for (; i < j; i++) {
            const tl_track *tr = &t->tracks[order[i]];
            stream_acc *a = &acc[order[i]];
            r = tl_table_add_row(tab);
            if (r < 0)
                continue;
            tl_table_strf(tab, r, C_NAME, "stream %lld", (long long)tr->tid);
            tl_table_indent(tab, r, C_NAME, 1);
            tl_table_int(tab, r, C_DEVICE, dev);
            tl_table_int(tab, r, C_STREAM, tr->tid);
            fill_row(tab, r, &a->kern, &a->copy, a->nkern, a->ncopy, window);
        }
    }
    if (!nused)
        tl_table_note(tab, "No kernels, copies or memsets in this trace.");
    else {
        char w[32];
        tl_fmt_time(w, sizeof w, window, TL_UNIT_AUTO);
        tl_table_note(tab,
                      "Busy = union of intervals within the window (%s, %s); Util = busy / "
                      "window. Copies include memsets.%s",
                      w, tl_gpu_scope_name(&sc),
                      sc.linked_only ? " Only ops whose launch call is in the file." : "");
    }
    for (uint32_t k = 0; k < t->ntracks; k++) {
        tl_ivset_free(&acc[k].kern);
        tl_ivset_free(&acc[k].copy);
    }
    free(acc);
    free(order);
    tl_gpu_scope_free(&sc);
    return tab;
}
