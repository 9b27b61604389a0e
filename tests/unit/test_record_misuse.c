/*
 * test_record_misuse.c — what a careless program does to the recorder: pops with nothing open,
 * ends with zero, forged, foreign or already-ended handles, calls before start and after stop,
 * ranges left open at stop, ranges that straddle a window boundary, start twice, stop twice.
 * Nothing crashes; everything is counted, and the file still reads and nests.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record_test_util.h"
#include "testlib.h"
#include "trace/model.h"
#include <tally.h>

static char dir[256];
static char last_path[512];
static int ready_calls;

static void on_ready(const tally_window *w, void *user)
{
    (void)user;
    ready_calls++;
    snprintf(last_path, sizeof last_path, "%s", w->path);
}

static tally_config cfg(const char *name)
{
    tally_config c;
    memset(&c, 0, sizeof c);
    c.output_dir = dir;
    c.name = name;
    c.on_trace_ready = on_ready;
    c.quiet = 1;
    return c;
}

static int count(const tl_trace *t, const char *name)
{
    int n = 0;
    for (size_t i = 0; i < t->nev; i++)
        n += !strcmp(tl_str(&t->strings, t->ev[i].name), name);
    return n;
}

TEST(outside_calls_counted)
{
    tally_stats st0, st;
    tally_get_stats(&st0);
    TALLY_PUSH("before", TALLY_USER);
    TALLY_POP();
    TALLY_MARK("m");
    tally_step(1);
    tally_get_stats(&st);
    CHECK_EQ_INT(st.calls_outside - st0.calls_outside, 4);
    CHECK_EQ_INT(tally_stop(), TALLY_ESTATE); /* stop without start */
}

TEST(bad_pops_and_ends_counted)
{
    tally_config c = cfg("misuse");
    CHECK_EQ_INT(tally_start(&c), 0);
    CHECK_EQ_INT(tally_start(&c), TALLY_ESTATE);
    tally_pop(); /* empty stack */
    tally_pop();
    TALLY_PUSH("ok", TALLY_USER);
    TALLY_POP();
    tally_pop();                                /* unbalanced */
    tally_end(0);                               /* zero handle */
    tally_end((tally_range)0xdeadbeef12345ULL); /* forged: no such slot */
    tally_range r = TALLY_BEGIN("twice", TALLY_USER);
    tally_end(r);
    tally_end(r);                        /* stale */
    tally_end(r + 1000);                 /* never issued by that thread */
    TALLY_PUSH("left_open", TALLY_USER); /* still open at stop */
    tally_range open_r = TALLY_BEGIN("async_open", TALLY_USER);
    (void)open_r;
    CHECK_EQ_INT(tally_stop(), 0);
    CHECK_EQ_INT(tally_stop(), TALLY_ESTATE);
    tally_stats st;
    tally_get_stats(&st);
    CHECK_EQ_INT(st.bad_pops, 3);
    CHECK_EQ_INT(st.bad_ends, 4);
    CHECK_EQ_INT(st.unclosed, 1);
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally(&t, last_path, &err), 0);
    CHECK_EQ_INT(t.bad_pops, 3);
    CHECK_EQ_INT(t.bad_ends, 4);
    CHECK_EQ_INT(t.unclosed, 1);
    CHECK_EQ_INT(count(&t, "ok"), 1);
    CHECK_EQ_INT(count(&t, "twice"), 1);
    for (size_t i = 0; i < t.nev; i++) {
        const char *n = tl_str(&t.strings, t.ev[i].name);
        if (!strcmp(n, "left_open") || !strcmp(n, "async_open"))
            CHECK(t.ev[i].flags & TL_EV_UNCLOSED);
        if (!strcmp(n, "ok") || !strcmp(n, "twice"))
            CHECK(!(t.ev[i].flags & TL_EV_UNCLOSED));
    }
    tl_trace_free(&t);
    /* the range left open at stop: popping it now is a call outside, not a crash */
    TALLY_POP();
}

TEST(straddling_window_is_not_an_error)
{
    /* steps 0 closed, 1 ready, 2-3 record: a range opened in step 1 ends in step 2 */
    tally_config c = cfg("straddle");
    c.wait = 1;
    c.warmup = 1;
    c.active = 2;
    c.repeat = 1;
    ready_calls = 0;
    CHECK_EQ_INT(tally_start(&c), 0);
    tally_step(0); /* 0 -> 1 */
    TALLY_PUSH("straddler", TALLY_USER);
    tally_range h = TALLY_BEGIN("straddler_async", TALLY_USER);
    tally_step(0); /* 1 -> 2: window opens */
    TALLY_POP();
    tally_end(h);
    TALLY_PUSH("inside", TALLY_USER);
    TALLY_POP();
    tally_step(0); /* 2 -> 3 */
    TALLY_PUSH("crosses_end", TALLY_USER);
    tally_step(0); /* 3 -> 4: window closes */
    TALLY_POP();
    CHECK_EQ_INT(ready_calls, 1);
    CHECK_EQ_INT(tally_stop(), 0);
    tally_stats st;
    tally_get_stats(&st);
    CHECK_EQ_INT(st.bad_pops, 0);
    CHECK_EQ_INT(st.bad_ends, 0);
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally(&t, last_path, &err), 0);
    CHECK_EQ_INT(count(&t, "inside"), 1);
    CHECK_EQ_INT(count(&t, "straddler"), 0);
    CHECK_EQ_INT(count(&t, "ProfilerStep#2"), 1);
    CHECK_EQ_INT(count(&t, "ProfilerStep#3"), 1);
    CHECK_EQ_INT(count(&t, "ProfilerStep#1"), 0);
    CHECK_EQ_INT(count(&t, "ProfilerStep#4"), 0);
    CHECK_EQ_INT(count(&t, "crosses_end"), 1);
    tl_trace_free(&t);
}

static volatile sig_atomic_t program_saw_sigint;
static void program_handler(int sig)
{
    (void)sig;
    program_saw_sigint = 1;
}

/* SIGINT with a program handler that carries on: tally flushes, the program's handler runs,
 * recording goes on, and the file is whole at stop. */
TEST(sigint_reaches_program_handler)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = program_handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    tally_config c = cfg("sigint");
    CHECK_EQ_INT(tally_start(&c), 0);
    TALLY_PUSH("before_signal", TALLY_USER);
    TALLY_POP();
    raise(SIGINT);
    CHECK(program_saw_sigint);
    TALLY_PUSH("after_signal", TALLY_USER);
    TALLY_POP();
    CHECK_EQ_INT(tally_stop(), 0);
    struct sigaction now;
    sigaction(SIGINT, NULL, &now);
    CHECK(now.sa_handler == program_handler); /* the program's handler is in place again */
    sigaction(SIGINT, &old, NULL);
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally(&t, last_path, &err), 0);
    CHECK_EQ_INT(count(&t, "before_signal"), 1);
    CHECK_EQ_INT(count(&t, "after_signal"), 1);
    tl_trace_free(&t);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tally-test-misuse-%d", (int)getpid());
    RUN(outside_calls_counted);
    RUN(bad_pops_and_ends_counted);
    RUN(straddling_window_is_not_an_error);
    RUN(sigint_reaches_program_handler);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
    return test_summary();
}
