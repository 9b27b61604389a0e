/*
 * test_view_ranges.c — the UserDefined view: per-name calls/total/self/avg/max/min/ratio,
 * sorting by any column, --top, and per-thread groups.
 */
#include "testlib.h"
#include "views_fixture.h"

#include <stdlib.h>

/* Every test runs twice: the table held as cells, and made as it is read (the report's). */
static int made_rows;
static tl_view_opts plain_opts(void)
{
    return (tl_view_opts){.made_rows = made_rows};
}
static const tl_view_opts *plain(void)
{
    static tl_view_opts o;
    o = plain_opts();
    return &o;
}

static int64_t col_i(const tl_table *t, int row, const char *key)
{
    return fx_cell(t, row, key)->i;
}

TEST(ranges_numbers)
{
    tl_trace t;
    fx_training(&t);
    tl_table *tab = tl_view_ranges(&t, plain(), NULL);
    CHECK(tab != NULL);
    if (!tab)
        return;
    CHECK_EQ_INT(tab->nrows, 3);
    CHECK_EQ_INT(tl_table_find_col(tab, "thread"), -1);
    int r = fx_row(tab, 0, "attn");
    CHECK_EQ_INT(r, 0); /* largest total first */
    CHECK_EQ_INT(col_i(tab, r, "calls"), 2);
    CHECK_EQ_INT(col_i(tab, r, "total_us"), MS(20));
    CHECK_EQ_INT(col_i(tab, r, "self_us"), MS(17)); /* 10 - softmax 3, plus 10 */
    CHECK_EQ_INT(col_i(tab, r, "avg_us"), MS(10));
    CHECK_EQ_INT(col_i(tab, r, "max_us"), MS(10));
    CHECK_EQ_INT(col_i(tab, r, "min_us"), MS(10));
    CHECK_NEAR(fx_cell(tab, r, "ratio_pct")->d, 100.0 * 20 / 300, 1e-9);
    r = fx_row(tab, 0, "softmax");
    CHECK_EQ_INT(r, 2);
    CHECK_EQ_INT(col_i(tab, r, "total_us"), MS(3));
    CHECK_EQ_INT(col_i(tab, r, "self_us"), MS(3));
    r = fx_row(tab, 0, "eval");
    CHECK_EQ_INT(r, 1);
    CHECK_EQ_INT(col_i(tab, r, "total_us"), MS(10));
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(ranges_sort_and_top)
{
    tl_trace t;
    fx_training(&t);
    tl_view_opts o = plain_opts();
    o.sort = "Self"; /* by title */
    o.ascending = 1;
    tl_table *tab = tl_view_ranges(&t, &o, NULL);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(fx_row(tab, 0, "softmax"), 0);
        CHECK_EQ_INT(fx_row(tab, 0, "eval"), 1);
        CHECK_EQ_INT(fx_row(tab, 0, "attn"), 2);
    }
    tl_table_free(tab);
    o.sort = "calls";
    o.ascending = 0;
    o.top = 1;
    tab = tl_view_ranges(&t, &o, NULL);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 1);
        CHECK_EQ_INT(fx_row(tab, 0, "attn"), 0);
    }
    tl_table_free(tab);
    o.sort = "bogus";
    tl_error err = {{0}};
    tab = tl_view_ranges(&t, &o, &err);
    CHECK(tab == NULL);
    CHECK(strstr(err.msg, "bogus") != NULL);
    tl_trace_free(&t);
}

TEST(ranges_thread_sep)
{
    tl_trace t;
    fx_training(&t);
    tl_view_opts o = plain_opts();
    o.thread_sep = 1;
    o.top = 2;
    tl_table *tab = tl_view_ranges(&t, &o, NULL);
    CHECK(tab != NULL);
    if (!tab)
        return;
    int tc = tl_table_find_col(tab, "thread");
    int nc = tl_table_find_col(tab, "name");
    CHECK_EQ_INT(tc, 0);
    /* thread 1: attn 10 and eval 10 (softmax cut by --top 2); thread 2: attn 10 */
    CHECK_EQ_INT(tab->nrows, 3);
    if (tab->nrows == 3) {
        CHECK_EQ_INT(col_i(tab, 0, "thread"), 1);
        CHECK_STR(tab->cells[0 * tab->ncols + nc].s, "attn");
        CHECK_EQ_INT(col_i(tab, 0, "self_us"), MS(7));
        CHECK_EQ_INT(col_i(tab, 1, "thread"), 1);
        CHECK_STR(tab->cells[1 * tab->ncols + nc].s, "eval");
        CHECK_EQ_INT(col_i(tab, 2, "thread"), 2);
        CHECK_STR(tab->cells[2 * tab->ncols + nc].s, "attn");
        CHECK_EQ_INT(col_i(tab, 2, "self_us"), MS(10));
        CHECK_EQ_INT(col_i(tab, 2, "calls"), 1);
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(ranges_none)
{
    tl_trace t;
    fx_gpu(&t);
    tl_table *tab = tl_view_ranges(&t, plain(), NULL);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 0);
        CHECK(tab->nnotes == 1 && strstr(tab->notes[0], "No user-defined") != NULL);
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

/* Rows of equal totals come in the order of their first start, not in the order the threads'
 * tracks were made (a .tally file and its JSON export list threads differently). */
TEST(ranges_ties_in_order_of_first_start)
{
    for (int order = 0; order < 2; order++) {
        tl_trace t;
        tl_trace_init(&t);
        uint32_t t100, t200;
        fx_two_threads(&t, order, &t100, &t200);
        fx_event(&t, t200, TL_CAT_USER, "later", 5, 6, 0);
        fx_event(&t, t100, TL_CAT_USER, "earlier", 1, 2, 0);
        fx_event(&t, t100, TL_CAT_USER, "longest", 8, 10, 0);
        CHECK_EQ_INT(tl_trace_finish(&t), 0);
        tl_table *tab = tl_view_ranges(&t, plain(), NULL);
        static const char *const want[] = {"longest", "earlier", "later"};
        for (int k = 0; tab && k < 3; k++)
            CHECK_EQ_INT(fx_row(tab, 0, want[k]), k);
        CHECK(tab != NULL);
        tl_table_free(tab);
        tl_trace_free(&t);
    }
}

/* The report's table (made rows) writes what the held one writes, sorted by every key. */
TEST(ranges_made_rows_write_the_same)
{
    static const char *const keys[] = {NULL, "name", "calls", "self", "avg", "max", "min", "ratio"};
    tl_trace t;
    fx_training(&t);
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        for (int asc = 0; asc < 2; asc++) {
            tl_view_opts a = {.sort = keys[k], .ascending = asc, .top = asc ? 2 : 0};
            tl_view_opts b = a;
            b.made_rows = 1;
            tl_table *x = tl_view_ranges(&t, &a, NULL), *y = tl_view_ranges(&t, &b, NULL);
            CHECK(x && y && !x->rows && y->rows);
            CHECK(!x || !y || fx_same_writes(x, y));
            tl_table_free(x);
            tl_table_free(y);
        }
    tl_trace_free(&t);
}

int main(void)
{
    for (made_rows = 0; made_rows < 2; made_rows++) {
        RUN(ranges_numbers);
        RUN(ranges_sort_and_top);
        RUN(ranges_thread_sep);
        RUN(ranges_none);
        RUN(ranges_ties_in_order_of_first_start);
    }
    RUN(ranges_made_rows_write_the_same);
    return test_summary();
}
