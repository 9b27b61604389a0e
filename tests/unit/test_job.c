/*
 * test_job.c — a job of several ranks (analysis/job.h): ranks from file names, read by several
 * threads (CI runs this test under TSan too), the same tables for any thread count, the
 * straggler and the collective skew of a job made by construction, and ranks from paths.
 */
#include "analysis/job.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

/* Rank r: 4 steps of 100 ms (rank 2: 130 ms) from one start, each ending in an all_reduce at
 * 90 % of the step; no distributedInfo, so the rank comes from the file name. */
static void write_rank(int r)
{
    char path[128];
    snprintf(path, sizeof path, "%s/trace_rank%d.json", dir, r);
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    int64_t step = r == 2 ? 130000 : 100000, t = 1000000;
    fputs("{\"traceEvents\": [", f);
    for (int n = 0; n < 4; n++, t += step)
        fprintf(f,
                "%s{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\","
                "\"pid\":1,\"tid\":1,\"ts\":%lld,\"dur\":%lld},"
                "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"nccl:all_reduce\",\"pid\":1,"
                "\"tid\":1,\"ts\":%lld,\"dur\":%lld}",
                n ? "," : "", n, (long long)t, (long long)step, (long long)(t + step * 9 / 10),
                (long long)(step / 10));
    fputs("]}\n", f);
    fclose(f);
}

/* The cell of column key in row r of the table with json key `table` in the chain. */
static const tl_cell *cell(const tl_table *tab, const char *table, int r, const char *key)
{
    for (; tab; tab = tab->next)
        if (!strcmp(tab->key, table)) {
            int c = tl_table_find_col(tab, key);
            return c >= 0 && r < tab->nrows ? &tab->cells[(size_t)r * tab->ncols + c] : NULL;
        }
    return NULL;
}

static tl_table *job_tables(int threads, tl_job *job)
{
    const char *args[] = {dir};
    char **paths;
    size_t n;
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_job_paths(args, 1, &paths, &n, &err), 0);
    CHECK_EQ_INT(n, 8);
    CHECK_EQ_INT(tl_job_load(job, paths, n, threads, 0, &err), 0);
    tl_job_paths_free(paths, n);
    CHECK_EQ_INT(job->n, 8);
    return tl_job_views(job, 0, &err);
}

TEST(eight_ranks_in_threads_agree_and_name_the_straggler)
{
    tl_job one, many;
    tl_table *a = job_tables(1, &one), *b = job_tables(5, &many);
    CHECK(a && b);
    if (!a || !b)
        return;
    CHECK_EQ_INT(many.threads, 5);
    for (size_t i = 0; i < 8; i++)
        CHECK_EQ_INT(one.ranks[i].rank, (int64_t)i);
    /* the same numbers whatever the threads */
    for (const tl_table *x = a, *y = b; x && y; x = x->next, y = y->next) {
        CHECK_EQ_INT(x->nrows, y->nrows);
        for (int r = 0; r < x->nrows && r < y->nrows; r++)
            for (int c = 0; c < x->ncols; c++) {
                const tl_cell *p = &x->cells[(size_t)r * x->ncols + c];
                const tl_cell *q = &y->cells[(size_t)r * y->ncols + c];
                CHECK(p->set == q->set);
                if (x->cols[c].type == TL_COL_STR)
                    CHECK(!p->set || !strcmp(p->s, q->s));
                else
                    CHECK(!p->set || p->i == q->i);
            }
    }
    const tl_cell *c = cell(a, "stragglers", 0, "slowest_rank");
    CHECK(c && c->i == 2);
    c = cell(a, "stragglers", 0, "over_median_pct");
    CHECK(c && c->d > 29.999 && c->d < 30.001);
    c = cell(a, "job_findings", 0, "finding");
    CHECK(c && !strcmp(c->s, "rank 2 is the straggler: 30.0% over the median step"));
    /* the 4th all_reduce: rank 2 at 3 * 130 + 117 ms, the others at 3 * 100 + 90 */
    c = cell(a, "collectives", 0, "start_skew_us");
    CHECK(c && c->i == (3 * 130000 + 117000 - 390000) * 1000LL);
    c = cell(a, "collectives", 0, "last_rank");
    CHECK(c && c->i == 2);
    tl_table_free(a);
    tl_table_free(b);
    tl_job_free(&one);
    tl_job_free(&many);
}

TEST(ranks_from_file_and_folder_names)
{
    CHECK_EQ_INT(tl_rank_from_path("x/trace_rank12.json"), 12);
    CHECK_EQ_INT(tl_rank_from_path("x/rank-3.pt.trace.json.gz"), 3);
    CHECK_EQ_INT(tl_rank_from_path("run/rank7_dp3_tp0_pp1/host.123.pt.trace.json"), 7);
    CHECK_EQ_INT(tl_rank_from_path("Rank_5/a.tally"), 5);
    CHECK_EQ_INT(tl_rank_from_path("x/frankly/trace.json"), -1);
    CHECK_EQ_INT(tl_rank_from_path("trace.json"), -1);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tally-test-job-%d", (int)getpid());
    mkdir(dir, 0755);
    for (int r = 0; r < 8; r++)
        write_rank(r);
    RUN(eight_ranks_in_threads_agree_and_name_the_straggler);
    RUN(ranks_from_file_and_folder_names);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cleanup failed\n");
    return test_summary();
}
