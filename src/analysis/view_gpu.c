/*
 * view_gpu.c — the GPU timeline per device, pooled over all its streams: computation,
 * communication, memcpy, what of communication and memcpy nothing hid, busy, idle, total.
 *
 * The definitions are TraceLens's (AMD-AGI/TraceLens, TreePerf/gpu_event_analyser.py,
 * GPUEventAnalyser.compute_metrics), so that `--window all --linked-only` gives its numbers:
 *   - device work is kernels, copies and memsets (not gpu_user_annotation, not cuda_sync);
 *   - communication: kernels and memsets whose name contains "nccl", "rccl" or
 *     "cross_device_reduce" (any case); memcpy: copies, and ROCm 7.1's copy kernels
 *     (MEMORY_COPY_*, __amd_rocclr_copyBuffer*); computation: every other kernel and memset —
 *     so a memset is computation here (the device view counts it with the copies);
 *   - each class is the union of its intervals; exposed communication = communication −
 *     computation; exposed memcpy = memcpy − computation − communication; busy = union of all;
 *   - total: from the start of the first op to the end of the last (TraceLens), or under the
 *     default --window steps the profiled window, every interval clipped to it; idle = total −
 *     busy. computation + exposed communication + exposed memcpy + idle = total, exactly.
 * TraceLens's PyTorch analyser pools every device of a trace into one timeline; with more than
 * one device the last row ("all devices") is that pool.
 */
#include "analysis/attrib.h"
#include "analysis/views.h"

#include <stdlib.h>
#include <string.h>

enum {
    C_NAME,
    C_DEVICE,
    C_OPS,
    C_COMP,
    C_COMM,
    C_COPY,
    C_XCOMM,
    C_XCOPY,
    C_BUSY,
    C_IDLE,
    C_TOTAL,
    C_IDLE_PCT,
    C_NCOLS
};

static const tl_col cols[C_NCOLS] = {
    [C_NAME] = {"Device", "name", TL_COL_STR, 1},
    [C_DEVICE] = {"Dev", "device", TL_COL_INT, 0},
    [C_OPS] = {"Ops", "ops", TL_COL_INT, 0},
    [C_COMP] = {"Computation", "computation_us", TL_COL_TIME, 0},
    [C_COMM] = {"Communication", "communication_us", TL_COL_TIME, 0},
    [C_COPY] = {"Memcpy", "memcpy_us", TL_COL_TIME, 0},
    [C_XCOMM] = {"Exposed comm", "exposed_comm_us", TL_COL_TIME, 0},
    [C_XCOPY] = {"Exposed memcpy", "exposed_memcpy_us", TL_COL_TIME, 0},
    [C_BUSY] = {"Busy", "busy_us", TL_COL_TIME, 0},
    [C_IDLE] = {"Idle", "idle_us", TL_COL_TIME, 0},
    [C_TOTAL] = {"Total", "total_us", TL_COL_TIME, 0},
    [C_IDLE_PCT] = {"Idle %", "idle_pct", TL_COL_PCT, 0},
};

enum { K_COMP, K_COMM, K_COPY, K_N };

typedef struct dev_acc {
    int32_t device;
    tl_ivset set[K_N];
    int64_t ops, first, last;
} dev_acc;

/* TraceLens's is_communication_string: nccl, rccl and its default custom collective. */
static int is_comm_name(const char *n)
{
    return tl_has_ci(n, "nccl") || tl_has_ci(n, "rccl") || tl_has_ci(n, "cross_device_reduce");
}

/* TraceLens's is_rocm_legacy_memcpy: ^(MEMORY_COPY_(HOST_TO_DEVICE|DEVICE_TO_HOST|
 * DEVICE_TO_DEVICE)|__amd_rocclr_copyBuffer(Rect)?(Aligned)?)(\.kd)?$ */
static int is_rocm_copy_kernel(const char *n)
{
    static const char *const names[] = {
        "MEMORY_COPY_HOST_TO_DEVICE",        "MEMORY_COPY_DEVICE_TO_HOST",
        "MEMORY_COPY_DEVICE_TO_DEVICE",      "__amd_rocclr_copyBuffer",
        "__amd_rocclr_copyBufferRect",       "__amd_rocclr_copyBufferAligned",
        "__amd_rocclr_copyBufferRectAligned"};
    size_t len = strlen(n);
    if (len > 3 && strcmp(n + len - 3, ".kd") == 0)
        len -= 3;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && strncmp(n, names[i], len) == 0)
            return 1;
    return 0;
}

/* The class of a device op, looked up once per name (0 = not looked at yet, else class + 1). */
static int op_class(const tl_trace *t, uint8_t *named, const tl_event *e)
{
    if (e->cat == TL_CAT_MEMCPY)
        return K_COPY;
    if (e->name >= t->strings.count)
        return K_COMP;
    if (!named[e->name]) {
        const char *n = tl_str(&t->strings, e->name);
        int k = is_comm_name(n) ? K_COMM : is_rocm_copy_kernel(n) ? K_COPY : K_COMP;
        named[e->name] = (uint8_t)(k + 1);
    }
    int k = named[e->name] - 1;
    /* a copy kernel's name on a memset is no copy (TraceLens checks it on kernels only) */
    return k == K_COPY && e->cat != TL_CAT_KERNEL ? K_COMP : k;
}

static void fill_row(tl_table *tab, int r, dev_acc *a, const tl_gpu_scope *sc)
{
    tl_ivset xcomm = {0}, tmp = {0}, xcopy = {0};
    for (int k = 0; k < K_N; k++) {
        tl_ivset_normalize(&a->set[k]);
        tl_gpu_scope_clip(sc, &a->set[k]);
    }
    const tl_ivset *each[K_N] = {&a->set[0], &a->set[1], &a->set[2]};
    _Static_assert(K_N == 3, "the kinds of device work");
    int64_t busy = tl_ivset_union_length(each, K_N); /* the union, not made */
    tl_ivset_subtract(&a->set[K_COMM], &a->set[K_COMP], &xcomm);
    tl_ivset_subtract(&a->set[K_COPY], &a->set[K_COMP], &tmp);
    tl_ivset_subtract(&tmp, &a->set[K_COMM], &xcopy);
    tl_ivset_free(&tmp);
    int64_t total = sc->all ? a->last - a->first : sc->total;
    tl_table_int(tab, r, C_OPS, a->ops);
    tl_table_time(tab, r, C_COMP, tl_ivset_length(&a->set[K_COMP]));
    tl_table_time(tab, r, C_COMM, tl_ivset_length(&a->set[K_COMM]));
    tl_table_time(tab, r, C_COPY, tl_ivset_length(&a->set[K_COPY]));
    tl_table_time(tab, r, C_XCOMM, tl_ivset_length(&xcomm));
    tl_table_time(tab, r, C_XCOPY, tl_ivset_length(&xcopy));
    tl_table_time(tab, r, C_BUSY, busy);
    tl_table_time(tab, r, C_IDLE, total - busy);
    tl_table_time(tab, r, C_TOTAL, total);
    if (total > 0)
        tl_table_pct(tab, r, C_IDLE_PCT, 100.0 * (double)(total - busy) / (double)total);
    tl_ivset_free(&xcomm);
    tl_ivset_free(&xcopy);
}

static void acc_add(dev_acc *a, int k, const tl_event *e)
{
    int64_t end = e->ts + (e->dur > 0 ? e->dur : 0);
    if (!a->ops || e->ts < a->first)
        a->first = e->ts;
    if (!a->ops || end > a->last)
        a->last = end;
    a->ops++;
    tl_ivset_extend(&a->set[k], e->ts, end);
}

static int cmp_dev(const void *pa, const void *pb)
{
    const dev_acc *a = pa, *b = pb;
    return (a->device > b->device) - (a->device < b->device);
}

tl_table *tl_view_gpu(const tl_trace *t, const tl_view_opts *o, tl_error *err)
{
    tl_table *tab = tl_table_new("GPU Timeline", "gpu", cols, C_NCOLS);
    uint8_t *named = calloc(t->strings.count ? t->strings.count : 1, 1);
    dev_acc *dev = NULL, pool;
    size_t ndev = 0, cap = 0;
    tl_gpu_scope sc;
    memset(&pool, 0, sizeof pool);
    int scope_ok = tl_gpu_scope_init(t, o, &sc) == 0;
    if (!tab || !named || !scope_ok)
        goto oom;
    pool.device = -1;
    tl_cat_walk cw;
    for (size_t i = tl_cat_walk_begin(&cw, t, TL_DEVICE_WORK); i < t->nev;
         i = tl_cat_walk_step(&cw, i)) {
        const tl_event *e = &t->ev[i];
        if (!tl_is_device_work(e) || e->track >= t->ntracks || !tl_gpu_scope_touches(&sc, e))
            continue;
        int32_t d = t->tracks[e->track].device;
        size_t k = 0;
        while (k < ndev && dev[k].device != d)
            k++;
        if (k == ndev) {
            if (ndev == cap) {
                size_t nc = cap ? cap * 2 : 4;
                dev_acc *nd = realloc(dev, nc * sizeof *nd);
                if (!nd)
                    goto oom;
                dev = nd;
                cap = nc;
            }
            memset(&dev[ndev], 0, sizeof dev[ndev]);
            dev[ndev++].device = d;
        }
        int c = op_class(t, named, e);
        acc_add(&dev[k], c, e);
        acc_add(&pool, c, e); /* the pool of all devices (a row with several) */
    }
    if (ndev) /* dev is NULL without devices, and qsort(NULL, 0) is undefined */
        qsort(dev, ndev, sizeof *dev, cmp_dev);
    for (size_t k = 0; k < ndev; k++) {
        int r = tl_table_add_row(tab);
        if (r < 0)
            goto oom;
        const tl_device *d = NULL;
        for (uint32_t q = 0; q < t->ndevices; q++)
            if (t->devices[q].id == dev[k].device)
                d = &t->devices[q];
        if (d && d->name)
            tl_table_strf(tab, r, C_NAME, "%s %d (%s)", tl_accel_name(t), (int)dev[k].device,
                          tl_str(&t->strings, d->name));
        else
            tl_table_strf(tab, r, C_NAME, "%s %d", tl_accel_name(t), (int)dev[k].device);
        tl_table_int(tab, r, C_DEVICE, dev[k].device);
        fill_row(tab, r, &dev[k], &sc);
    }
    if (ndev > 1) {
        int r = tl_table_add_row(tab);
        if (r < 0)
            goto oom;
        tl_table_str(tab, r, C_NAME, "all devices");
        fill_row(tab, r, &pool, &sc);
    }
    if (!ndev) {
        tl_table_note(tab, "No kernels, copies or memsets%s.",
                      sc.linked_only ? " launched from a runtime call in the file" : "");
    } else {
        tl_table_note(tab,
                      "Unions over all streams of the device. Communication: kernels and "
                      "memsets named nccl/rccl; memcpy: copies; computation: the other kernels "
                      "and memsets. Exposed comm = communication - computation; exposed memcpy "
                      "= memcpy - computation - communication.");
        if (sc.all)
            tl_table_note(tab, "Total = first op start to last op end (--window all)%s.",
                          sc.linked_only ? "; only ops whose launch call is in the file" : "");
        else
            tl_table_note(tab, "Total = the profiled window (%s); every interval clipped to it%s.",
                          tl_gpu_scope_name(&sc),
                          sc.linked_only ? "; only ops whose launch call is in the file" : "");
        if (ndev > 1)
            tl_table_note(tab, "all devices: every device pooled into one timeline (TraceLens's "
                               "PyTorch analyser does this).");
    }
    goto done;
oom:
    tl_table_free(tab);
    tab = NULL;
    tl_error_setc(err, TL_ERR_NOMEM, "gpu view: out of memory");
done:
    for (size_t k = 0; k < ndev; k++)
        for (int c = 0; c < K_N; c++)
            tl_ivset_free(&dev[k].set[c]);
    for (int c = 0; c < K_N; c++)
        tl_ivset_free(&pool.set[c]);
    free(dev);
    free(named);
    tl_gpu_scope_free(&sc);
    return tab;
}
