/*
 * test_record_schedule.c — the schedule state machine against the worked examples of
 * reference/report-semantics.md §1.2-§1.3 and §4.1 (including Paddle's [12,14] case, where its
 * docstring says [11,13]); windows and files of a real session; TALLY_* environment parsing;
 * name patterns; and the timer-only summary computed from steps whose values are known.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/internal.h"
#include "record/schedule.h"
#include "record_test_util.h"
#include "testlib.h"
#include "trace/model.h"
#include <tally.h>

static char dir[256];

/* "CRRRRA..." per step: C closed, W ready (warm-up), R record, A record-and-return */
static void states(const tally_config *c, int n, char *out)
{
    static const char code[] = "CWRA";
    for (int i = 0; i < n; i++)
        out[i] = code[tally__sched_state(c, i)];
    out[n] = 0;
}

static tally_config sched(int skip, int wait, int warmup, int active, int repeat)
{
    tally_config c;
    memset(&c, 0, sizeof c);
    c.skip_first = skip;
    c.wait = wait;
    c.warmup = warmup;
    c.active = active;
    c.repeat = repeat;
    return c;
}

TEST(paddle_worked_examples)
{
    char s[64];
    tally_config c = sched(0, 1, 1, 4, 1); /* closed=1, ready=1, record=4, repeat=1 */
    states(&c, 10, s);
    CHECK_STR(s, "CWRRRACCCC"); /* records [2,5] */
    c = sched(1, 1, 1, 4, 0);   /* skip_first=1 */
    states(&c, 20, s);
    CHECK_STR(s, "CCWRRRACWRRRACWRRRAC"); /* [3,6], [9,12], [15,18] */
    c = sched(0, 1, 1, 3, 3);             /* repeat=3: [2,4], [7,9], [12,14] (not [11,13]) */
    states(&c, 18, s);
    CHECK_STR(s, "CWRRACWRRACWRRACCC");
}

TEST(torch_worked_example)
{
    char s[16];
    tally_config c = sched(0, 1, 1, 2, 1); /* wait=1, warmup=1, active=2, repeat=1 */
    states(&c, 7, s);
    CHECK_STR(s, "CWRACCC");
    c = sched(0, 0, 0, 0, 0); /* no schedule: always record, never returns */
    states(&c, 5, s);
    CHECK_STR(s, "RRRRR");
}

TEST(range_form)
{
    char s[16];
    tally_config c;
    memset(&c, 0, sizeof c);
    tally_schedule_range(&c, 2, 5);
    states(&c, 7, s);
    CHECK_STR(s, "CWRRACC");
    tally_schedule_range(&c, 3, 10);
    states(&c, 12, s);
    CHECK_STR(s, "CCWRRRRRRACC");
    tally_schedule_range(&c, 0, 4);
    states(&c, 6, s);
    CHECK_STR(s, "RRRACC");
    tally_schedule_range(&c, 5, 5); /* empty: refused */
    CHECK(!tally__sched_valid(&c));
}

static struct {
    int n;
    int64_t first[8], last[8];
    char path[8][512];
} wins;

static void on_ready(const tally_window *w, void *user)
{
    (void)user;
    if (wins.n < 8) {
        wins.first[wins.n] = w->first_step;
        wins.last[wins.n] = w->last_step;
        snprintf(wins.path[wins.n], sizeof wins.path[0], "%s", w->path);
    }
    wins.n++;
}

TEST(session_windows_and_files)
{
    tally_config c = sched(0, 1, 1, 3, 3);
    c.output_dir = dir;
    c.name = "sched";
    c.on_trace_ready = on_ready;
    c.quiet = 1;
    memset(&wins, 0, sizeof wins);
    CHECK_EQ_INT(tally_start(&c), 0);
    for (int i = 0; i < 18; i++) {
        TALLY_SCOPE("work", TALLY_USER) {}
        tally_step(4);
    }
    CHECK_EQ_INT(tally_stop(), 0);
    CHECK_EQ_INT(wins.n, 3);
    const int64_t want[3][2] = {{2, 4}, {7, 9}, {12, 14}};
    for (int w = 0; w < 3 && w < wins.n; w++) {
        CHECK_EQ_INT(wins.first[w], want[w][0]);
        CHECK_EQ_INT(wins.last[w], want[w][1]);
        char expect[512];
        snprintf(expect, sizeof expect, "%s/sched-w%d.tally", dir, w);
        CHECK_STR(wins.path[w], expect);
        tl_trace t;
        tl_trace_init(&t);
        tl_error err = {{0}};
        CHECK_EQ_INT(tl_read_tally(&t, wins.path[w], &err), 0);
        int steps = 0, works = 0;
        int64_t lo = 1000, hi = -1;
        for (size_t i = 0; i < t.nev; i++) {
            if (t.ev[i].cat == TL_CAT_STEP) {
                steps++;
                lo = t.ev[i].value < lo ? t.ev[i].value : lo;
                hi = t.ev[i].value > hi ? t.ev[i].value : hi;
            }
            works += !strcmp(tl_str(&t.strings, t.ev[i].name), "work");
        }
        CHECK_EQ_INT(steps, 3);
        CHECK_EQ_INT(works, 3);
        CHECK_EQ_INT(lo, want[w][0]);
        CHECK_EQ_INT(hi, want[w][1]);
        CHECK_EQ_INT(t.nsteps_samples, 3);
        if (t.nsteps_samples == 3)
            CHECK_EQ_INT(t.step_samples[2], 4);
        tl_trace_free(&t);
    }
}

TEST(single_window_file_name)
{
    tally_config c;
    memset(&c, 0, sizeof c);
    tally_schedule_range(&c, 1, 3);
    c.output_dir = dir;
    c.name = "one-{rank}";
    c.on_trace_ready = on_ready;
    c.quiet = 1;
    memset(&wins, 0, sizeof wins);
    setenv("RANK", "3", 1);
    CHECK_EQ_INT(tally_start(&c), 0);
    for (int i = 0; i < 5; i++)
        tally_step(0);
    CHECK_EQ_INT(tally_stop(), 0);
    unsetenv("RANK");
    CHECK_EQ_INT(wins.n, 1);
    char expect[1100];
    /* a process with a rank writes into the rank's folder */
    snprintf(expect, sizeof expect, "%s/rank3/one-3.tally", dir);
    CHECK_STR(wins.path[0], expect);
    CHECK_EQ_INT(wins.first[0], 1);
    CHECK_EQ_INT(wins.last[0], 2);
    /* ... unless told not to (TALLY_RANK_DIRS=0), or the folder is that rank's already */
    static const char *const sub[] = {"", "/rank3"};
    for (int k = 0; k < 2; k++) {
        char d[512];
        snprintf(d, sizeof d, "%s%s", dir, sub[k]);
        c.output_dir = d;
        c.name = k ? "three-{rank}" : "two-{rank}";
        memset(&wins, 0, sizeof wins);
        setenv("RANK", "3", 1);
        if (!k)
            setenv("TALLY_RANK_DIRS", "0", 1);
        CHECK_EQ_INT(tally_start(&c), 0);
        for (int i = 0; i < 5; i++)
            tally_step(0);
        CHECK_EQ_INT(tally_stop(), 0);
        unsetenv("RANK");
        unsetenv("TALLY_RANK_DIRS");
        snprintf(expect, sizeof expect, "%s/%s-3.tally", d, k ? "three" : "two");
        CHECK_EQ_INT(wins.n, 1);
        CHECK_STR(wins.path[0], expect);
    }
}

TEST(env_parsing)
{
    size_t n = 0;
    CHECK(tally__parse_size("64k", &n) == 0 && n == 65536);
    CHECK(tally__parse_size("256M", &n) == 0 && n == 256u << 20);
    CHECK(tally__parse_size("1G", &n) == 0 && n == 1u << 30);
    CHECK(tally__parse_size("4096", &n) == 0 && n == 4096);
    CHECK(tally__parse_size("12Q", &n) != 0);
    CHECK(tally__parse_size("", &n) != 0);
    CHECK(tally__parse_size("-1", &n) != 0);
    unsigned w = 0;
    CHECK(tally__parse_write("json,summary", &w) == 0 &&
          w == (TALLY_WRITE_TALLY | TALLY_WRITE_JSON | TALLY_WRITE_SUMMARY));
    CHECK(tally__parse_write("xml", &w) != 0);

    tally_config c;
    memset(&c, 0, sizeof c);
    c.active = 9; /* the environment wins over the struct */
    setenv("TALLY_SCHEDULE", "skip_first=1,closed=2,ready=1,record=4,repeat=2", 1);
    setenv("TALLY_MEMORY_CAP", "64M", 1);
    setenv("TALLY_BUFFER_SIZE", "64k", 1);
    setenv("TALLY_TIMER_ONLY", "0", 1);
    setenv("TALLY_SAMPLES_UNIT", "tokens", 1);
    CHECK_EQ_INT(tally_config_from_env(&c), 0);
    CHECK_EQ_INT(c.skip_first, 1);
    CHECK_EQ_INT(c.wait, 2);
    CHECK_EQ_INT(c.warmup, 1);
    CHECK_EQ_INT(c.active, 4);
    CHECK_EQ_INT(c.repeat, 2);
    CHECK_EQ_INT(c.memory_cap, 64u << 20);
    CHECK_EQ_INT(c.buffer_size, 65536);
    CHECK_STR(c.samples_unit, "tokens");
    CHECK_STR(c.output_dir, ".");

    memset(&c, 0, sizeof c);
    setenv("TALLY_SCHEDULE", "3:10", 1);
    CHECK_EQ_INT(tally_config_from_env(&c), 0);
    CHECK_EQ_INT(c.wait, 2);
    CHECK_EQ_INT(c.warmup, 1);
    CHECK_EQ_INT(c.active, 7);
    CHECK_EQ_INT(c.repeat, 1);

    static const char *const bad[][2] = {
        {"TALLY_SCHEDULE", "wait=x"},  {"TALLY_SCHEDULE", "wait=1"},
        {"TALLY_SCHEDULE", "10:3"},    {"TALLY_SCHEDULE", "bogus=1,active=2"},
        {"TALLY_MEMORY_CAP", "lots"},  {"TALLY_BUFFER_SIZE", "12Q"},
        {"TALLY_TIMER_ONLY", "maybe"}, {"TALLY_WRITE", "json,xml"},
        {"TALLY_NAME", "a/b"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsetenv("TALLY_SCHEDULE");
        setenv(bad[i][0], bad[i][1], 1);
        memset(&c, 0, sizeof c);
        CHECK_EQ_INT(tally_config_from_env(&c), TALLY_ECONFIG);
        CHECK_EQ_INT(tally_start(NULL), TALLY_ECONFIG);
        CHECK(!tally_running());
        unsetenv(bad[i][0]);
    }
    unsetenv("TALLY_MEMORY_CAP");
    unsetenv("TALLY_BUFFER_SIZE");
    unsetenv("TALLY_TIMER_ONLY");
    unsetenv("TALLY_SAMPLES_UNIT");
}

TEST(versions_and_errors)
{
    CHECK_EQ_INT(tally_version(), TALLY_VERSION_HEX);
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", TALLY_VERSION_MAJOR, TALLY_VERSION_MINOR,
             TALLY_VERSION_PATCH);
    CHECK_STR(tally_version_string(), v);
    CHECK_STR(tally_strerror(TALLY_EINVAL), "invalid argument");
    CHECK_STR(tally_strerror(TALLY_ECONFIG), "bad TALLY_* setting");
    CHECK_STR(tally_err_name(TALLY_ECONFIG), "TALLY_ECONFIG");
    CHECK_STR(tally_err_name(TALLY_ENOTSUP), "TALLY_ENOTSUP");
    CHECK(tally_strerror(-999) != NULL && tally_err_name(-999) != NULL);
    CHECK_STR(tally_strerror(0), "success");
}

TEST(perf_summary_by_construction)
{
    /* 0.1 s, 0.2 s, 0.3 s steps of 10 samples; reader 0.05, 0.05, 0.1 s */
    tally__perf_step s[3] = {
        {100000000, 50000000, 10}, {200000000, 50000000, 10}, {300000000, 100000000, 10}};
    tally__perf_summary p;
    tally__perf_compute(s, 3, &p);
    CHECK_EQ_INT(p.steps, 3);
    CHECK(p.samples_mode);
    CHECK_NEAR(p.batch.avg, 0.2, 1e-12); /* 0.6 s / 3 steps, not / 2 */
    CHECK_NEAR(p.batch.max, 0.3, 1e-12);
    CHECK_NEAR(p.batch.min, 0.1, 1e-12); /* the first value is the minimum */
    CHECK_NEAR(p.reader.avg, 0.2 / 3, 1e-12);
    CHECK_NEAR(p.reader.max, 0.1, 1e-12);
    CHECK_NEAR(p.reader.min, 0.05, 1e-12);
    CHECK_NEAR(p.reader_ratio, 100.0 * 0.2 / 0.6, 1e-9);
    CHECK_NEAR(p.ips.avg, 30 / 0.6, 1e-9);
    CHECK_NEAR(p.ips.max, 100.0, 1e-9);
    CHECK_NEAR(p.ips.min, 10 / 0.3, 1e-9);
    /* one step: max == min == avg (Paddle leaves min at inf) */
    tally__perf_compute(s + 1, 1, &p);
    CHECK_NEAR(p.batch.min, 0.2, 1e-12);
    CHECK_NEAR(p.ips.min, 50.0, 1e-9);
    /* a step without a sample count: steps/s */
    s[1].samples = 0;
    tally__perf_compute(s, 3, &p);
    CHECK(!p.samples_mode);
    CHECK_NEAR(p.ips.avg, 3 / 0.6, 1e-9);
}

TEST(timer_only_session_writes_no_file)
{
    tally_config c;
    memset(&c, 0, sizeof c);
    c.output_dir = dir;
    c.name = "timer";
    c.timer_only = 1;
    c.quiet = 1;
    CHECK_EQ_INT(tally_start(&c), 0);
    for (int i = 0; i < 3; i++) {
        TALLY_SCOPE("load", TALLY_DATALOADER)
        {
            usleep(1000);
        }
        tally_step(8);
    }
    CHECK_EQ_INT(tally_stop(), 0);
    tally_stats st;
    tally_get_stats(&st);
    CHECK_EQ_INT(st.steps, 3);
    CHECK_EQ_INT(st.records, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/timer.tally", dir);
    CHECK(access(path, F_OK) != 0);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tally-test-sched-%d", (int)getpid());
    RUN(paddle_worked_examples);
    RUN(torch_worked_example);
    RUN(range_form);
    RUN(session_windows_and_files);
    RUN(single_window_file_name);
    RUN(env_parsing);
    RUN(versions_and_errors);
    RUN(perf_summary_by_construction);
    RUN(timer_only_session_writes_no_file);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
    return test_summary();
}
