/*
 * test_sqlite_export.c — the SQLite export (report/sqlite_export.c): a hand-built trace gives
 * the numbers known by construction in its tables and views; two ranks share one database (one
 * string table, ids unique, views grouped by rank); a path that cannot be written is an I/O
 * error that leaves nothing; an existing file is replaced; the two ranks of a real job
 * (../shared/traces) go into one database with every kernel.
 */
#include "report/sqlite_export.h"
#include "shared_trace.h"
#include "span_fixture.h"
#include "testlib.h"
#include "trace/model.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One step (0..1000 ns) holding aten::add (100..300) whose cudaLaunchKernel (150..160) launched
 * the kernel "k" of kernel_ns on stream 7; a 4096-byte allocation at 120; a counter sample. */
static void build(tl_trace *t, int64_t kernel_ns)
{
    tl_trace_init(t);
    uint32_t host = tl_trace_track(t, TL_TRACK_THREAD, 10, 11, -1);
    uint32_t stream = tl_trace_track(t, TL_TRACK_STREAM, 10, 7, 0);
    fx_span(t, host, TL_CAT_STEP, "ProfilerStep#1", 0, 1000)->value = 1;
    fx_span(t, host, TL_CAT_OPERATOR, "aten::add", 100, 200);
    fx_span(t, host, TL_CAT_RUNTIME, "cudaLaunchKernel", 150, 10)->corr = 9;
    fx_span(t, stream, TL_CAT_KERNEL, "k", 200, kernel_ns)->corr = 9;
    tl_event *c = fx_span(t, host, TL_CAT_COUNTER, "tokens", 500, 0);
    tl_counter_set(c, 2.5);
    c->flags = TL_EV_INSTANT;
    tl_memev *m = tl_trace_add_mem(t);
    m->ts = 120;
    m->bytes = 4096;
    m->addr = 0x1000;
    m->device = 0;
    m->track = host;
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

static int64_t query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    int64_t v = INT64_MIN;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        fprintf(stderr, "  %s: %s\n", sql, sqlite3_errmsg(db));
        return v;
    }
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

static char tmpdir[] = "/tmp/test_sqlite_XXXXXX";

TEST(hand_built_trace_has_known_numbers_and_two_ranks_share_a_database)
{
    char path[256];
    snprintf(path, sizeof path, "%s/job.sqlite", tmpdir);
    tl_trace a, b;
    build(&a, 60);
    build(&b, 100);
    tl_error err = {{0}};
    tl_sqlite *db = tl_sqlite_open(path, &err);
    CHECK(db != NULL);
    if (!db)
        return;
    CHECK_EQ_INT(tl_sqlite_add_trace(db, &a, 0, &err), 0);
    CHECK_EQ_INT(tl_sqlite_add_trace(db, &b, 1, &err), 0);
    CHECK_EQ_INT(tl_sqlite_close(db, &err), 0);
    tl_trace_free(&a);
    tl_trace_free(&b);

    sqlite3 *q = NULL;
    CHECK_EQ_INT(sqlite3_open_v2(path, &q, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM strings WHERE value = 'k'"), 1);
    CHECK_EQ_INT(query_int(q, "SELECT count(DISTINCT rank) FROM kernels"), 2);
    CHECK_EQ_INT(query_int(q, "SELECT total_ns FROM kernel_summary WHERE rank = 1"), 100);
    CHECK_EQ_INT(query_int(q, "SELECT ratio_pct FROM kernel_summary WHERE rank = 0"), 100);
    /* a launch names the runtime call of its own rank */
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM kernels k JOIN ranges r ON r.id = k.launch"
                              " AND r.rank = k.rank AND r.correlation = 9"),
                 2);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) - count(DISTINCT id) FROM ranges"), 0);
    /* aten::add: 200 ns, of which 10 in its launch call; the kernel is its own */
    CHECK_EQ_INT(query_int(q, "SELECT self_cpu_ns FROM ops_summary WHERE rank = 1 AND name ="
                              " 'aten::add'"),
                 190);
    CHECK_EQ_INT(query_int(q, "SELECT self_cuda_ns FROM ops_summary WHERE rank = 1 AND name ="
                              " 'aten::add'"),
                 100);
    CHECK_EQ_INT(query_int(q, "SELECT cuda_total_ns FROM ops_summary WHERE rank = 0 AND name ="
                              " 'ProfilerStep*'"),
                 60);
    CHECK_EQ_INT(query_int(q, "SELECT self_cpu_ns FROM ops_summary WHERE rank = 0 AND name ="
                              " 'ProfilerStep*'"),
                 800);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM step_times WHERE duration_ns = 1000"), 2);
    CHECK_EQ_INT(query_int(q, "SELECT bytes FROM memory WHERE rank = 1 AND address = 4096"), 4096);
    CHECK_EQ_INT(query_int(q, "SELECT value * 10 FROM counters WHERE rank = 0"), 25);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM threads"), 2);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM streams WHERE stream = 7"), 2);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM meta WHERE key = 'rank' AND value = rank"), 2);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM meta WHERE key = 'accelerator' AND value = "
                              "'GPU'"),
                 2);
    CHECK_EQ_INT(query_int(q, "SELECT depth FROM ranges r JOIN strings s ON s.id = r.name AND"
                              " s.value = 'cudaLaunchKernel' AND r.rank = 0"),
                 2);
    sqlite3_close(q);
    unlink(path);
}

TEST(unwritable_path_is_an_io_error)
{
    char path[256];
    snprintf(path, sizeof path, "%s/no/such/dir/x.sqlite", tmpdir);
    tl_error err = {{0}};
    tl_sqlite *db = tl_sqlite_open(path, &err);
    CHECK(db == NULL);
    CHECK_EQ_INT(err.code, TL_ERR_IO);
    CHECK(strstr(err.msg, "x.sqlite") != NULL);
    CHECK(strchr(err.msg, '\n') == NULL);
}

/* A trace with no device names no accelerator (it said GPU for every CPU-only trace). */
TEST(a_cpu_only_trace_names_no_accelerator)
{
    char path[256];
    snprintf(path, sizeof path, "%s/cpu.db", tmpdir);
    tl_trace t;
    tl_trace_init(&t);
    uint32_t host = tl_trace_track(&t, TL_TRACK_THREAD, 10, 11, -1);
    fx_span(&t, host, TL_CAT_OPERATOR, "aten::add", 100, 200);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_sqlite *db = tl_sqlite_open(path, &err);
    CHECK(db != NULL);
    if (!db) {
        tl_trace_free(&t);
        return;
    }
    CHECK_EQ_INT(tl_sqlite_add_trace(db, &t, 0, &err), 0);
    CHECK_EQ_INT(tl_sqlite_close(db, &err), 0);
    tl_trace_free(&t);
    sqlite3 *q = NULL;
    CHECK_EQ_INT(sqlite3_open_v2(path, &q, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM meta WHERE key = 'accelerator'"), 0);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM meta WHERE key = 'source'"), 1);
    sqlite3_close(q);
    unlink(path);
}

TEST(existing_file_is_replaced)
{
    char path[256];
    snprintf(path, sizeof path, "%s/old.db", tmpdir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("not a database\n", f);
    fclose(f);
    tl_trace t;
    build(&t, 60);
    tl_error err = {{0}};
    tl_sqlite *db = tl_sqlite_open(path, &err);
    CHECK(db != NULL);
    CHECK_EQ_INT(tl_sqlite_add_trace(db, &t, tl_sqlite_trace_rank(&t), &err), 0);
    CHECK_EQ_INT(tl_sqlite_close(db, &err), 0);
    tl_trace_free(&t);
    sqlite3 *q = NULL;
    CHECK_EQ_INT(sqlite3_open_v2(path, &q, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM kernels WHERE rank = 0"), 1);
    sqlite3_close(q);
    unlink(path);
}

TEST(real_ranks_of_one_job_in_one_database)
{
    if (!test_have_shared_traces()) {
        test_skipped++;
        return;
    }
    char path[256];
    snprintf(path, sizeof path, "%s/ranks.sqlite", tmpdir);
    tl_error err = {{0}};
    tl_sqlite *db = tl_sqlite_open(path, &err);
    CHECK(db != NULL);
    if (!db)
        return;
    size_t kernels[2] = {0, 0};
    for (int r = 0; r < 2; r++) {
        tl_trace t;
        char name[64];
        snprintf(name, sizeof name, "hta_sampled_rank-%d.json.gz", r);
        if (shared_trace_load(&t, name, 0) == 0) {
            CHECK_EQ_INT(tl_sqlite_trace_rank(&t), r);
            for (size_t i = 0; i < t.nev; i++)
                kernels[r] += t.ev[i].cat == TL_CAT_KERNEL;
            CHECK_EQ_INT(tl_sqlite_add_trace(db, &t, tl_sqlite_trace_rank(&t), &err), 0);
        }
        tl_trace_free(&t);
    }
    CHECK_EQ_INT(tl_sqlite_close(db, &err), 0);
    sqlite3 *q = NULL;
    CHECK_EQ_INT(sqlite3_open_v2(path, &q, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM kernels WHERE rank = 0"), kernels[0]);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM kernels WHERE rank = 1"), kernels[1]);
    CHECK_EQ_INT(query_int(q, "SELECT count(DISTINCT rank) FROM kernel_summary"), 2);
    CHECK_EQ_INT(query_int(q, "SELECT count(*) FROM (SELECT rank FROM kernel_summary GROUP BY"
                              " rank HAVING abs(sum(ratio_pct) - 100) < 1e-6)"),
                 2);
    sqlite3_close(q);
    unlink(path);
}

/* 37 kernels and 37 operators (two statements of 16 rows and 5 rows alone), values that change
 * from row to row or not (NULL and a number in turns, the same rank): every row keeps its own,
 * in two traces of one database, the first freed before the second is built. */
static void build_rows(tl_trace *t)
{
    tl_trace_init(t);
    uint32_t host = tl_trace_track(t, TL_TRACK_THREAD, 10, 11, -1);
    uint32_t stream = tl_trace_track(t, TL_TRACK_STREAM, 10, 7, 0);
    for (int i = 1; i <= 37; i++) {
        tl_event *op = fx_span(t, host, TL_CAT_OPERATOR, "op", i * 100, 50);
        if (i % 2)
            op->args = tl_intern(&t->strings, "[[1]]", 5);
        fx_span(t, stream, TL_CAT_KERNEL, "k", i * 100 + 60, i)->corr = i % 2 ? i : 0;
    }
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(batched_rows_keep_every_value)
{
    char path[256];
    snprintf(path, sizeof path, "%s/rows.sqlite", tmpdir);
    tl_error err = {{0}};
    tl_sqlite *db = tl_sqlite_open(path, &err);
    CHECK(db != NULL);
    if (!db)
        return;
    for (int r = 0; r < 2; r++) {
        tl_trace t;
        build_rows(&t);
        CHECK_EQ_INT(tl_sqlite_add_trace(db, &t, r, &err), 0);
        tl_trace_free(&t);
    }
    CHECK_EQ_INT(tl_sqlite_close(db, &err), 0);
    sqlite3 *q = NULL;
    CHECK_EQ_INT(sqlite3_open_v2(path, &q, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    for (int r = 0; r < 2; r++) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM kernels WHERE rank = %d", r);
        CHECK_EQ_INT(query_int(q, sql), 37);
        snprintf(sql, sizeof sql, "SELECT sum(duration) FROM kernels WHERE rank = %d", r);
        CHECK_EQ_INT(query_int(q, sql), 37 * 38 / 2);
        snprintf(sql, sizeof sql, "SELECT sum(correlation) FROM kernels WHERE rank = %d", r);
        CHECK_EQ_INT(query_int(q, sql), 19 * 19); /* 1 + 3 + ... + 37 */
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM kernels WHERE rank = %d AND (duration %% 2 = 1) ="
                 " (correlation IS NULL)",
                 r);
        CHECK_EQ_INT(query_int(q, sql), 0);
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM ranges WHERE rank = %d AND args = '{\"args\":\"[[1]]\"}'",
                 r);
        CHECK_EQ_INT(query_int(q, sql), 19);
        snprintf(
            sql, sizeof sql,
            "SELECT count(*) FROM ranges WHERE rank = %d AND args IS NULL AND start / 100 %% 2 = 0",
            r);
        CHECK_EQ_INT(query_int(q, sql), 18);
    }
    CHECK_EQ_INT(query_int(q, "SELECT count(DISTINCT id) FROM kernels"), 74);
    sqlite3_close(q);
    unlink(path);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(hand_built_trace_has_known_numbers_and_two_ranks_share_a_database);
    RUN(unwritable_path_is_an_io_error);
    RUN(a_cpu_only_trace_names_no_accelerator);
    RUN(existing_file_is_replaced);
    RUN(real_ranks_of_one_job_in_one_database);
    RUN(batched_rows_keep_every_value);
    rmdir(tmpdir);
    return test_summary();
}
