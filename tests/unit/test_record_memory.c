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
#include <unistd.h>

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

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tally-test-memory-%d", (int)getpid());
    mkdir(dir, 0755);
    RUN(allocations_frees_and_the_live_set);
    RUN(every_window_begins_with_the_live_set);
    int rc = test_summary();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        rc = rc ? rc : 1;
    return rc;
}
