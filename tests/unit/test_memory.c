/*
 * test_memory.c — the memory analysis (src/analysis/memory.c), its view (view_memory.c) and
 * InternLM's memory.log (report/memory_log.c) on hand-made traces whose answers are known by
 * construction, and the JSON reader's memory events (Kineto's [memory], Paddle's Allocate).
 *
 * Times are written in µs (US) and stored in ns. The definitions tested are memory.h's; where a
 * PyTorch trace is attributed to operators, the comments give what TensorBoard's PyTorch
 * profiler plugin (torch_tb_profiler 0.4.3) computes by its own rules on the same trace: the
 * same numbers, except where a comment says how they differ.
 */
#include "analysis/memory.h"
#include "insight_fixture.h"
#include "report/memory_log.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024LL * 1024LL)

/* ---- building traces ---------------------------------------------------------------------- */

/* A fresh trace of that source and its thread (pid 1, tid 1). */
static uint32_t new_trace(tl_trace *t, tl_source source)
{
    tl_trace_init(t);
    t->source = source;
    return tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
}

static void step_ev(tl_trace *t, uint32_t th, int n, int64_t ts, int64_t dur)
{
    char name[32];
    snprintf(name, sizeof name, "ProfilerStep#%d", n);
    fx_ev(t, th, TL_CAT_STEP, name, ts, dur)->value = n;
}

/* An allocation (bytes > 0) or free (bytes < 0) on device at ts, without the allocator's
 * totals. */
static tl_memev *rec(tl_trace *t, uint32_t track, int32_t device, int64_t ts, int64_t bytes,
                     uint64_t addr)
{
    tl_memev *r = tl_trace_add_mem(t);
    r->track = track;
    r->device = device;
    r->ts = ts;
    r->bytes = bytes;
    r->addr = addr;
    if (addr)
        t->mem_addr_known = 1;
    return r;
}

/* The same with the allocator's totals after it (Kineto's Total Allocated / Total Reserved). */
static void rec_tot(tl_trace *t, uint32_t track, int32_t device, int64_t ts, int64_t bytes,
                    uint64_t addr, int64_t allocated, int64_t reserved)
{
    tl_memev *r = rec(t, track, device, ts, bytes, addr);
    r->total_allocated = allocated;
    r->total_reserved = reserved;
    t->mem_totals_known = 1;
}

/* A record with a category, a name and flags (LIVE, LABEL). */
static void rec_as(tl_trace *t, uint32_t track, int32_t device, int64_t ts, int64_t bytes,
                   uint64_t addr, unsigned flags, tl_mem_cat cat, const char *name)
{
    tl_memev *r = rec(t, track, device, ts, bytes, addr);
    r->flags = (uint16_t)flags;
    r->category = (uint16_t)cat;
    r->name = name ? tl_intern(&t->strings, name, strlen(name)) : 0;
}

/* tl_mem_compute, checked; when it fails, t is freed too and the test returns. */
static int computed(tl_trace *t, tl_mem *m)
{
    int rc = tl_mem_compute(t, m);
    CHECK_EQ_INT(rc, 0);
    if (rc != 0)
        tl_trace_free(t);
    return rc;
}

static void release(tl_trace *t, tl_mem *m)
{
    tl_mem_free(m);
    tl_trace_free(t);
}

static const tl_mem_op *op_of(const tl_trace *t, const tl_mem *m, int32_t device, const char *name)
{
    for (size_t i = 0; i < m->nops; i++)
        if (m->ops[i].device == device && !strcmp(tl_str(&t->strings, m->ops[i].name), name))
            return &m->ops[i];
    return NULL;
}

/* Check one operator row: calls, allocations (count, bytes) and frees, total then self. */
#define CHECK_OP(t, m, dev, name, calls_, allocs_, bytes_, freed_, sallocs, sbytes, sfreed)        \
    do {                                                                                           \
        const tl_mem_op *o_ = op_of(t, m, dev, name);                                              \
        CHECK(o_ != NULL);                                                                         \
        if (o_) {                                                                                  \
            CHECK_EQ_INT(o_->calls, calls_);                                                       \
            CHECK_EQ_INT(o_->allocs, allocs_);                                                     \
            CHECK_EQ_INT(o_->alloc_bytes, bytes_);                                                 \
            CHECK_EQ_INT(o_->freed_bytes, freed_);                                                 \
            CHECK_EQ_INT(o_->self_allocs, sallocs);                                                \
            CHECK_EQ_INT(o_->self_alloc_bytes, sbytes);                                            \
            CHECK_EQ_INT(o_->self_freed_bytes, sfreed);                                            \
        }                                                                                          \
    } while (0)

/* The block allocated at addr on device (the last one there), or NULL. */
static const tl_mem_block *block_at(const tl_mem *m, int32_t device, uint64_t addr)
{
    const tl_mem_block *b = NULL;
    for (size_t i = 0; i < m->nblocks; i++)
        if (m->blocks[i].device == device && m->blocks[i].addr == addr)
            b = &m->blocks[i];
    return b;
}

/* Row of tab whose column k1 holds s1 and k2 holds s2, or -1. */
static int row2(const tl_table *tab, const char *k1, const char *s1, const char *k2, const char *s2)
{
    for (int r = 0; tab && r < tab->nrows; r++)
        if (!strcmp(fx_s(tab, r, k1), s1) && !strcmp(fx_s(tab, r, k2), s2))
            return r;
    return -1;
}

/* Whether a note of tab contains s. */
static int has_note(const tl_table *tab, const char *s)
{
    for (int i = 0; tab && i < tab->nnotes; i++)
        if (strstr(tab->notes[i], s))
            return 1;
    return 0;
}

/* ---- 1. the allocator's totals: timeline, peak, devices ------------------------------------ */

/*
 * A Kineto trace (records carry Total Allocated / Total Reserved) on three devices, two steps
 * [0, 100) and [100, 200) us, one operator aten::empty [5, 55) us. Records (us, bytes, total):
 *   GPU0: 10 +100 (1100)  20 +200 (1300)  110 +500 (1800)  120 -500 (1300)  150 -100 (1200)
 *         reserved 2048 until 20, 4096 from 110
 *   GPU1: 30 +64 (64)  40 -64 (0), reserved 1024
 *   CPU:  50 +8 (8)  60 +16 (24)  190 -8 (16), reserved 0 (PyTorch's CPU allocator: unknown)
 * GPU0 starts at 1100 - 100 = 1000 (allocated before recording) and peaks at 1800 at 110 us, in
 * step 2, with 4096 reserved; the blocks alive then are 800 bytes, so 1000 are unexplained.
 */
static void build_totals(tl_trace *t)
{
    uint32_t th = new_trace(t, TL_SRC_KINETO);
    step_ev(t, th, 1, 0, 100 * US);
    step_ev(t, th, 2, 100 * US, 100 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::empty", 5 * US, 50 * US);
    /* added out of time order: tl_trace_finish sorts the memory table */
    rec_tot(t, th, 1, 30 * US, 64, 0xb1, 64, 1024);
    rec_tot(t, th, 1, 40 * US, -64, 0xb1, 0, 1024);
    rec_tot(t, th, 0, 10 * US, 100, 0xa1, 1100, 2048);
    rec_tot(t, th, 0, 20 * US, 200, 0xa2, 1300, 2048);
    rec_tot(t, th, 0, 110 * US, 500, 0xa3, 1800, 4096);
    rec_tot(t, th, 0, 120 * US, -500, 0xa3, 1300, 4096);
    rec_tot(t, th, 0, 150 * US, -100, 0xa1, 1200, 4096);
    rec_tot(t, th, -1, 50 * US, 8, 0xc1, 8, 0);
    rec_tot(t, th, -1, 60 * US, 16, 0xc2, 24, 0);
    rec_tot(t, th, -1, 190 * US, -8, 0xc1, 16, 0);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(totals_give_peak_step_reserved_and_levels_per_device)
{
    tl_trace t;
    build_totals(&t);
    CHECK_EQ_INT(t.nmem, 10);
    for (size_t i = 1; i < t.nmem; i++)
        CHECK(t.mem[i - 1].ts <= t.mem[i].ts);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    CHECK_EQ_INT(m.ops_mode, 1);
    CHECK_EQ_INT(m.nsteps, 2);
    CHECK_EQ_INT(m.steps[1].ts, 100 * US);
    CHECK_EQ_INT(m.steps[1].end, 200 * US);
    CHECK_EQ_INT(m.steps[1].number, 2);
    CHECK_EQ_INT(m.ndev, 3); /* host first, then by id */
    CHECK_EQ_INT(m.dev[0].device, -1);
    CHECK_EQ_INT(m.dev[1].device, 0);
    CHECK_EQ_INT(m.dev[2].device, 1);

    const tl_mem_device *g = tl_mem_device_of(&m, 0);
    CHECK(g == &m.dev[1]);
    CHECK_EQ_INT(g->timeline, 1);
    CHECK_EQ_INT(g->reserved_known, 1);
    CHECK_EQ_INT(g->peak, 1800);
    CHECK_EQ_INT(g->peak_ts, 110 * US);
    CHECK_EQ_INT(g->peak_pos, 6); /* 10 20 30 40 50 60 [110] */
    CHECK_EQ_INT(g->peak_step, 1);
    CHECK_EQ_INT(m.steps[g->peak_step].number, 2);
    CHECK_EQ_INT(g->res_at_peak, 4096);
    CHECK_EQ_INT(g->peak_res, 4096);
    CHECK_EQ_INT(g->peak_res_ts, 110 * US);
    CHECK_EQ_INT(g->alloc_start, 1000);
    CHECK_EQ_INT(g->alloc_end, 1200);
    CHECK_EQ_INT(g->res_start, 2048);
    CHECK_EQ_INT(g->res_end, 4096);
    CHECK_EQ_INT(g->allocs, 3);
    CHECK_EQ_INT(g->frees, 2);
    CHECK_EQ_INT(g->alloc_bytes, 800);
    CHECK_EQ_INT(g->freed_bytes, 600);
    CHECK_EQ_INT(g->nseries, 5);
    if (g->nseries == 5) {
        CHECK_EQ_INT(g->series[2].ts, 110 * US);
        CHECK_EQ_INT(g->series[2].allocated, 1800);
        CHECK_EQ_INT(g->series[2].reserved, 4096);
        CHECK_EQ_INT(g->series[4].allocated, 1200);
    }
    CHECK_EQ_INT(g->at_peak[TL_MEM_OTHER], 800);
    CHECK_EQ_INT(g->at_peak_unknown, 1000);

    const tl_mem_device *g1 = tl_mem_device_of(&m, 1);
    CHECK_EQ_INT(g1->peak, 64);
    CHECK_EQ_INT(g1->peak_ts, 30 * US);
    CHECK_EQ_INT(g1->peak_step, 0);
    CHECK_EQ_INT(g1->alloc_start, 0);
    CHECK_EQ_INT(g1->alloc_end, 0);
    CHECK_EQ_INT(g1->res_at_peak, 1024);
    CHECK_EQ_INT(g1->at_peak_unknown, 0);

    const tl_mem_device *c = tl_mem_device_of(&m, -1);
    CHECK_EQ_INT(c->timeline, 1);
    CHECK_EQ_INT(c->reserved_known, 0); /* reserved 0 everywhere: unknown */
    CHECK_EQ_INT(c->peak, 24);
    CHECK_EQ_INT(c->peak_ts, 60 * US);
    CHECK_EQ_INT(c->peak_step, 0);
    CHECK_EQ_INT(c->alloc_start, 0);
    CHECK_EQ_INT(c->alloc_end, 16);
    CHECK_EQ_INT(c->res_at_peak, -1);
    CHECK_EQ_INT(c->res_start, -1);
    CHECK_EQ_INT(c->peak_res, -1);
    CHECK_EQ_INT(c->nseries, 3);
    if (c->nseries)
        CHECK_EQ_INT(c->series[0].reserved, -1);
    CHECK(tl_mem_device_of(&m, 2) == NULL);

    char name[32];
    tl_mem_device_name(-1, name, sizeof name);
    CHECK_STR(name, "CPU");
    tl_mem_device_name(1, name, sizeof name);
    CHECK_STR(name, "GPU1");
    CHECK(tl_mem_main_device(&m) == g); /* the GPU with the highest peak */

    /* aten::empty [5, 55) owns the records at 10..50 us; the others are in steps only */
    CHECK_EQ_INT(m.unowned, 5);
    CHECK_OP(&t, &m, 0, "aten::empty", 1, 2, 300, 0, 2, 300, 0);
    CHECK_OP(&t, &m, 1, "aten::empty", 1, 1, 64, 64, 1, 64, 64);
    CHECK_OP(&t, &m, -1, "aten::empty", 1, 1, 8, 0, 1, 8, 0);
    CHECK_EQ_INT(m.nblocks, 6);
    CHECK_EQ_INT(m.unmatched, 0);
    CHECK_EQ_INT(m.reused, 0);
    release(&t, &m);
}

/* ---- 2. tally's own traces: the level from the live set, categories, labels ---------------- */

/*
 * A tally trace on GPU0 without totals: step [0, 100), forward [10, 50), backward [50, 90) us.
 *   0   LIVE +1000 0x100 parameter "layers.0.w"       0   LIVE +300 0x200 optimizer_state
 *   20  +400 0x300 (other)                            25  LABEL 0x300 activation "layers.0.out"
 *   30  LABEL +200 0x400 parameter "layers.1.w": no block there: one alive since the start
 *   35  LABEL 0 bytes 0x999: no block, no size: lost
 *   60  +100 0x500 gradient "layers.0.w"              70  -400 0x300
 *   80  +50 0x600 temporary                           85  -50 0x600
 * Level: 1000, 1300 (the live set: the start), 1700, 1800 (peak at 60), 1400, 1450, 1400.
 */
static void build_live(tl_trace *t)
{
    uint32_t th = new_trace(t, TL_SRC_TALLY);
    step_ev(t, th, 0, 0, 100 * US);
    fx_ev(t, th, TL_CAT_FORWARD, "forward", 10 * US, 40 * US);
    fx_ev(t, th, TL_CAT_BACKWARD, "backward", 50 * US, 40 * US);
    rec_as(t, th, 0, 0, 1000, 0x100, TL_MEM_LIVE, TL_MEM_PARAMETER, "layers.0.w");
    rec_as(t, th, 0, 0, 300, 0x200, TL_MEM_LIVE, TL_MEM_OPTIMIZER_STATE, NULL);
    rec(t, th, 0, 20 * US, 400, 0x300);
    rec_as(t, th, 0, 25 * US, 0, 0x300, TL_MEM_LABEL, TL_MEM_ACTIVATION, "layers.0.out");
    rec_as(t, th, 0, 30 * US, 200, 0x400, TL_MEM_LABEL, TL_MEM_PARAMETER, "layers.1.w");
    rec_as(t, th, 0, 35 * US, 0, 0x999, TL_MEM_LABEL, TL_MEM_PARAMETER, "lost");
    rec_as(t, th, 0, 60 * US, 100, 0x500, 0, TL_MEM_GRADIENT, "layers.0.w");
    rec(t, th, 0, 70 * US, -400, 0x300);
    rec_as(t, th, 0, 80 * US, 50, 0x600, 0, TL_MEM_TEMPORARY, NULL);
    rec(t, th, 0, 85 * US, -50, 0x600);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(live_set_and_labels_without_totals)
{
    tl_trace t;
    build_live(&t);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    CHECK_EQ_INT(m.ops_mode, 0);
    CHECK_EQ_INT(m.ndev, 1);
    const tl_mem_device *d = tl_mem_device_of(&m, 0);
    CHECK(d != NULL);
    if (!d) {
        release(&t, &m);
        return;
    }
    CHECK_EQ_INT(d->timeline, 1);
    CHECK_EQ_INT(d->alloc_start, 1300);
    CHECK_EQ_INT(d->alloc_end, 1400);
    CHECK_EQ_INT(d->peak, 1800);
    CHECK_EQ_INT(d->peak_ts, 60 * US);
    CHECK_EQ_INT(d->peak_pos, 6);
    CHECK_EQ_INT(d->peak_step, 0);
    CHECK_EQ_INT(d->reserved_known, 0);
    CHECK_EQ_INT(d->res_at_peak, -1);
    CHECK_EQ_INT(d->nseries, 7); /* labels are no points */
    static const int64_t levels[7] = {1000, 1300, 1700, 1800, 1400, 1450, 1400};
    for (size_t i = 0; i < 7 && i < d->nseries; i++)
        CHECK_EQ_INT(d->series[i].allocated, levels[i]);
    CHECK_EQ_INT(d->allocs, 3); /* the live set aside */
    CHECK_EQ_INT(d->alloc_bytes, 550);
    CHECK_EQ_INT(d->frees, 2);
    CHECK_EQ_INT(d->freed_bytes, 450);
    /* at the peak: 1000 + 200 parameters (the labelled block alive since the start counts),
     * 300 optimizer state, the block labelled an activation, the gradient */
    CHECK_EQ_INT(d->at_peak[TL_MEM_PARAMETER], 1200);
    CHECK_EQ_INT(d->at_peak[TL_MEM_OPTIMIZER_STATE], 300);
    CHECK_EQ_INT(d->at_peak[TL_MEM_ACTIVATION], 400);
    CHECK_EQ_INT(d->at_peak[TL_MEM_GRADIENT], 100);
    CHECK_EQ_INT(d->at_peak[TL_MEM_OTHER], 0);
    CHECK_EQ_INT(d->at_peak[TL_MEM_TEMPORARY], 0);
    CHECK_EQ_INT(d->at_peak_unknown, 0);
    CHECK_EQ_INT(m.labels_lost, 1);
    CHECK_EQ_INT(m.unmatched, 0);
    CHECK_EQ_INT(m.others_are_activations, 0);
    CHECK_EQ_INT(m.any_names, 1);
    CHECK_EQ_INT(m.any_categories, 1);

    CHECK_EQ_INT(m.nblocks, 6);
    const tl_mem_block *x = block_at(&m, 0, 0x300);
    CHECK(x && x->category == TL_MEM_ACTIVATION);
    CHECK(x && !strcmp(tl_str(&t.strings, x->name), "layers.0.out"));
    CHECK(x && x->free_pos == 7 && x->free_ts == 70 * US);
    const tl_mem_block *p = block_at(&m, 0, 0x400);
    CHECK(p != NULL);
    if (p) {
        CHECK_EQ_INT(p->bytes, 200);
        CHECK_EQ_INT(p->category, TL_MEM_PARAMETER);
        CHECK_EQ_INT(p->pos, 0);
        CHECK_EQ_INT(p->ts, 0);
        CHECK_EQ_INT(p->live_at_start, 1);
        CHECK_EQ_INT(p->step, -1);
        CHECK(p->free_pos == SIZE_MAX && p->free_ts == TL_MEM_NEVER);
        CHECK(tl_mem_alive_at_peak(p, d));
    }
    const tl_mem_block *l = block_at(&m, 0, 0x100);
    CHECK(l && l->live_at_start && l->pos == 0);
    CHECK(block_at(&m, 0, 0x999) == NULL);

    /* ranges mode: the innermost range that is not a step; the live set has no owner */
    CHECK_EQ_INT(m.unowned, 0);
    CHECK_OP(&t, &m, 0, "forward", 1, 1, 400, 0, 1, 400, 0);
    CHECK_OP(&t, &m, 0, "backward", 1, 2, 150, 450, 2, 150, 450);
    CHECK_EQ_INT(m.nops, 2);
    release(&t, &m);
}

/* Parameters labelled and no block said to be an activation: the blocks of no category are
 * taken as activations (InternLM's "what is allocated beyond them"). A label of an address freed
 * earlier makes a block alive since that free. */
TEST(others_are_activations_and_label_after_a_free)
{
    tl_trace t;
    uint32_t th = new_trace(&t, TL_SRC_TALLY);
    fx_ev(&t, th, TL_CAT_USER, "train", 0, 100 * US);
    rec_as(&t, th, 0, 0, 1000, 0x10, TL_MEM_LIVE, TL_MEM_PARAMETER, "w");
    rec(&t, th, 0, 10 * US, 64, 0x20);  /* pos 1 */
    rec(&t, th, 0, 20 * US, -64, 0x20); /* pos 2 */
    rec(&t, th, 0, 30 * US, 500, 0x30); /* pos 3: an activation by default; the peak */
    rec_as(&t, th, 0, 40 * US, 32, 0x20, TL_MEM_LABEL, TL_MEM_GRADIENT, "w");
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    CHECK_EQ_INT(m.others_are_activations, 1);
    const tl_mem_device *d = tl_mem_device_of(&m, 0);
    CHECK_EQ_INT(d->peak, 1500);
    CHECK_EQ_INT(d->at_peak[TL_MEM_ACTIVATION], 500);
    CHECK_EQ_INT(d->at_peak[TL_MEM_OTHER], 0);
    CHECK_EQ_INT(d->at_peak[TL_MEM_PARAMETER], 1000);
    CHECK_EQ_INT(d->at_peak[TL_MEM_GRADIENT], 32); /* alive from pos 3, after the free */
    const tl_mem_block *g = block_at(&m, 0, 0x20);
    CHECK(g != NULL);
    if (g) {
        CHECK_EQ_INT(g->category, TL_MEM_GRADIENT);
        CHECK_EQ_INT(g->pos, 3);
        CHECK_EQ_INT(g->ts, 30 * US);
        CHECK_EQ_INT(g->live_at_start, 0);
    }
    CHECK_EQ_INT(block_at(&m, 0, 0x30)->category, TL_MEM_ACTIVATION);
    release(&t, &m);
}

/* ---- 3. neither totals nor addresses (PyTorch before 1.10) --------------------------------- */

static void build_bare(tl_trace *t)
{
    uint32_t th = new_trace(t, TL_SRC_KINETO);
    step_ev(t, th, 1, 0, 100 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::mm", 10 * US, 20 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::add", 40 * US, 20 * US);
    rec(t, th, 0, 20 * US, 256, 0);
    rec(t, th, 0, 50 * US, 64, 0);
    rec(t, th, 0, 55 * US, -64, 0);
    rec(t, th, 0, 70 * US, -256, 0);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(no_totals_no_addresses_no_timeline_but_operators)
{
    tl_trace t;
    build_bare(&t);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    CHECK_EQ_INT(m.ndev, 1);
    CHECK_EQ_INT(m.dev[0].timeline, 0);
    CHECK_EQ_INT(m.nblocks, 0);
    CHECK(tl_mem_main_device(&m) == NULL);
    CHECK_EQ_INT(m.dev[0].allocs, 2);
    CHECK_EQ_INT(m.dev[0].frees, 2);
    CHECK_OP(&t, &m, 0, "aten::mm", 1, 1, 256, 0, 1, 256, 0);
    CHECK_OP(&t, &m, 0, "aten::add", 1, 1, 64, 64, 1, 64, 64);
    CHECK_EQ_INT(m.unowned, 1);
    release(&t, &m);
}

/* ---- 4. per operator, PyTorch's rule ------------------------------------------------------- */

/*
 * A Kineto trace on one thread, GPU0, step [0, 1000) us:
 *   aten::linear [100, 300)
 *     "## forward ##" user annotation [110, 290)      (seen through)
 *       aten::matmul [120, 200)
 *         aten::mm [140, 160)
 *       aten::add [200, 200)                          (no time: a call all the same)
 *       aten::add [260, 280)
 *   "model.py(10): forward" Python frame [400, 600)
 *     aten::relu [420, 440)
 *   aten::sum [700, 800)
 *     aten::sum [710, 790)                            (its only child, same name: merged)
 *       aten::empty [722, 730)
 *   DataParallel.forward [820, 900)                   (an operator TensorBoard leaves out)
 *     aten::conv2d [830, 850)
 *   aten::empty_strided [960, 970)                    (under no operator)
 * Records (us, bytes) and their owner:
 *   130 +64 matmul   135 0 (none)   150 +32 mm   250 +16 linear (through the annotation)
 *   255 -32 linear   270 +2 add     300 +1 -- linear's end: the step's, unowned
 *   410 +8 -- Python frame: unowned   430 +4 relu   500 -64 -- Python frame: unowned
 *   705 +100 sum   720 +128 sum (the merged child's are the parent's own)   725 +256 empty
 *   840 +16 conv2d   850 +1 -- DataParallel.forward: unowned   950 +1 -- step: unowned
 *   965 +1 empty_strided   1500 -1 -- no span: unowned
 * TensorBoard's plugin on this trace (MemoryParser.find_memory_nodes, then
 * get_memory_statistics; increase = allocated - freed) gives the same rows: linear calls 1,
 * allocation count 4, size 114, increase 82, self count 1, self size 16, self increase -16;
 * matmul 1 call, 2 / 96, self 1 / 64; mm 1 / 32; add 2 calls, 1 / 2; relu 1 / 4; sum 1 call,
 * 3 / 484, self 2 / 228; empty 1 / 256; conv2d 1 / 16; empty_strided 1 / 1; no
 * DataParallel.forward row.
 */
static void build_ops(tl_trace *t)
{
    uint32_t th = new_trace(t, TL_SRC_KINETO);
    step_ev(t, th, 1, 0, 1000 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::linear", 100 * US, 200 * US);
    fx_ev(t, th, TL_CAT_USER, "## forward ##", 110 * US, 180 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::matmul", 120 * US, 80 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::mm", 140 * US, 20 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::add", 200 * US, 0);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::add", 260 * US, 20 * US);
    fx_ev(t, th, TL_CAT_PYTHON, "model.py(10): forward", 400 * US, 200 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::relu", 420 * US, 20 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::sum", 700 * US, 100 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::sum", 710 * US, 80 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::empty", 722 * US, 8 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "DataParallel.forward", 820 * US, 80 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::conv2d", 830 * US, 20 * US);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::empty_strided", 960 * US, 10 * US);
    static const struct {
        int64_t us, bytes;
    } r[] = {{130, 64},  {135, 0},  {150, 32}, {250, 16},  {255, -32}, {270, 2},
             {300, 1},   {410, 8},  {430, 4},  {500, -64}, {705, 100}, {720, 128},
             {725, 256}, {840, 16}, {850, 1},  {950, 1},   {965, 1},   {1500, -1}};
    uint64_t addr[sizeof r / sizeof *r];
    for (size_t i = 0; i < sizeof r / sizeof *r; i++) {
        addr[i] = 0x1000 + 0x10 * i;
        if (r[i].bytes == -32)
            addr[i] = addr[2]; /* frees the block of aten::mm */
        if (r[i].bytes == -64)
            addr[i] = addr[0]; /* frees the block of aten::matmul */
        if (r[i].bytes == -1)
            addr[i] = addr[15]; /* frees the block allocated at 950 */
        rec(t, th, 0, r[i].us * US, r[i].bytes, addr[i]);
    }
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(operators_self_total_calls_and_merge_as_tensorboard)
{
    tl_trace t;
    build_ops(&t);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    CHECK_EQ_INT(m.ops_mode, 1);
    /* name, calls, allocs, bytes, freed, self allocs, self bytes, self freed */
    CHECK_OP(&t, &m, 0, "aten::linear", 1, 4, 114, 32, 1, 16, 32);
    CHECK_OP(&t, &m, 0, "aten::matmul", 1, 2, 96, 0, 1, 64, 0);
    CHECK_OP(&t, &m, 0, "aten::mm", 1, 1, 32, 0, 1, 32, 0);
    CHECK_OP(&t, &m, 0, "aten::add", 2, 1, 2, 0, 1, 2, 0);
    CHECK_OP(&t, &m, 0, "aten::relu", 1, 1, 4, 0, 1, 4, 0);
    CHECK_OP(&t, &m, 0, "aten::sum", 1, 3, 484, 0, 2, 228, 0);
    CHECK_OP(&t, &m, 0, "aten::empty", 1, 1, 256, 0, 1, 256, 0);
    CHECK_OP(&t, &m, 0, "aten::conv2d", 1, 1, 16, 0, 1, 16, 0);
    CHECK_OP(&t, &m, 0, "aten::empty_strided", 1, 1, 1, 0, 1, 1, 0);
    CHECK(op_of(&t, &m, 0, "DataParallel.forward") == NULL);
    CHECK(op_of(&t, &m, 0, "## forward ##") == NULL);
    CHECK(op_of(&t, &m, 0, "model.py(10): forward") == NULL);
    CHECK(op_of(&t, &m, 0, "ProfilerStep#1") == NULL);
    CHECK_EQ_INT(m.nops, 9);
    CHECK_EQ_INT(m.unowned, 6); /* 300, 410, 500, 850, 950, 1500 */
    /* blocks know their owner */
    const tl_mem_block *b = block_at(&m, 0, 0x1000 + 0x10 * 12);
    CHECK(b && b->owner >= 0 && !strcmp(tl_str(&t.strings, t.ev[b->owner].name), "aten::empty"));
    b = block_at(&m, 0, 0x1000 + 0x10 * 6);
    CHECK(b && b->owner == TL_NONE);
    b = block_at(&m, 0, 0x1000 + 0x10 * 11); /* owned by the outer aten::sum (the merged one) */
    CHECK(b && b->owner >= 0 && t.ev[b->owner].ts == 700 * US);
    release(&t, &m);
}

/* A chain of three same-named operators, each the only child of the one above, is one call (as
 * TensorBoard's remove_dup_nodes, which merges again after each merge, and torch's
 * _remove_dup_nodes); two children of the same name are not merged. */
TEST(duplicate_merge_chains_and_siblings)
{
    tl_trace t;
    uint32_t th = new_trace(&t, TL_SRC_KINETO);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::to", 0, 100 * US);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::to", 10 * US, 80 * US);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::to", 20 * US, 60 * US);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::copy_", 200 * US, 100 * US);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::copy_", 210 * US, 10 * US);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::copy_", 230 * US, 10 * US);
    rec(&t, th, 0, 30 * US, 8, 0x10);
    rec(&t, th, 0, 215 * US, 4, 0x20);
    rec(&t, th, 0, 250 * US, 2, 0x30);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    CHECK_OP(&t, &m, 0, "aten::to", 1, 1, 8, 0, 1, 8, 0);
    /* not merged: 3 calls; the outer one's own 2, the inner one's 4 in both */
    CHECK_OP(&t, &m, 0, "aten::copy_", 3, 3, 10, 0, 2, 6, 0);
    release(&t, &m);
}

/* memory.h's rule: a Python frame is a node, so a record directly in one is unowned even inside
 * an operator (a free when Python drops a tensor in a checkpointed backward). TensorBoard 0.4.3
 * makes only module frames ("Python module id") nodes and sees plain python_function frames
 * through: it would give the -32 to the operator as its own. */
TEST(python_frame_inside_an_operator_owns_nothing)
{
    tl_trace t;
    uint32_t th = new_trace(&t, TL_SRC_KINETO);
    const char *op = "autograd::engine::evaluate_function: CheckpointFunctionBackward";
    fx_ev(&t, th, TL_CAT_OPERATOR, op, 0, 100 * US);
    fx_ev(&t, th, TL_CAT_PYTHON, "torch/utils/checkpoint.py(80): backward", 10 * US, 80 * US);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::mm", 30 * US, 10 * US);
    rec(&t, th, 0, 5 * US, 32, 0x10);
    rec(&t, th, 0, 20 * US, -32, 0x10);
    rec(&t, th, 0, 35 * US, 16, 0x20);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    CHECK_EQ_INT(m.unowned, 1);
    CHECK_OP(&t, &m, 0, op, 1, 2, 48, 0, 1, 32, 0);
    CHECK_OP(&t, &m, 0, "aten::mm", 1, 1, 16, 0, 1, 16, 0);
    release(&t, &m);
}

/* ---- 5 and 6. ranges mode, CUPTI's records ------------------------------------------------ */

/*
 * A tally trace: step [0, 100) us on thread 1;
 *   forward [10, 90) > layer (user) [20, 80) > attn (user) [30, 50) > aten::mm [40, 45),
 *   cudaMalloc [31, 33) corr 77 in attn; attn again [92, 98) with no record.
 * Records on GPU0: 35 +100 attn; 42 +10 aten::mm; 60 +20 layer; 85 -100 (35's) forward;
 * 99 +1 in the step only: unowned. On stream 7, CUPTI's: +4096 at 500 corr 77 (its call's
 * thread and time: attn) and +8 at 600 corr 99, whose call is not in the trace: unowned.
 */
static void build_ranges(tl_trace *t)
{
    uint32_t th = new_trace(t, TL_SRC_TALLY);
    uint32_t st = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
    step_ev(t, th, 0, 0, 100 * US);
    fx_ev(t, th, TL_CAT_FORWARD, "forward", 10 * US, 80 * US);
    fx_ev(t, th, TL_CAT_USER, "layer", 20 * US, 60 * US);
    fx_ev(t, th, TL_CAT_USER, "attn", 30 * US, 20 * US);
    fx_ev(t, th, TL_CAT_RUNTIME, "cudaMalloc", 31 * US, 2 * US)->corr = 77;
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::mm", 40 * US, 5 * US);
    fx_ev(t, th, TL_CAT_USER, "attn", 92 * US, 6 * US);
    rec(t, th, 0, 35 * US, 100, 0x10);
    rec(t, th, 0, 42 * US, 10, 0x20);
    rec(t, th, 0, 60 * US, 20, 0x30);
    rec(t, th, 0, 85 * US, -100, 0x10);
    rec(t, th, 0, 99 * US, 1, 0x40);
    rec(t, st, 0, 500 * US, 4096, 0x50)->corr = 77;
    rec(t, st, 0, 600 * US, 8, 0x60)->corr = 99;
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(ranges_own_their_records_and_cupti_records_their_calls)
{
    tl_trace t;
    build_ranges(&t);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    CHECK_EQ_INT(m.ops_mode, 0); /* tally's own trace: ranges, even with an operator in it */
    CHECK_OP(&t, &m, 0, "attn", 2, 3, 4206, 0, 2, 4196, 0);
    CHECK_OP(&t, &m, 0, "aten::mm", 1, 1, 10, 0, 1, 10, 0);
    CHECK_OP(&t, &m, 0, "layer", 1, 4, 4226, 0, 1, 20, 0);
    CHECK_OP(&t, &m, 0, "forward", 1, 4, 4226, 100, 0, 0, 100);
    CHECK(op_of(&t, &m, 0, "ProfilerStep#0") == NULL);
    CHECK(op_of(&t, &m, 0, "cudaMalloc") == NULL);
    CHECK_EQ_INT(m.nops, 4);
    CHECK_EQ_INT(m.unowned, 2);
    const tl_mem_block *b = block_at(&m, 0, 0x50);
    CHECK(b && b->owner >= 0 && !strcmp(tl_str(&t.strings, t.ev[b->owner].name), "attn"));
    CHECK(b && b->ts == 500 * US); /* the record keeps its own time */
    b = block_at(&m, 0, 0x60);
    CHECK(b && b->owner == TL_NONE);
    release(&t, &m);
}

/* ---- 7. bad input: counted, never fatal ---------------------------------------------------- */

/*
 * A tally trace on GPU0 without totals (its level is the running sum):
 *   10 -50 0xf (never allocated: unmatched)   20 +100 0xa   30 +40 0xa (still live: reused; the
 *   old block ends there, the level drops by its 100 first)   40 0 bytes at 0xa   45 0 bytes
 *   50 LABEL 0xdead (no block: lost)   55 LABEL -5 bytes 0xbeef (lost)   60 -40 0xa
 *   70 -40 0xa (freed already: unmatched)
 * Level: -50, 50 (the peak), -10, -10, -10, -50, -90.
 */
TEST(bad_records_are_counted)
{
    tl_trace t;
    uint32_t th = new_trace(&t, TL_SRC_TALLY);
    fx_ev(&t, th, TL_CAT_USER, "work", 0, 100 * US);
    rec(&t, th, 0, 10 * US, -50, 0xf);
    rec(&t, th, 0, 20 * US, 100, 0xa);
    rec(&t, th, 0, 30 * US, 40, 0xa);
    rec(&t, th, 0, 40 * US, 0, 0xa);
    rec(&t, th, 0, 45 * US, 0, 0);
    rec_as(&t, th, 0, 50 * US, 0, 0xdead, TL_MEM_LABEL, TL_MEM_PARAMETER, "x");
    rec_as(&t, th, 0, 55 * US, -5, 0xbeef, TL_MEM_LABEL, TL_MEM_PARAMETER, "y");
    rec(&t, th, 0, 60 * US, -40, 0xa);
    rec(&t, th, 0, 70 * US, -40, 0xa);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    CHECK_EQ_INT(m.unmatched, 2);
    CHECK_EQ_INT(m.reused, 1);
    CHECK_EQ_INT(m.labels_lost, 2);
    CHECK_EQ_INT(m.nblocks, 2);
    if (m.nblocks == 2) {
        CHECK_EQ_INT(m.blocks[0].bytes, 100);
        CHECK_EQ_INT(m.blocks[0].free_pos, 2);
        CHECK_EQ_INT(m.blocks[0].free_ts, 30 * US);
        CHECK_EQ_INT(m.blocks[1].bytes, 40);
        CHECK_EQ_INT(m.blocks[1].pos, 2);
        CHECK_EQ_INT(m.blocks[1].free_pos, 7);
    }
    const tl_mem_device *d = tl_mem_device_of(&m, 0);
    CHECK_EQ_INT(d->allocs, 2);
    CHECK_EQ_INT(d->alloc_bytes, 140);
    CHECK_EQ_INT(d->frees, 3);
    CHECK_EQ_INT(d->freed_bytes, 130);
    CHECK_EQ_INT(d->alloc_start, 0);
    CHECK_EQ_INT(d->nseries, 7);
    static const int64_t levels[7] = {-50, 50, -10, -10, -10, -50, -90};
    for (size_t i = 0; i < 7 && i < d->nseries; i++)
        CHECK_EQ_INT(d->series[i].allocated, levels[i]);
    CHECK_EQ_INT(d->peak, 50);
    CHECK_EQ_INT(d->peak_ts, 20 * US);
    CHECK_EQ_INT(d->alloc_end, -90);
    CHECK_EQ_INT(m.unowned, 0);
    /* zero-byte records belong to nothing; the range has the rest */
    CHECK_OP(&t, &m, 0, "work", 1, 2, 140, 130, 2, 140, 130);
    tl_error err = {{0}};
    tl_table *tab = tl_view_memory(&t, NULL, &err);
    CHECK(tab != NULL);
    CHECK(has_note(tab, "2 frees of addresses with no allocation"));
    CHECK(has_note(tab, "1 allocations at an address still allocated"));
    CHECK(has_note(tab, "2 category labels of addresses with no block"));
    tl_table_free(tab);
    release(&t, &m);
}

/* ---- 8. leaks ------------------------------------------------------------------------------- */

enum { LEAK, ALL_FREED, TWO_STEPS, FLAT, FALLS };

/*
 * Five steps of 100 us (ProfilerStep#1..#5) on GPU0 in a tally trace. Every step allocates a
 * 1000-byte temporary at +10 and frees it at +20; steps 2..4 allocate 64 bytes in "cache"
 * [+25, +35) that are never freed (LEAK). ALL_FREED frees them in step 5; TWO_STEPS has two
 * steps, each keeping 64 bytes; FLAT keeps them but frees one of three live blocks of 64 bytes
 * in the same steps, so the level does not grow; FALLS keeps them too and frees a live block of
 * 100 bytes in step 3: the level ends higher than it began (192 > 100) but fell on the way
 * (164 at the end of step 2, 128 at the end of step 3).
 */
static void build_leak(tl_trace *t, int variant)
{
    uint32_t th = new_trace(t, TL_SRC_TALLY);
    int steps = variant == TWO_STEPS ? 2 : 5;
    for (int k = 0; k < steps; k++) {
        int64_t s = k * 100 * US;
        step_ev(t, th, k + 1, s, 100 * US);
        fx_ev(t, th, TL_CAT_FORWARD, "forward", s + 5 * US, 90 * US);
        rec(t, th, 0, s + 10 * US, 1000, 0x1000 + (uint64_t)k);
        rec(t, th, 0, s + 20 * US, -1000, 0x1000 + (uint64_t)k);
        if (variant == FALLS && k == 0)
            rec_as(t, th, 0, 0, 100, 0x4000, TL_MEM_LIVE, TL_MEM_OTHER, NULL);
        if (variant == FALLS && k == 2)
            rec(t, th, 0, s + 40 * US, -100, 0x4000);
        if (variant == TWO_STEPS || (k >= 1 && k <= 3)) {
            fx_ev(t, th, TL_CAT_USER, "cache", s + 25 * US, 10 * US);
            rec(t, th, 0, s + 30 * US, 64, 0x2000 + (uint64_t)k);
            if (variant == FLAT)
                rec(t, th, 0, s + 40 * US, -64, 0x3000 + (uint64_t)k);
        }
        if (variant == FLAT && k == 0)
            for (uint64_t j = 1; j <= 3; j++)
                rec_as(t, th, 0, 0, 64, 0x3000 + j, TL_MEM_LIVE, TL_MEM_OTHER, NULL);
        if (variant == ALL_FREED && k == 4)
            for (uint64_t j = 1; j <= 3; j++)
                rec(t, th, 0, s + 50 * US, -64, 0x2000 + j);
    }
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(leak_kept_step_after_step)
{
    tl_trace t;
    build_leak(&t, LEAK);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    CHECK_EQ_INT(m.nsteps, 5);
    const tl_mem_device *d = tl_mem_device_of(&m, 0);
    CHECK_EQ_INT(d->leak, 1);
    CHECK_EQ_INT(d->leak_per_step, 64);
    CHECK_EQ_INT(d->leak_first, 1); /* the first and the last step are not judged */
    CHECK_EQ_INT(d->leak_last, 3);
    CHECK(d->retained != NULL);
    if (d->retained) {
        static const int64_t kept[5] = {0, 64, 64, 64, 0};
        for (int k = 0; k < 5; k++)
            CHECK_EQ_INT(d->retained[k], kept[k]);
    }
    CHECK_EQ_INT(d->peak, 1192); /* three kept blocks and step 5's temporary */
    CHECK_EQ_INT(d->peak_ts, 410 * US);
    CHECK_EQ_INT(m.steps[d->peak_step].number, 5);
    CHECK_EQ_INT(d->alloc_end, 192);

    tl_error err = {{0}};
    tl_table *tab = tl_view_memory(&t, NULL, &err);
    const tl_table *leaks = fx_table(tab, "memory_leaks");
    CHECK(leaks != NULL);
    if (leaks) {
        CHECK_STR(leaks->title, "Leaks");
        CHECK_EQ_INT(leaks->nrows, 1);
        CHECK_STR(fx_s(leaks, 0, "device"), "GPU0");
        CHECK_STR(fx_s(leaks, 0, "allocated_by"), "cache");
        CHECK_STR(fx_s(leaks, 0, "category"), "other");
        CHECK_EQ_INT(fx_i(leaks, 0, "blocks"), 3);
        CHECK_EQ_INT(fx_i(leaks, 0, "kept_bytes"), 192);
        CHECK_EQ_INT(fx_i(leaks, 0, "kept_per_step_bytes"), 64);
    }
    CHECK(has_note(tab, "GPU0: 64 B per step allocated and never freed in steps 2..4"));
    tl_table_free(tab);
    release(&t, &m);
}

TEST(no_leak_when_freed_too_few_steps_flat_or_falling)
{
    for (int v = ALL_FREED; v <= FALLS; v++) {
        tl_trace t;
        build_leak(&t, v);
        tl_mem m;
        if (computed(&t, &m) != 0)
            continue;
        const tl_mem_device *d = tl_mem_device_of(&m, 0);
        CHECK(d != NULL);
        if (d) {
            CHECK_EQ_INT(d->leak, 0);
            CHECK_EQ_INT(d->leak_first, -1);
            if (v == TWO_STEPS)
                CHECK(d->retained == NULL);
            if (v == FLAT) {
                CHECK_EQ_INT(d->retained[2], 64); /* kept, but the level did not grow */
                CHECK_EQ_INT(d->alloc_start, 192);
                CHECK_EQ_INT(d->alloc_end, 192);
            }
            if (v == FALLS) {
                CHECK_EQ_INT(d->retained[2], 64);
                CHECK_EQ_INT(d->alloc_start, 100);
                CHECK_EQ_INT(d->alloc_end, 192);
            }
        }
        tl_error err = {{0}};
        tl_table *tab = tl_view_memory(&t, NULL, &err);
        const tl_table *leaks = fx_table(tab, "memory_leaks");
        CHECK(leaks && leaks->nrows == 0);
        CHECK(has_note(leaks, v == TWO_STEPS ? "Needs three steps" : "None: no step keeps"));
        tl_table_free(tab);
        release(&t, &m);
    }
}

/* ---- 9. what is alive when, the layout tree, groups --------------------------------------- */

/* Many records on two threads and two devices, inside nested operators, with labels, frees
 * and reuse: enough that tl_mem_compute finds the owners in a thread of its own beside the
 * replay when it may use threads. */
static void build_many(tl_trace *t, int threads)
{
    uint32_t th[2];
    th[0] = new_trace(t, TL_SRC_KINETO);
    th[1] = tl_trace_track(t, TL_TRACK_THREAD, 1, 2, -1);
    t->read_threads = threads;
    for (int s = 0; s < 4; s++)
        step_ev(t, th[0], s, s * 100000 * US, 100000 * US);
    static const char *const outer[] = {"aten::linear", "aten::conv2d", "aten::add"};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 4000; i++) {
            int64_t at = (int64_t)i * 100 * US + k * 7 * US;
            fx_ev(t, th[k], TL_CAT_OPERATOR, outer[i % 3], at, 60 * US);
            fx_ev(t, th[k], TL_CAT_OPERATOR, "aten::empty", at + 10 * US, 20 * US);
        }
    for (int i = 0; i < 60000; i++) {
        int k = i % 2;
        int64_t at = (int64_t)(i / 2) * 13 * US + k * US; /* in and between the operators */
        int32_t dev = i % 5 == 0 ? -1 : 0;
        uint64_t addr = 0x10000 + (uint64_t)(i % 700) * 0x100;
        if (i % 97 == 0)
            rec_as(t, th[k], dev, at, 256, addr, TL_MEM_LABEL, TL_MEM_PARAMETER, "w");
        else
            rec_tot(t, th[k], dev, at, i % 3 == 2 ? -256 : 256, addr, 1000000 + i % 4096 * 256,
                    8 * MIB);
    }
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(owners_found_beside_the_replay_are_the_same)
{
    tl_trace a;
    build_many(&a, 1);
    tl_mem ma;
    if (computed(&a, &ma) != 0)
        return;
    size_t owned = 0, later = 0;
    for (size_t i = 0; i < ma.nblocks; i++) {
        owned += ma.blocks[i].owner >= 0;
        later += ma.blocks[i].owner < TL_NONE;
    }
    CHECK(ma.nblocks > 10000);
    CHECK(owned > 1000 && owned < ma.nblocks); /* some between the operators */
    CHECK_EQ_INT(later, 0);
    CHECK(ma.nops >= 4);
    static const int threads[] = {2, 4};
    for (size_t k = 0; k < sizeof threads / sizeof *threads; k++) {
        tl_trace b;
        build_many(&b, threads[k]);
        tl_mem mb;
        if (computed(&b, &mb) != 0)
            break;
        CHECK(mb.nblocks == ma.nblocks &&
              memcmp(mb.blocks, ma.blocks, ma.nblocks * sizeof *ma.blocks) == 0);
        CHECK(mb.nops == ma.nops && memcmp(mb.ops, ma.ops, ma.nops * sizeof *ma.ops) == 0);
        CHECK_EQ_INT(mb.ndev, ma.ndev);
        for (size_t d = 0; d < ma.ndev && mb.ndev == ma.ndev; d++) {
            const tl_mem_device *x = &ma.dev[d], *y = &mb.dev[d];
            CHECK(x->device == y->device && x->peak == y->peak && x->peak_pos == y->peak_pos &&
                  x->allocs == y->allocs && x->frees == y->frees && x->nseries == y->nseries);
            CHECK(x->nseries == y->nseries &&
                  memcmp(x->series, y->series, x->nseries * sizeof *x->series) == 0);
        }
        CHECK(mb.unowned == ma.unowned && mb.reused == ma.reused && mb.unmatched == ma.unmatched &&
              mb.labels_lost == ma.labels_lost);
        release(&b, &mb);
    }
    release(&a, &ma);
}

TEST(alive_at_and_pos_at)
{
    tl_trace t;
    build_live(&t);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    CHECK(tl_mem_pos_at(&t, -1) == SIZE_MAX);
    CHECK_EQ_INT(tl_mem_pos_at(&t, 0), 1); /* the last of the two records at 0 */
    CHECK_EQ_INT(tl_mem_pos_at(&t, 20 * US), 2);
    CHECK_EQ_INT(tl_mem_pos_at(&t, 27 * US), 3);
    CHECK_EQ_INT(tl_mem_pos_at(&t, 1000 * US), 9);
    const size_t pos[5] = {SIZE_MAX, 1, 2, 6, 9};
    int64_t out[5][TL_MEM_CAT_COUNT];
    CHECK_EQ_INT(tl_mem_alive_at(&m, tl_mem_device_of(&m, 0), pos, 5, out), 0);
    static const int64_t want[5][TL_MEM_CAT_COUNT] = {
        /* other, parameter, gradient, optimizer_state, activation, input, temporary */
        {0, 0, 0, 0, 0, 0, 0},        {0, 1200, 0, 300, 0, 0, 0}, /* the labelled parameter is alive
                                                                     since the start */
        {0, 1200, 0, 300, 400, 0, 0}, {0, 1200, 100, 300, 400, 0, 0}, {0, 1200, 100, 300, 0, 0, 0},
    };
    for (int q = 0; q < 5; q++)
        for (int c = 0; c < TL_MEM_CAT_COUNT; c++)
            CHECK_EQ_INT(out[q][c], want[q][c]);
    release(&t, &m);
}

/* The tree in pre-order as "path layer/total;" from node k down. */
static void tree_text(const tl_mem_tree *l, size_t k, char *path, size_t plen, char *out,
                      size_t cap)
{
    for (size_t c = l->n[k].first; c; c = l->n[c].next) {
        size_t n = tl_mem_tree_path(l, c, path, plen, 256);
        size_t used = strlen(out);
        snprintf(out + used, cap - used, "%s %lld/%lld;", path, (long long)l->n[c].layer,
                 (long long)l->n[c].total);
        tree_text(l, c, path, n, out, cap);
    }
}

TEST(layout_tree_totals_order_and_category_roots)
{
    tl_trace t;
    build_live(&t);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    const tl_mem_device *d = tl_mem_device_of(&m, 0);
    tl_mem_tree l;
    char path[256], text[1024];
    /* named blocks alive at the peak, in the order of the blocks: layers.0.w (parameter,
     * 1000), layers.0.out (activation, 400), layers.1.w (parameter, 200, the label's),
     * layers.0.w (gradient, 100); the unnamed optimizer state is not in it */
    CHECK_EQ_INT(tl_mem_tree_build(&t, &m, d, -1, &l), 0);
    CHECK_EQ_INT(l.n[0].total, 1700);
    CHECK_EQ_INT(l.n[0].layer, 0);
    path[0] = text[0] = 0;
    tree_text(&l, 0, path, 0, text, sizeof text);
    CHECK_STR(text, "parameter 0/1200;parameter.layers 0/1200;parameter.layers.0 0/1000;"
                    "parameter.layers.0.w 1000/1000;parameter.layers.1 0/200;"
                    "parameter.layers.1.w 200/200;gradient 0/100;gradient.layers 0/100;"
                    "gradient.layers.0 0/100;gradient.layers.0.w 100/100;activation 0/400;"
                    "activation.layers 0/400;activation.layers.0 0/400;"
                    "activation.layers.0.out 400/400;");
    tl_mem_tree_free(&l);

    CHECK_EQ_INT(tl_mem_tree_build(&t, &m, d, TL_MEM_PARAMETER, &l), 0);
    CHECK_EQ_INT(l.n[0].total, 1200);
    path[0] = text[0] = 0;
    tree_text(&l, 0, path, 0, text, sizeof text);
    CHECK_STR(text, "layers 0/1200;layers.0 0/1000;layers.0.w 1000/1000;layers.1 0/200;"
                    "layers.1.w 200/200;");
    /* a path cut to fit: "layers" + "." + "0" in 8 bytes */
    char small[8] = "layers";
    size_t k = l.n[l.n[0].first].first; /* layers.0 */
    CHECK_EQ_INT(tl_mem_tree_path(&l, k, small, 6, sizeof small), 7);
    CHECK_STR(small, "layers.");
    tl_mem_tree_free(&l);

    CHECK_EQ_INT(tl_mem_tree_build(&t, &m, d, TL_MEM_TEMPORARY, &l), 0);
    CHECK_EQ_INT(l.count, 1);
    CHECK_EQ_INT(l.n[0].total, 0);
    tl_mem_tree_free(&l);
    release(&t, &m);
}

/* A wide tree: 5000 parameters p<i>.w (i bytes each, i = 5000 down to 1) under one root, each
 * name twice (a gradient too): one node per name, in natural order (p2 before p10), and the sums
 * i(i+1)/2. */
TEST(layout_tree_wide)
{
    enum { N = 5000 };
    tl_trace t;
    uint32_t th = new_trace(&t, TL_SRC_TALLY);
    char name[32];
    for (int i = N; i >= 1; i--) {
        snprintf(name, sizeof name, "p%d.w", i);
        rec_as(&t, th, 0, 0, i, 0x1000 + 16 * (uint64_t)i, TL_MEM_LIVE, TL_MEM_PARAMETER, name);
        rec_as(&t, th, 0, 0, i, 0x100000 + 16 * (uint64_t)i, TL_MEM_LIVE, TL_MEM_GRADIENT, name);
    }
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    const tl_mem_device *d = tl_mem_device_of(&m, 0);
    tl_mem_tree l;
    CHECK(d != NULL);
    if (!d || tl_mem_tree_build(&t, &m, d, TL_MEM_PARAMETER, &l) != 0) {
        release(&t, &m);
        return;
    }
    CHECK_EQ_INT(l.count, 1 + 2 * N);
    CHECK_EQ_INT(l.n[0].total, (int64_t)N * (N + 1) / 2);
    int i = 1, ok = 1;
    char path[64];
    for (size_t c = l.n[0].first; c; c = l.n[c].next, i++) {
        snprintf(name, sizeof name, "p%d", i);
        tl_mem_tree_path(&l, c, path, 0, sizeof path);
        ok &= !strcmp(path, name) && l.n[c].total == i && l.n[c].layer == 0 &&
              l.n[l.n[c].first].layer == i;
    }
    CHECK(ok && i == N + 1);
    tl_mem_tree_free(&l);
    CHECK_EQ_INT(tl_mem_tree_build(&t, &m, d, -1, &l), 0);
    CHECK_EQ_INT(l.count, 1 + 2 * (1 + 2 * N)); /* parameter and gradient roots */
    CHECK_EQ_INT(l.n[0].total, (int64_t)N * (N + 1));
    tl_mem_tree_free(&l);
    release(&t, &m);
}

static int keep_all(const tl_mem_block *b, const void *arg)
{
    (void)b;
    (void)arg;
    return 1;
}

TEST(groups_by_owner_and_category)
{
    tl_trace t;
    build_live(&t);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    tl_mem_group *g = NULL;
    size_t n = 0;
    CHECK_EQ_INT(tl_mem_group_blocks(&t, &m, 0, keep_all, NULL, &g, &n), 0);
    /* (no owner, parameter) 1000 + 200; forward's activation 400; (no owner) optimizer state
     * 300; backward's gradient 100 and temporary 50 */
    CHECK_EQ_INT(n, 5);
    static const struct {
        const char *name;
        int cat;
        int64_t blocks, bytes;
    } want[5] = {{"<unknown>", TL_MEM_PARAMETER, 2, 1200},
                 {"forward", TL_MEM_ACTIVATION, 1, 400},
                 {"<unknown>", TL_MEM_OPTIMIZER_STATE, 1, 300},
                 {"backward", TL_MEM_GRADIENT, 1, 100},
                 {"backward", TL_MEM_TEMPORARY, 1, 50}};
    char buf[128];
    for (size_t i = 0; i < n && i < 5; i++) {
        tl_mem_group_name(&t, &g[i], buf, sizeof buf);
        CHECK_STR(buf, want[i].name);
        CHECK_EQ_INT(g[i].category, want[i].cat);
        CHECK_EQ_INT(g[i].blocks, want[i].blocks);
        CHECK_EQ_INT(g[i].bytes, want[i].bytes);
    }
    free(g);
    release(&t, &m);

    /* aten::empty is PyTorch's malloc: its blocks are named by the operator that called it */
    build_ops(&t);
    if (computed(&t, &m) != 0)
        return;
    CHECK_EQ_INT(tl_mem_group_blocks(&t, &m, 0, keep_all, NULL, &g, &n), 0);
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        tl_mem_group_name(&t, &g[i], buf, sizeof buf);
        if (!strcmp(buf, "aten::sum (aten::empty)")) {
            CHECK_EQ_INT(g[i].bytes, 256);
            CHECK(i == 0); /* the largest */
            seen |= 1;
        } else if (!strcmp(buf, "aten::empty_strided")) {
            seen |= 2; /* under no operator: its own name */
        } else if (!strcmp(buf, "<unknown>")) {
            CHECK_EQ_INT(g[i].blocks, 4); /* 300, 410, 850, 950 */
            CHECK_EQ_INT(g[i].bytes, 11);
            seen |= 4;
        }
        if (i > 0)
            CHECK(g[i - 1].bytes >= g[i].bytes);
    }
    CHECK_EQ_INT(seen, 7);
    free(g);
    release(&t, &m);
}

/* Groups of equal size come in the order of their owners' names, whatever ids the reader gave
 * those names (a .tally file and its JSON export intern them in other orders). */
TEST(equal_groups_in_name_order)
{
    for (int order = 0; order < 2; order++) {
        tl_trace t;
        uint32_t th = new_trace(&t, TL_SRC_TALLY);
        static const char *const names[2] = {"zeta_block", "alpha_block"};
        for (int k = 0; k < 2; k++) /* interned in either order */
            tl_intern(&t.strings, names[k ^ order], strlen(names[k ^ order]));
        for (int k = 0; k < 2; k++) {
            fx_ev(&t, th, TL_CAT_USER, names[k], 100 + 100 * k, 50);
            rec(&t, th, 0, 110 + 100 * k, 4096, 0x1000 + 0x1000 * (uint64_t)k);
        }
        tl_mem m;
        if (computed(&t, &m) != 0)
            return;
        tl_mem_group *g = NULL;
        size_t n = 0;
        CHECK_EQ_INT(tl_mem_group_blocks(&t, &m, 0, keep_all, NULL, &g, &n), 0);
        char buf[128];
        CHECK_EQ_INT(n, 2);
        for (size_t i = 0; i < n && i < 2; i++) {
            tl_mem_group_name(&t, &g[i], buf, sizeof buf);
            CHECK_STR(buf, names[1 - i]);
        }
        free(g);
        release(&t, &m);
    }
}

/* ---- 10. the view ------------------------------------------------------------------------- */

static int chain_is(const tl_table *tab, const char *const *titles, int n)
{
    int i = 0;
    for (; tab; tab = tab->next, i++)
        if (i >= n || strcmp(tab->title, titles[i]) != 0) {
            fprintf(stderr, "table %d: \"%s\"\n", i, tab->title);
            return 0;
        }
    return i == n;
}

TEST(view_tables_and_cells)
{
    tl_trace t;
    build_totals(&t);
    tl_error err = {{0}};
    tl_table *tab = tl_view_memory(&t, NULL, &err);
    CHECK(tab != NULL);
    static const char *const kineto[] = {"Memory",
                                         "Memory timeline",
                                         "Memory at the peak",
                                         "Alive at the peak",
                                         "Memory by operator",
                                         "Leaks"};
    CHECK(chain_is(tab, kineto, 6));
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 3);
        CHECK_STR(fx_s(tab, 0, "device"), "CPU");
        CHECK_STR(fx_s(tab, 1, "device"), "GPU0");
        CHECK_STR(fx_s(tab, 2, "device"), "GPU1");
        CHECK_EQ_INT(fx_i(tab, 1, "peak_allocated_bytes"), 1800);
        CHECK_EQ_INT(fx_i(tab, 1, "peak_at_us"), 110 * US);
        CHECK_EQ_INT(fx_i(tab, 1, "peak_step"), 2);
        CHECK_EQ_INT(fx_i(tab, 1, "reserved_at_peak_bytes"), 4096);
        CHECK_EQ_INT(fx_i(tab, 1, "peak_reserved_bytes"), 4096);
        CHECK_EQ_INT(fx_i(tab, 1, "allocated_start_bytes"), 1000);
        CHECK_EQ_INT(fx_i(tab, 1, "allocated_end_bytes"), 1200);
        CHECK_EQ_INT(fx_i(tab, 1, "reserved_start_bytes"), 2048);
        CHECK_EQ_INT(fx_i(tab, 1, "allocs"), 3);
        CHECK_EQ_INT(fx_i(tab, 1, "frees"), 2);
        CHECK(!fx_cell(tab, 0, "reserved_at_peak_bytes")->set); /* CPU: unknown */
        CHECK_EQ_INT(fx_i(tab, 0, "peak_allocated_bytes"), 24);
        CHECK(has_note(tab, "GPU0: at the peak 2.24 KB reserved by the allocator was not "
                            "allocated (56% of reserved"));
        const tl_table *pk = fx_table(tab, "memory_peak");
        int r = row2(pk, "device", "GPU0", "category", "(before recording / no address)");
        CHECK_EQ_INT(fx_i(pk, r, "bytes"), 1000);
        r = row2(pk, "device", "GPU0", "category", "other");
        CHECK_EQ_INT(fx_i(pk, r, "bytes"), 800);
        CHECK_NEAR(fx_d(pk, r, "of_peak_pct"), 100.0 * 800 / 1800, 1e-9);
        const tl_table *ow = fx_table(tab, "memory_peak_owners");
        r = row2(ow, "device", "GPU0", "allocated_by", "aten::empty");
        CHECK_EQ_INT(fx_i(ow, r, "bytes"), 300);
        r = row2(ow, "device", "GPU0", "allocated_by", "<unknown>");
        CHECK_EQ_INT(fx_i(ow, r, "bytes"), 500);
        const tl_table *ops = fx_table(tab, "memory_ops");
        r = row2(ops, "device", "GPU1", "name", "aten::empty");
        CHECK_EQ_INT(fx_i(ops, r, "increase_bytes"), 0);
        CHECK_EQ_INT(fx_i(ops, r, "allocated_bytes"), 64);
        CHECK_EQ_INT(fx_i(ops, r, "freed_bytes"), 64);
        CHECK(has_note(ops, "5 records belong to no operator"));
        const tl_table *tl = fx_table(tab, "memory_timeline");
        CHECK(tl && tl->nrows == 3);
        r = fx_row(tl, "device", "GPU0");
        CHECK_EQ_INT(fx_i(tl, r, "low_bytes"), 1000);
        CHECK_EQ_INT(fx_i(tl, r, "high_bytes"), 1800);
    }
    tl_table_free(tab);

    /* every point of the timeline; one device */
    tl_view_opts o;
    memset(&o, 0, sizeof o);
    o.series = 1;
    tab = tl_view_memory(&t, &o, &err);
    const tl_table *tl = fx_table(tab, "memory_timeline");
    CHECK(tl && tl->nrows == 10);
    if (tl && tl->nrows == 10) {
        CHECK_STR(fx_s(tl, 3, "device"), "GPU0"); /* CPU's 3 first, then GPU0's 5 */
        CHECK_EQ_INT(fx_i(tl, 5, "time_us"), 110 * US);
        CHECK_EQ_INT(fx_i(tl, 5, "allocated_bytes"), 1800);
        CHECK_EQ_INT(fx_i(tl, 5, "reserved_bytes"), 4096);
        CHECK(!fx_cell(tl, 0, "reserved_bytes")->set);
    }
    tl_table_free(tab);
    o.series = 0;
    o.device_set = 1;
    o.device = 1;
    tab = tl_view_memory(&t, &o, &err);
    CHECK(tab && tab->nrows == 1 && !strcmp(fx_s(tab, 0, "device"), "GPU1"));
    const tl_table *ops = fx_table(tab, "memory_ops");
    CHECK(ops && ops->nrows == 1 && !strcmp(fx_s(ops, 0, "device"), "GPU1"));
    tl_table_free(tab);
    tl_trace_free(&t);

    /* tally's trace with names: the layout tree; ranges */
    build_live(&t);
    tab = tl_view_memory(&t, NULL, &err);
    static const char *const tally[] = {"Memory",
                                        "Memory timeline",
                                        "Memory at the peak",
                                        "Layout at the peak",
                                        "Alive at the peak",
                                        "Memory by range",
                                        "Leaks"};
    CHECK(chain_is(tab, tally, 7));
    /* text: three levels (category and two components) of the 14 nodes: parameter, layers, 0,
     * 1; activation, layers, 0; gradient, layers, 0 */
    const tl_table *lay = fx_table(tab, "memory_layout");
    CHECK(lay && lay->nrows == 10);
    CHECK_EQ_INT(fx_row(lay, "layer", "parameter.layers.0.w"), -1);
    int r = fx_row(lay, "layer", "parameter.layers.1");
    CHECK_EQ_INT(fx_i(lay, r, "total_bytes"), 200);
    r = fx_row(lay, "layer", "parameter");
    CHECK_EQ_INT(fx_i(lay, r, "total_bytes"), 1200);
    /* the peak's categories, 1200 + 300 + 400 + 100, exceed the level (1800) by the 200 B of
     * the block labelled with its size, allocated before the count began */
    const tl_table *pk = fx_table(tab, "memory_peak");
    CHECK_EQ_INT(fx_i(pk, fx_row(pk, "category", "parameter"), "bytes"), 1200);
    CHECK_EQ_INT(fx_row(pk, "category", "(before recording / no address)"), -1);
    CHECK(has_note(pk, "GPU0: the categories exceed the allocator's level by 200 B"));
    tl_table_free(tab);
    /* csv and json: every level */
    o.series = 1;
    o.device_set = 0;
    tab = tl_view_memory(&t, &o, &err);
    lay = fx_table(tab, "memory_layout");
    CHECK(lay && lay->nrows == 14);
    r = fx_row(lay, "layer", "parameter.layers.0.w");
    CHECK(r >= 0);
    CHECK_EQ_INT(fx_i(lay, r, "layer_bytes"), 1000);
    CHECK_EQ_INT(fx_i(lay, r, "total_bytes"), 1000);
    tl_table_free(tab);
    /* the short form: the devices and the peak (no leak to show) */
    o.series = 0;
    o.brief = 1;
    tab = tl_view_memory(&t, &o, &err);
    static const char *const brief[] = {"Memory", "Memory at the peak"};
    CHECK(chain_is(tab, brief, 2));
    tl_table_free(tab);
    tl_trace_free(&t);

    /* no timeline: the devices table and the operators only */
    build_bare(&t);
    tab = tl_view_memory(&t, NULL, &err);
    static const char *const bare[] = {"Memory", "Memory by operator"};
    CHECK(chain_is(tab, bare, 2));
    CHECK(tab && tab->nrows == 1 && !fx_cell(tab, 0, "peak_allocated_bytes")->set);
    CHECK(tab && fx_i(tab, 0, "allocs") == 2);
    CHECK(has_note(tab, "Devices without a peak"));
    tl_table_free(tab);
    tl_trace_free(&t);

    /* no memory events at all */
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::mm", 0, 10 * US);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tab = tl_view_memory(&t, NULL, &err);
    CHECK(tab && !tab->next && tab->nrows == 0);
    CHECK(has_note(tab, "No memory events in this trace"));
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* ---- 11. the JSON reader -------------------------------------------------------------------- */

static const char kineto_json[] =
    "{\"schemaVersion\": 1, \"traceEvents\": [\n"
    " {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::empty\", \"pid\": 1, \"tid\": 1, "
    "\"ts\": 100, \"dur\": 10},\n"
    " {\"ph\": \"i\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": 105, "
    "\"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": 140000000000000, \"Bytes\": 512, "
    "\"Total Allocated\": 1536, \"Total Reserved\": 2097152}},\n"
    " {\"ph\": \"i\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": 120, "
    "\"args\": {\"Device Type\": 0, \"Device Id\": -1, \"Addr\": 94000000, \"Bytes\": 64, "
    "\"Total Allocated\": 64, \"Total Reserved\": 0}},\n"
    " {\"ph\": \"i\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": 130, "
    "\"args\": {\"Device Type\": 1, \"Device Id\": 1, \"Addr\": 140000000001000, \"Bytes\": "
    "-512, \"Total Allocated\": 0, \"Total Reserved\": 2097152}},\n"
    " {\"name\": \"[memory]\", \"pid\": 1, \"tid\": 2, \"ts\": 140, \"ph\": \"i\", \"cat\": "
    "\"ReservedAllocate\", \"args\": {\"place\": \"Place(gpu:1)\", \"addr\": \"0x7f0000001000\", "
    "\"increase_bytes\": 4194304, \"current_allocated\": 0, \"current_reserved\": 4194304, "
    "\"peak_allocated\": 0, \"peak_reserved\": 4194304}},\n"
    " {\"name\": \"[memory]\", \"pid\": 1, \"tid\": 2, \"ts\": 141, \"ph\": \"i\", \"cat\": "
    "\"Allocate\", \"args\": {\"place\": \"Place(gpu:1)\", \"addr\": \"0x7F0000001000\", "
    "\"increase_bytes\": 1024, \"current_allocated\": 1024, \"current_reserved\": 4194304}},\n"
    " {\"name\": \"[memory]\", \"pid\": 1, \"tid\": 2, \"ts\": 142, \"ph\": \"i\", \"cat\": "
    "\"Free\", \"args\": {\"place\": \"Place(cpu)\", \"addr\": \"0x5500\", \"increase_bytes\": "
    "-16, \"current_allocated\": 0, \"current_reserved\": 0}}\n"
    "]}";

TEST(json_reader_memory_events)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_json_mem(&t, kineto_json, strlen(kineto_json), "m.json", &err), 0);
    if (err.msg[0])
        fprintf(stderr, "%s\n", err.msg);
    CHECK_EQ_INT(t.nmem, 6);
    CHECK_EQ_INT(t.mem_addr_known, 1);
    CHECK_EQ_INT(t.mem_totals_known, 1);
    if (t.nmem == 6) {
        const tl_memev *m = t.mem;
        CHECK_EQ_INT(m[0].ts, 105000);
        CHECK_EQ_INT(m[0].device, 0);
        CHECK_EQ_INT(m[0].bytes, 512);
        CHECK(m[0].addr == UINT64_C(140000000000000));
        CHECK_EQ_INT(m[0].total_allocated, 1536);
        CHECK_EQ_INT(m[0].total_reserved, 2097152);
        CHECK_EQ_INT(m[0].flags, 0);
        CHECK_EQ_INT(m[1].device, -1); /* Device Type 0: the host */
        CHECK_EQ_INT(m[1].total_reserved, 0);
        CHECK_EQ_INT(m[2].device, 1);
        CHECK_EQ_INT(m[2].bytes, -512);
        CHECK_EQ_INT(m[2].total_allocated, 0);
        CHECK_EQ_INT(m[3].device, 1); /* Place(gpu:1) */
        CHECK(m[3].flags & TL_MEM_RESERVE);
        CHECK(m[3].addr == UINT64_C(0x7f0000001000));
        CHECK_EQ_INT(m[3].bytes, 4194304);
        CHECK_EQ_INT(m[3].total_reserved, 4194304);
        CHECK(!(m[4].flags & TL_MEM_RESERVE));
        CHECK(m[4].addr == UINT64_C(0x7f0000001000));
        CHECK_EQ_INT(m[4].total_allocated, 1024);
        CHECK_EQ_INT(m[5].device, -1); /* Place(cpu) */
        CHECK(m[5].addr == 0x5500);
        CHECK_EQ_INT(m[5].bytes, -16);
        CHECK(m[0].track != m[3].track); /* tid 1 and tid 2 */
    }
    /* and through the analysis: three devices; GPU1's reservation is no allocation */
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    CHECK_EQ_INT(m.ndev, 3);
    const tl_mem_device *g1 = tl_mem_device_of(&m, 1);
    CHECK(g1 != NULL);
    if (g1) {
        CHECK_EQ_INT(g1->peak, 1024);
        CHECK_EQ_INT(g1->peak_res, 4194304);
        CHECK_EQ_INT(g1->allocs, 1);
        CHECK_EQ_INT(g1->frees, 1);
        CHECK_EQ_INT(g1->alloc_start, 512);
    }
    CHECK_OP(&t, &m, 0, "aten::empty", 1, 1, 512, 0, 1, 512, 0);
    CHECK_EQ_INT(m.unmatched, 2); /* the frees of blocks allocated before */
    release(&t, &m);
}

/* An address that is not one: ignored (0) or a one-line error, never a crash. Sizes that no
 * allocator has (a Bytes of -1e300 reads as INT64_MIN) go through the analysis without
 * overflowing. */
TEST(json_reader_bad_addresses_and_sizes)
{
    static const char *const addrs[] = {"\"zzz\"", "\"0x\"",  "\"0xfffffffffffffffffffff\"",
                                        "-5",      "1e300",   "\"\"",
                                        "{}",      "[1]",     "true",
                                        "null",    "\"0xg1\""};
    for (size_t i = 0; i < sizeof addrs / sizeof *addrs; i++) {
        char json[512];
        snprintf(json, sizeof json,
                 "[{\"ph\": \"i\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, "
                 "\"ts\": 1, \"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": %s, "
                 "\"Bytes\": 8}}]",
                 addrs[i]);
        tl_trace t;
        tl_trace_init(&t);
        tl_error err = {{0}};
        int rc = tl_read_json_mem(&t, json, strlen(json), "a.json", &err);
        CHECK(rc == 0 || rc == -1);
        if (rc == 0) {
            CHECK_EQ_INT(t.nmem, 1);
            tl_table *tab = tl_view_memory(&t, NULL, &err);
            CHECK(tab != NULL);
            tl_table_free(tab);
        } else {
            CHECK(!strncmp(err.msg, "a.json:1:", 9) && !strchr(err.msg, '\n'));
        }
        tl_trace_free(&t);
    }

    static const char sizes[] =
        "[{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::empty\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": 0, \"dur\": 100},\n"
        " {\"ph\": \"i\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": "
        "10, "
        "\"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": 16, \"Bytes\": -1e300}},\n"
        " {\"ph\": \"i\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": "
        "20, "
        "\"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": 32, \"Bytes\": 1e300, "
        "\"Total Allocated\": 1e300, \"Total Reserved\": -1e300}},\n"
        " {\"ph\": \"i\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": "
        "30, "
        "\"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": 48, \"Bytes\": 1e300}},\n"
        " {\"ph\": \"i\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 1, \"tid\": 1, \"ts\": "
        "40, "
        "\"args\": {\"Device Type\": 1, \"Device Id\": 0, \"Addr\": 16, \"Bytes\": -1e300}}]";
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_json_mem(&t, sizes, strlen(sizes), "s.json", &err), 0);
    CHECK_EQ_INT(t.nmem, 4);
    tl_table *tab = tl_view_memory(&t, NULL, &err);
    CHECK(tab != NULL);
    tl_table_free(tab);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    /* sums saturate */
    const tl_mem_device *g = tl_mem_device_of(&m, 0);
    CHECK(g && g->alloc_bytes == INT64_MAX && g->freed_bytes == INT64_MAX);
    CHECK_EQ_INT(m.unmatched, 2);
    CHECK_OP(&t, &m, 0, "aten::empty", 1, 2, INT64_MAX, INT64_MAX, 2, INT64_MAX, INT64_MAX);
    FILE *f = fopen("/dev/null", "w");
    const tl_mem_device *d = tl_mem_main_device(&m);
    if (f && d)
        CHECK_EQ_INT(tl_memory_log_write(f, &t, &m, d, &err), 0);
    if (f)
        fclose(f);
    release(&t, &m);
}

/* ---- 12. InternLM's memory.log -------------------------------------------------------------- */

/*
 * GPU0 in a tally trace, steps [0, 1 s) and [1 s, 2 s). The live set: parameters layers.0.w
 * (2 MB), layers.0 (0.25 MB: a node with bytes of its own and children), layers.0.b (1 MB),
 * head (0.5 MB). At 0.5 s a gradient layers.0.w (2 MB), at 0.8 s optimizer state
 * state.0.exp_avg (1 MB), at 1.2 s an activation layers.0.out (3 MB, freed at 1.5 s: the peak),
 * at 1.7 s an unnamed temporary (0.125 MB, freed at 1.8 s), and at 0.9 s a block without a
 * category (0.5 MB, never freed): InternLM's activation_memory is what the level holds beyond
 * parameters, gradients and optimizer state, so it counts there, not in the layout. MB = 2^20
 * bytes.
 */
TEST(memory_log_internlm_format)
{
    tl_trace t;
    uint32_t th = new_trace(&t, TL_SRC_TALLY);
    const int64_t S = 1000000000LL;
    step_ev(&t, th, 0, 0, S);
    step_ev(&t, th, 1, S, S);
    rec_as(&t, th, 0, 0, 2 * MIB, 0x10, TL_MEM_LIVE, TL_MEM_PARAMETER, "layers.0.w");
    rec_as(&t, th, 0, 0, MIB / 4, 0x18, TL_MEM_LIVE, TL_MEM_PARAMETER, "layers.0");
    rec_as(&t, th, 0, 0, MIB, 0x20, TL_MEM_LIVE, TL_MEM_PARAMETER, "layers.0.b");
    rec_as(&t, th, 0, 0, MIB / 2, 0x28, TL_MEM_LIVE, TL_MEM_PARAMETER, "head");
    rec_as(&t, th, 0, S / 2, 2 * MIB, 0x30, 0, TL_MEM_GRADIENT, "layers.0.w");
    rec_as(&t, th, 0, 8 * S / 10, MIB, 0x40, 0, TL_MEM_OPTIMIZER_STATE, "state.0.exp_avg");
    rec(&t, th, 0, 9 * S / 10, MIB / 2, 0x70);
    rec_as(&t, th, 0, 12 * S / 10, 3 * MIB, 0x50, 0, TL_MEM_ACTIVATION, "layers.0.out");
    rec(&t, th, 0, 15 * S / 10, -3 * MIB, 0x50);
    rec_as(&t, th, 0, 17 * S / 10, MIB / 8, 0x60, 0, TL_MEM_TEMPORARY, NULL);
    rec(&t, th, 0, 18 * S / 10, -MIB / 8, 0x60);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_mem m;
    if (computed(&t, &m) != 0)
        return;
    const tl_mem_device *d = tl_mem_main_device(&m);
    CHECK(d && d->device == 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    if (!d || !f) {
        if (f)
            fclose(f);
        free(text);
        release(&t, &m);
        return;
    }
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_memory_log_write(f, &t, &m, d, &err), 0);
    fclose(f);
    const char *summary_end =
        "params_memory: 3.75 MB, grads_memory: 2.00 MB, os_params_memory: 0.00 MB, "
        "os_state_memory: 1.00 MB, activation_memory: 0.50 MB\n\n";
    char want[4096];
    snprintf(want, sizeof want,
             "Memory State:\ntime: 1.0\n---summary---\ntotal_memory: 7.25 MB\n%s"
             "Memory State:\ntime: 1.2\n---summary---\ntotal_memory: 10.25 MB\n"
             "params_memory: 3.75 MB, grads_memory: 2.00 MB, os_params_memory: 0.00 MB, "
             "os_state_memory: 1.00 MB, activation_memory: 3.50 MB\n"
             "---Layout---\n"
             "params_layout:\n"
             "layer: param_mem, layer_mem: 0.00 MB, total_mem: 3.75 MB\n"
             "layer: param_mem.head, layer_mem: 0.50 MB, total_mem: 0.50 MB\n"
             "layer: param_mem.layers, layer_mem: 0.00 MB, total_mem: 3.25 MB\n"
             "layer: param_mem.layers.0, layer_mem: 0.25 MB, total_mem: 3.25 MB\n"
             "layer: param_mem.layers.0.b, layer_mem: 1.00 MB, total_mem: 1.00 MB\n"
             "layer: param_mem.layers.0.w, layer_mem: 2.00 MB, total_mem: 2.00 MB\n"
             "grads_layout:\n"
             "layer: grad_mem, layer_mem: 0.00 MB, total_mem: 2.00 MB\n"
             "layer: grad_mem.layers, layer_mem: 0.00 MB, total_mem: 2.00 MB\n"
             "layer: grad_mem.layers.0, layer_mem: 0.00 MB, total_mem: 2.00 MB\n"
             "layer: grad_mem.layers.0.w, layer_mem: 2.00 MB, total_mem: 2.00 MB\n"
             "os_params_layout:\n"
             "layer: os_params_mem, layer_mem: 0.00 MB, total_mem: 0.00 MB\n"
             "os_state_layout:\n"
             "layer: os_state_mem, layer_mem: 0.00 MB, total_mem: 1.00 MB\n"
             "layer: os_state_mem.state, layer_mem: 0.00 MB, total_mem: 1.00 MB\n"
             "layer: os_state_mem.state.0, layer_mem: 0.00 MB, total_mem: 1.00 MB\n"
             "layer: os_state_mem.state.0.exp_avg, layer_mem: 1.00 MB, total_mem: 1.00 MB\n"
             "activation_base_layout:\n"
             "layer: activations_0, layer_mem: 0.00 MB, total_mem: 3.00 MB\n"
             "layer: activations_0.layers, layer_mem: 0.00 MB, total_mem: 3.00 MB\n"
             "layer: activations_0.layers.0, layer_mem: 0.00 MB, total_mem: 3.00 MB\n"
             "layer: activations_0.layers.0.out, layer_mem: 3.00 MB, total_mem: 3.00 MB\n"
             "\n"
             "Memory State:\ntime: 2.0\n---summary---\ntotal_memory: 7.25 MB\n%s",
             summary_end, summary_end);
    CHECK_STR(text, want);
    CHECK_EQ_INT(len, strlen(want));
    free(text);
    release(&t, &m);
}

int main(void)
{
    RUN(totals_give_peak_step_reserved_and_levels_per_device);
    RUN(live_set_and_labels_without_totals);
    RUN(others_are_activations_and_label_after_a_free);
    RUN(no_totals_no_addresses_no_timeline_but_operators);
    RUN(operators_self_total_calls_and_merge_as_tensorboard);
    RUN(duplicate_merge_chains_and_siblings);
    RUN(python_frame_inside_an_operator_owns_nothing);
    RUN(ranges_own_their_records_and_cupti_records_their_calls);
    RUN(bad_records_are_counted);
    RUN(leak_kept_step_after_step);
    RUN(no_leak_when_freed_too_few_steps_flat_or_falling);
    RUN(alive_at_and_pos_at);
    RUN(owners_found_beside_the_replay_are_the_same);
    RUN(layout_tree_totals_order_and_category_roots);
    RUN(layout_tree_wide);
    RUN(groups_by_owner_and_category);
    RUN(equal_groups_in_name_order);
    RUN(view_tables_and_cells);
    RUN(json_reader_memory_events);
    RUN(json_reader_bad_addresses_and_sizes);
    RUN(memory_log_internlm_format);
    return test_summary();
}
