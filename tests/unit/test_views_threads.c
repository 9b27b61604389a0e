/*
 * test_views_threads.c — the views that split their own work among threads (ops: the [memory]
 * records apart; breakdown: the role sets in parts of the events; findings: the checks apart;
 * memory: the merged operators and calls apart) give the same tables with one thread and with
 * several, on a trace big enough for them to split (over 262,144 events), and the numbers
 * known by construction.
 *
 * The trace: a training thread with 4 ProfilerSteps; in each, ITERS iterations of aten::linear
 * (10 us) holding aten::addmm (6 us), which holds a cudaLaunchKernel (2 us, launching a 5 us
 * gemm on stream 7) and a [memory] record of 4 KiB (freed 100 ns later), then a
 * nccl:all_reduce (4 us) launching a 3 us AllReduce kernel, a python frame around it all.
 * The iteration is 30 us long; its kernels never overlap.
 */
#include "analysis/views.h"
#include "testlib.h"
#include "views_fixture.h"

#include <stdlib.h>

#define ITERS 12000 /* per step: 4 steps x 12000 x 7-8 events > 262,144 */
#define US    1000

static void ev_at(tl_trace *t, uint32_t track, tl_cat cat, const char *name, int64_t ts,
                  int64_t dur, int64_t corr)
{
    tl_event *e = tl_trace_add(t);
    if (!e)
        return;
    e->ts = ts;
    e->dur = dur;
    e->cat = (uint16_t)cat;
    e->name = tl_intern(&t->strings, name, strlen(name));
    e->track = track;
    e->corr = corr;
}

static void mem_at(tl_trace *t, uint32_t track, int64_t ts, int64_t bytes, uint64_t addr)
{
    ev_at(t, track, TL_CAT_MEMORY, "[memory]", ts, 0, 0);
    tl_event *e = &t->ev[t->nev - 1];
    e->value = bytes;
    e->flags = TL_EV_INSTANT | TL_EV_MEM_DEVICE;
    tl_memev *m = tl_trace_add_mem(t);
    if (!m)
        return;
    memset(m, 0, sizeof *m);
    m->ts = ts;
    m->bytes = bytes;
    m->addr = addr;
    m->device = 0;
    m->total_allocated = m->total_reserved = -1;
    m->track = track;
}

static void build(tl_trace *t)
{
    tl_trace_init(t);
    t->source = TL_SRC_KINETO;
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t st = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
    int64_t corr = 1;
    for (int s = 0; s < 4; s++) {
        int64_t s0 = (int64_t)s * ITERS * 30 * US;
        char name[32];
        snprintf(name, sizeof name, "ProfilerStep#%d", s);
        ev_at(t, th, TL_CAT_STEP, name, s0, (int64_t)ITERS * 30 * US, 0);
        t->ev[t->nev - 1].value = s;
        for (int i = 0; i < ITERS; i++) {
            int64_t a = s0 + (int64_t)i * 30 * US;
            ev_at(t, th, TL_CAT_PYTHON, "train.py(12): step", a, 29 * US, 0);
            ev_at(t, th, TL_CAT_OPERATOR, "aten::linear", a + 1 * US, 10 * US, 0);
            ev_at(t, th, TL_CAT_OPERATOR, "aten::addmm", a + 2 * US, 6 * US, 0);
            ev_at(t, th, TL_CAT_RUNTIME, "cudaLaunchKernel", a + 3 * US, 2 * US, corr);
            ev_at(t, st, TL_CAT_KERNEL, "gemm", a + 6 * US, 5 * US, corr++);
            mem_at(t, th, a + 6 * US, 4096, 0x1000 + (uint64_t)(i % 64) * 0x1000);
            mem_at(t, th, a + 6 * US + 100, -4096, 0x1000 + (uint64_t)(i % 64) * 0x1000);
            ev_at(t, th, TL_CAT_OPERATOR, "nccl:all_reduce", a + 14 * US, 4 * US, 0);
            ev_at(t, th, TL_CAT_RUNTIME, "cudaLaunchKernel", a + 15 * US, 2 * US, corr);
            ev_at(t, st, TL_CAT_KERNEL, "ncclDevKernel_AllReduce_Sum_f32", a + 17 * US, 3 * US,
                  corr++);
        }
    }
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

typedef tl_table *(*view_fn)(const tl_trace *, const tl_view_opts *, tl_error *);

/* The view's tables computed with the given threads (the trace's shared results dropped
 * first, so that each computes its own). */
static tl_table *computed(tl_trace *t, view_fn fn, int threads)
{
    t->read_threads = threads;
    tl_trace_memo_drop(t);
    tl_view_opts o;
    memset(&o, 0, sizeof o);
    tl_error err = {{0}};
    tl_table *tab = fn(t, &o, &err);
    CHECK(tab != NULL);
    return tab;
}

TEST(views_in_threads_write_the_same)
{
    tl_trace t;
    build(&t);
    CHECK(t.nev > 262144);
    static const struct {
        const char *name;
        view_fn fn;
    } views[] = {{"ops", tl_view_ops},
                 {"breakdown", tl_view_breakdown},
                 {"findings", tl_view_findings},
                 {"memory", tl_view_memory}};
    for (size_t v = 0; v < sizeof views / sizeof *views; v++) {
        tl_table *one = computed(&t, views[v].fn, 1);
        for (int threads = 2; threads <= 7; threads += 5) {
            tl_table *many = computed(&t, views[v].fn, threads);
            if (one && many && !fx_same_writes(one, many)) {
                fprintf(stderr, "  %s: %d threads write another table than one\n", views[v].name,
                        threads);
                CHECK(0);
            }
            tl_table_free(many);
        }
        tl_table_free(one);
    }
    tl_trace_free(&t);
}

TEST(numbers_known_by_construction_with_threads)
{
    tl_trace t;
    build(&t);
    const int64_t n = 4 * ITERS;
    tl_table *ops = computed(&t, tl_view_ops, 4);
    if (ops) {
        CHECK_EQ_INT(fx_time(ops, "aten::linear", "cpu_total_us"), n * 10 * US);
        CHECK_EQ_INT(fx_time(ops, "aten::linear", "self_cpu_us"), n * 4 * US);
        CHECK_EQ_INT(fx_time(ops, "aten::addmm", "self_cuda_us"), n * 5 * US);
        CHECK_EQ_INT(fx_time(ops, "aten::linear", "cuda_total_us"), n * 5 * US);
        /* each addmm holds an allocation and its free: 4 KiB in, net 0 self */
        int r = fx_row(ops, 0, "aten::addmm");
        CHECK_EQ_INT(fx_cell(ops, r, "cuda_mem_bytes")->i, 0);
        CHECK_EQ_INT(fx_cell(ops, r, "calls")->i, n);
    }
    tl_table_free(ops);
    tl_table *bd = computed(&t, tl_view_breakdown, 4);
    if (bd) { /* per step: ITERS gemms of 5 us; communication: the nccl op and its kernel */
        int avg = fx_row(bd, 0, "Average");
        CHECK_EQ_INT(fx_cell(bd, avg, "kernel_us")->i, (int64_t)ITERS * 5 * US);
        CHECK_EQ_INT(fx_cell(bd, avg, "communication_us")->i, (int64_t)ITERS * 6 * US);
        CHECK_EQ_INT(fx_cell(bd, avg, "step_us")->i, (int64_t)ITERS * 30 * US);
    }
    tl_table_free(bd);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(views_in_threads_write_the_same);
    RUN(numbers_known_by_construction_with_threads);
    return test_summary();
}
