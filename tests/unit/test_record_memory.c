/*
 * test_record_memory.c — tally_alloc / tally_free: what reaches the file, by construction.
 *
 * A parameter allocated before tally_start is in the window's file as a block live at its start;
 * allocations and frees inside the window carry their sizes, devices, categories and names; a
 * free of an unknown address and an allocation at a live address are counted, in the stats and
 * in the file, and recorded as nothing; windows of a schedule each begin with the live set.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "analysis/memory.h"
#include "record/format.h"
#include "record/recorder.h"
#include "record_test_util.h"
#include "testlib.h"
#include "trace/model.h"
#include <tally.h>

static char dir[256];
static char paths[4][512];
static int npaths;

static void on_ready(const tally_window *w, void *user)
{
    (void)user;
    if (npaths < 4)
        snprintf(paths[npaths++], sizeof paths[0], "%s", w->path);
}

static const tl_memev *find_mem(const tl_trace *t, const char *name, int64_t bytes)
{
    for (size_t i = 0; i < t->nmem; i++)
        if (t->mem[i].bytes == bytes && !strcmp(tl_str(&t->strings, t->mem[i].name), name))
            return &t->mem[i];
    return NULL;
}

static int64_t memory_event_sum(const tl_trace *t)
{
    int64_t s = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].cat == TL_CAT_MEMORY)
            s += t->ev[i].value;
    return s;
}

TEST(allocations_frees_and_the_live_set)
{
    static char weight[64], act[32], tmp[16], never[8];
    npaths = 0;
    tally_alloc(weight, 4096, -1, TALLY_MEM_PARAMETER, "layers.0.attn.wq.weight");
    tally_config c = bench_config(dir, "mem", on_ready);
    CHECK_EQ_INT(tally_start(&c), 0);
    TALLY_PUSH("forward", TALLY_FORWARD);
    tally_alloc(act, 1000, 0, TALLY_MEM_ACTIVATION, "layers.0.attn.scores");
    tally_alloc(tmp, 24, -1, TALLY_MEM_TEMPORARY, NULL);
    tally_free(tmp);
    TALLY_POP();
    tally_free(never);                                        /* never allocated: counted */
    tally_alloc(act, 2000, 0, TALLY_MEM_ACTIVATION, "again"); /* still live: counted */
    tally_free(act);
    tally_step(1);
    tally_stats st;
    tally_get_stats(&st);
    CHECK_EQ_INT(tally_stop(), 0);
    CHECK_EQ_INT(st.bad_frees, 1);
    CHECK_EQ_INT(st.reused_allocs, 1);
    CHECK_EQ_INT(npaths, 1);

    tl_trace t;
    if (record_load(&t, paths[0]) != 0)
        return;
    const tl_memev *m;
    CHECK((m = find_mem(&t, "layers.0.attn.wq.weight", 4096)) && (m->flags & TL_MEM_LIVE) &&
          m->category == TL_MEM_PARAMETER && m->device == -1 && m->addr == (uintptr_t)weight);
    CHECK((m = find_mem(&t, "layers.0.attn.scores", 1000)) && m->device == 0 &&
          m->category == TL_MEM_ACTIVATION && !(m->flags & TL_MEM_LIVE));
    CHECK((m = find_mem(&t, "", 24)) && m->category == TL_MEM_TEMPORARY);
    CHECK(find_mem(&t, "", -24) != NULL);       /* the free has the allocation's size */
    CHECK(find_mem(&t, "again", 2000) != NULL); /* recorded, and counted as reused */
    CHECK(find_mem(&t, "", -2000) != NULL);     /* the free of the second allocation */
    CHECK_EQ_INT(t.mem_unmatched_frees, 1);
    CHECK_EQ_INT(t.mem_reused, 1);
    for (size_t i = 1; i < t.nmem; i++)
        CHECK(t.mem[i - 1].ts <= t.mem[i].ts);
    /* the ops table's events: allocations and frees of the window, not the live set */
    CHECK_EQ_INT(memory_event_sum(&t), 1000 + 24 - 24 + 2000 - 2000);
    /* the temporary was made inside "forward": its events are within it */
    const tl_memev *a = find_mem(&t, "", 24);
    for (size_t i = 0; i < t.nev && a; i++)
        if (!strcmp(tl_str(&t.strings, t.ev[i].name), "forward"))
            CHECK(a->ts >= t.ev[i].ts && a->ts <= t.ev[i].ts + t.ev[i].dur);
    tl_trace_free(&t);
    tally_free(weight);
}

TEST(every_window_begins_with_the_live_set)
{
    static char p1[8], p2[8];
    npaths = 0;
    tally_alloc(p1, 100, -1, TALLY_MEM_PARAMETER, "p1");
    tally_config c = bench_config(dir, "memw", on_ready);
    c.active = 1; /* one window per step */
    c.repeat = 2;
    CHECK_EQ_INT(tally_start(&c), 0);
    tally_alloc(p2, 200, -1, TALLY_MEM_GRADIENT, "p2"); /* in window 0 */
    tally_step(1);
    tally_free(p1); /* in window 1 */
    tally_step(1);
    CHECK_EQ_INT(tally_stop(), 0);
    CHECK_EQ_INT(npaths, 2);
    tl_trace t;
    if (npaths == 2 && record_load(&t, paths[0]) == 0) {
        CHECK(find_mem(&t, "p1", 100) && (find_mem(&t, "p1", 100)->flags & TL_MEM_LIVE));
        CHECK(find_mem(&t, "p2", 200) && !(find_mem(&t, "p2", 200)->flags & TL_MEM_LIVE));
        tl_trace_free(&t);
    }
    if (npaths == 2 && record_load(&t, paths[1]) == 0) {
        /* window 1 begins with both blocks live, then p1 is freed */
        CHECK(find_mem(&t, "p1", 100) && (find_mem(&t, "p1", 100)->flags & TL_MEM_LIVE));
        CHECK(find_mem(&t, "p2", 200) && (find_mem(&t, "p2", 200)->flags & TL_MEM_LIVE));
        CHECK(find_mem(&t, "", -100) != NULL);
        tl_trace_free(&t);
    }
    tally_free(p2);
}

/* What the live table keeps of a block comes back whole, in the window's live set and in the
 * frees: a size of 1 PiB, a device id of 5000, a name a label added, a category a label changed,
 * also after the table grew (3000 blocks, every other one named). */
static const tl_memev *find_addr(const tl_trace *t, const void *p, int live)
{
    for (size_t i = 0; i < t->nmem; i++)
        if (t->mem[i].addr == (uintptr_t)p && !!(t->mem[i].flags & TL_MEM_LIVE) == live &&
            !(t->mem[i].flags & TL_MEM_LABEL))
            return &t->mem[i];
    return NULL;
}

TEST(the_table_keeps_each_block_whole)
{
    enum { MANY = 3000 };
    static char big[8], dev[8], host[8], lab[8], edge[8], many[MANY][8];
    const uint64_t huge = UINT64_C(1) << 50, edge_bytes = (UINT64_C(1) << 44) - 1;
    npaths = 0;
    tally_alloc(big, huge, 3, TALLY_MEM_ACTIVATION, NULL);
    tally_alloc(dev, 64, 5000, TALLY_MEM_INPUT, NULL);
    tally_alloc(host, 7, -1, TALLY_MEM_OTHER, NULL);
    tally_alloc(lab, 128, 1, TALLY_MEM_OTHER, NULL);
    tally_alloc(edge, edge_bytes, 4094, TALLY_MEM_PARAMETER, NULL);
    tally_label_memory(lab, 0, 1, TALLY_MEM_GRADIENT, "g.w");   /* gains a name */
    tally_label_memory(host, 0, -1, TALLY_MEM_TEMPORARY, NULL); /* a category only */
    tally_label_memory(big, 0, 3, TALLY_MEM_ACTIVATION, "act"); /* a name */
    char name[32];
    for (int i = 0; i < MANY; i++) {
        snprintf(name, sizeof name, "m.%d", i);
        tally_alloc(many[i], (uint64_t)i + 1, i % 8, TALLY_MEM_PARAMETER, i % 2 ? name : NULL);
    }
    tally_config c = bench_config(dir, "pack", on_ready);
    CHECK_EQ_INT(tally_start(&c), 0);
    tally_free(big);
    tally_free(dev);
    tally_free(host);
    tally_free(lab);
    tally_free(edge);
    for (int i = 0; i < MANY; i++)
        tally_free(many[i]);
    CHECK_EQ_INT(tally_stop(), 0);
    CHECK_EQ_INT(npaths, 1);
    tl_trace t;
    if (npaths != 1 || record_load(&t, paths[0]) != 0)
        return;
    CHECK_EQ_INT(t.mem_unmatched_frees, 0); /* every free found its block */
    static const struct {
        const char *p;
        int64_t bytes;
        int32_t device;
        int category;
        const char *name;
    } want[] = {
        {big, (int64_t)(UINT64_C(1) << 50), 3, TL_MEM_ACTIVATION, "act"},
        {dev, 64, 5000, TL_MEM_INPUT, ""},
        {host, 7, -1, TL_MEM_TEMPORARY, ""},
        {lab, 128, 1, TL_MEM_GRADIENT, "g.w"},
        {edge, (int64_t)((UINT64_C(1) << 44) - 1), 4094, TL_MEM_PARAMETER, ""},
    };
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        const tl_memev *a = find_addr(&t, want[k].p, 1), *f = find_addr(&t, want[k].p, 0);
        CHECK(a && a->bytes == want[k].bytes && a->device == want[k].device &&
              a->category == want[k].category &&
              !strcmp(tl_str(&t.strings, a->name), want[k].name));
        CHECK(f && f->bytes == -want[k].bytes && f->device == want[k].device);
    }
    int ok = 1;
    for (int i = 0; i < MANY; i++) {
        const tl_memev *a = find_addr(&t, many[i], 1), *f = find_addr(&t, many[i], 0);
        snprintf(name, sizeof name, "m.%d", i);
        ok &= a && a->bytes == i + 1 && a->device == i % 8 && a->category == TL_MEM_PARAMETER &&
              !strcmp(tl_str(&t.strings, a->name), i % 2 ? name : "") && f &&
              f->bytes == -(i + 1) && f->device == i % 8;
    }
    CHECK(ok);
    tl_trace_free(&t);
}

/* CUPTI's memory activity as the collector hands it to the recorder (cupti_convert.c: a device
 * event of category MEMORY, its address in the arguments), with the cudaMalloc call that made
 * it: the file's reader puts it in the memory table with its address, device and correlation
 * id, and the analysis gives the block to the range around the call, on the calling thread. */
TEST(cupti_memory_reaches_the_memory_table_and_its_owner)
{
    npaths = 0;
    tally_config c = bench_config(dir, "cupti", on_ready);
    CHECK_EQ_INT(tally_start(&c), 0);
    TALLY_PUSH("load_weights", TALLY_USER);
    int64_t t0 = tally__now_ns();
    tally__api_event api = {
        t0, t0 + 2000, 77, (int64_t)syscall(SYS_gettid), TALLY__CAT_RUNTIME, "cudaMalloc"};
    tally__record_api(&api);
    tally__device_event alloc = {
        .start = t0 + 1000,
        .end = t0 + 1000,
        .corr = 77,
        .bytes = 1 << 20,
        .stream = 0,
        .device = 2,
        .cat = TALLY__CAT_MEMORY,
        .flags = TALLY__DEV_INSTANT | TALLY__DEV_MEM_DEVICE,
        .name = "[memory] alloc",
        .args = "\"address\": 140737488355328",
    };
    tally__record_device(&alloc);
    while (tally__now_ns() < t0 + 3000)
        ;
    TALLY_POP();
    tally__flush_all();
    CHECK_EQ_INT(tally_stop(), 0);
    CHECK_EQ_INT(npaths, 1);
    tl_trace t;
    if (npaths != 1 || record_load(&t, paths[0]) != 0)
        return;
    const tl_memev *r = NULL;
    for (size_t i = 0; i < t.nmem; i++)
        if (t.mem[i].corr == 77)
            r = &t.mem[i];
    CHECK(r && r->addr == UINT64_C(140737488355328) && r->bytes == 1 << 20 && r->device == 2);
    tl_mem m;
    CHECK_EQ_INT(tl_mem_compute(&t, &m), 0);
    const tl_mem_block *b = NULL;
    for (size_t i = 0; i < m.nblocks; i++)
        if (m.blocks[i].addr == UINT64_C(140737488355328))
            b = &m.blocks[i];
    CHECK(b && b->device == 2 && b->bytes == 1 << 20 && b->owner >= 0 &&
          !strcmp(tl_str(&t.strings, t.ev[b->owner].name), "load_weights"));
    tl_mem_free(&m);
    tl_trace_free(&t);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tally-test-memory-%d", (int)getpid());
    mkdir(dir, 0755);
    RUN(allocations_frees_and_the_live_set);
    RUN(every_window_begins_with_the_live_set);
    RUN(the_table_keeps_each_block_whole);
    RUN(cupti_memory_reaches_the_memory_table_and_its_owner);
    int rc = test_summary();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        rc = rc ? rc : 1;
    return rc;
}
