/*
 * test_report_stream.c — what lets a report with a row per distinct name hold less: cells that
 * borrow the trace's strings, tables sized to their rows, a report that writes each view as
 * it is computed (and stops cleanly when one fails), and views whose names are the trace's.
 * The ASan build (build-*-asan) is what catches a borrowed string freed or read too late.
 */
#include "json_check.h"
#include "report/summary.h"
#include "testlib.h"
#include "views_fixture.h"

#include <stdlib.h>

static const tl_col cols[] = {
    {"Name", "name", TL_COL_STR, 1},
    {"Calls", "calls", TL_COL_INT, 0},
};

TEST(borrowed_cells_render_sort_and_are_not_freed)
{
    /* a stack buffer: freeing it (ASan: bad-free) or copying it (then changing it would not
     * show) would both be caught */
    char name_b[] = "bravo", name_a[] = "alpha";
    tl_table *t = tl_table_new("Borrow", "borrow", cols, 2);
    int r = tl_table_add_row(t);
    tl_table_str_ref(t, r, 0, name_b);
    tl_table_int(t, r, 1, 2);
    r = tl_table_add_row(t);
    tl_table_str_ref(t, r, 0, name_a);
    tl_table_int(t, r, 1, 1);
    r = tl_table_add_row(t);
    tl_table_str(t, r, 0, "charlie"); /* an owned string beside them */
    tl_table_int(t, r, 1, 3);
    CHECK(t->cells[0].s == name_b); /* borrowed, not copied */
    tl_table_sort(t, 0, 0, 0);
    CHECK(t->cells[0].s == name_a && t->cells[2].s == name_b); /* the pointer moved with it */
    CHECK_EQ_INT(t->cells[1].i, 1);
    name_a[0] = 'A'; /* the table shows the string as it is now */
    char *txt = fx_render(t, TL_FMT_TEXT), *csv = fx_render(t, TL_FMT_CSV),
         *js = fx_render(t, TL_FMT_JSON);
    CHECK(txt && strstr(txt, "Alpha") && strstr(txt, "bravo") && strstr(txt, "charlie"));
    CHECK(csv && strstr(csv, "name,calls\nAlpha,1\nbravo,2\ncharlie,3\n"));
    CHECK(js && json_valid(js) && strstr(js, "\"Alpha\""));
    free(txt);
    free(csv);
    free(js);
    /* an owned cell that becomes borrowed frees its copy; a borrowed one that becomes owned
     * does not free what it borrowed (ASan and LeakSanitizer check both) */
    tl_table_str_ref(t, 2, 0, name_b);
    CHECK(t->cells[2 * 2].s == name_b);
    tl_table_str(t, 0, 0, "owned again");
    CHECK(t->cells[0].s != name_a && strcmp(t->cells[0].s, "owned again") == 0);
    tl_table_strf(t, 1, 0, "n%d", 7);
    CHECK(strcmp(t->cells[2].s, "n7") == 0);
    tl_table_str_ref(t, 1, 0, NULL); /* NULL reads as "" like tl_table_str's */
    CHECK(t->cells[2].set && strcmp(t->cells[2].s, "") == 0);
    tl_table_truncate(t, 1); /* frees the owned rows it cuts, not the borrowed */
    CHECK_EQ_INT(t->nrows, 1);
    tl_table_free(t);
}

TEST(reserve_sizes_the_table_to_its_rows)
{
    tl_table *t = tl_table_new("Sized", "sized", cols, 2);
    CHECK_EQ_INT(tl_table_reserve(t, 1000), 0);
    CHECK_EQ_INT(t->cap_rows, 1000);
    for (int i = 0; i < 1000; i++) {
        int r = tl_table_add_row(t);
        tl_table_int(t, r, 1, i);
    }
    CHECK_EQ_INT(t->cap_rows, 1000);          /* no doubling past the rows asked for */
    CHECK_EQ_INT(tl_table_reserve(t, 10), 0); /* never shrinks under its rows */
    CHECK_EQ_INT(t->nrows, 1000);
    CHECK_EQ_INT(tl_table_reserve(t, -1), -1);
    int r = tl_table_add_row(t); /* grows again past the reserve */
    CHECK_EQ_INT(r, 1000);
    CHECK_EQ_INT(t->cells[999 * 2 + 1].i, 999); /* rows survive the moves */
    tl_table_free(t);
}

TEST(aborted_output_is_not_a_whole_report)
{
    tl_table *t = tl_table_new("Part", "part", cols, 2);
    tl_table_str(t, tl_table_add_row(t), 0, "x");
    for (int fmt = TL_FMT_TEXT; fmt <= TL_FMT_JSON; fmt++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        tl_out o;
        tl_out_begin(&o, f, (tl_format)fmt, TL_UNIT_AUTO);
        tl_out_table(&o, t);
        tl_out_abort(&o);
        CHECK(o.priv == NULL);
        fclose(f);
        if (fmt == TL_FMT_TEXT)
            CHECK(buf && strstr(buf, "Part")); /* what was written stays */
        else if (fmt == TL_FMT_CSV)
            CHECK(buf && buf[0] == '\0'); /* held for the end: dropped */
        else
            CHECK(buf && strstr(buf, "\"part\"") && !json_valid(buf)); /* left unclosed */
        free(buf);
    }
    tl_table_free(t);
}

/* Several tables in CSV: one header, the union of their columns in order of first appearance
 * (a key twice in one table is two columns), a later table's new columns empty on the earlier
 * rows; the rows wait in the spool until the end. */
TEST(csv_tables_share_one_header)
{
    static const tl_col a_cols[] = {{"Name", "name", TL_COL_STR, 1},
                                    {"Calls", "calls", TL_COL_INT, 0}};
    static const tl_col b_cols[] = {{"Calls", "calls", TL_COL_INT, 0},
                                    {"Extra", "extra", TL_COL_INT, 0},
                                    {"Calls", "calls", TL_COL_INT, 0},
                                    {"Name", "name", TL_COL_STR, 1}};
    tl_table *a = tl_table_new("A", "a", a_cols, 2), *b = tl_table_new("B", "b", b_cols, 4);
    int r = tl_table_add_row(a);
    tl_table_str(a, r, 0, "a,1");
    tl_table_int(a, r, 1, 1);
    r = tl_table_add_row(a); /* no name */
    tl_table_int(a, r, 1, 2);
    r = tl_table_add_row(b);
    tl_table_int(b, r, 0, 5);
    tl_table_int(b, r, 1, 6);
    tl_table_int(b, r, 2, 7);
    tl_table_str(b, r, 3, "x");
    tl_table_indent(b, r, 3, 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tl_out o;
    tl_out_begin(&o, f, TL_FMT_CSV, TL_UNIT_AUTO);
    tl_out_table(&o, a);
    tl_out_table(&o, b);
    tl_out_table(&o, a); /* the same key again: "a_2" */
    tl_out_end(&o);
    fclose(f);
    CHECK_STR(buf, "view,name,calls,extra,calls,name_level\n"
                   "a,\"a,1\",1,,,\n"
                   "a,,2,,,\n"
                   "b,x,5,6,7,1\n"
                   "a_2,\"a,1\",1,,,\n"
                   "a_2,,2,,,\n");
    free(buf);
    tl_table_free(a);
    tl_table_free(b);
}

static char *report(const tl_trace *t, const tl_report_opts *o, int *rc, tl_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    *rc = tl_report_write(f, t, o, err);
    fclose(f);
    return buf;
}

/* Many distinct names, as the ops and ranges views make a row per name (borrowed cells). */
static void many_names(tl_trace *t, int n)
{
    tl_trace_init(t);
    uint32_t a = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    char name[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "name%05d", i);
        fx_event(t, a, TL_CAT_USER, name, 2.0 * i, 2.0 * i + 1 + (i % 7), 0);
    }
    tl_trace_finish(t);
}

TEST(streamed_report_is_each_view_in_order)
{
    tl_trace t;
    many_names(&t, 2000);
    tl_report_opts o;
    memset(&o, 0, sizeof o);
    tl_error err = {{0}};
    int rc;
    /* the report of two views is the two one-view reports one after the other (text puts a
     * blank line between tables) */
    o.views = "ranges,ops";
    char *both = report(&t, &o, &rc, &err);
    CHECK_EQ_INT(rc, 0);
    o.views = "ranges";
    char *r1 = report(&t, &o, &rc, &err);
    o.views = "ops";
    char *r2 = report(&t, &o, &rc, &err);
    size_t n1 = strlen(r1);
    CHECK(strncmp(both, r1, n1) == 0 && both[n1] == '\n' && strcmp(both + n1 + 1, r2) == 0);
    CHECK(strstr(both, "name01999") && strstr(both, "name00000"));
    free(both);
    free(r1);
    free(r2);
    /* every name once per view, in json as well */
    o.views = "ranges,ops";
    o.fmt = TL_FMT_JSON;
    char *js = report(&t, &o, &rc, &err);
    CHECK_EQ_INT(rc, 0);
    CHECK(js && json_valid(js));
    int seen = 0;
    for (const char *p = js; (p = strstr(p, "\"name01234\"")); p++)
        seen++;
    CHECK_EQ_INT(seen, 2);
    free(js);
    /* a --sort key only a later view takes: the views before it are written too, in their
     * own order, and the key sorts the view that takes it */
    o.fmt = TL_FMT_CSV;
    o.views = "overview,ranges";
    o.vo.sort = "self_us";
    o.vo.ascending = 1;
    o.vo.top = 3;
    char *csv = report(&t, &o, &rc, &err);
    CHECK_EQ_INT(rc, 0);
    CHECK(csv && strncmp(csv, "view,", 5) == 0);
    const char *ov = csv ? strstr(csv, "\noverview,") : NULL,
               *rg = csv ? strstr(csv, "\nranges,") : NULL;
    CHECK(ov && rg && ov < rg);
    CHECK(rg && strstr(rg, "name00000,")); /* the shortest first: 1 ms */
    free(csv);
    /* and a key none takes writes nothing */
    o.vo.sort = "nonsense";
    char *none = report(&t, &o, &rc, &err);
    CHECK_EQ_INT(rc, -1);
    CHECK(none == NULL || none[0] == '\0');
    free(none);
    tl_trace_free(&t);
}

/* More rows than the views give back at a time (65536): every name once per thread group, in
 * ranges (thread_sep, so the second group finds its slots reset) and in ops. */
TEST(views_with_more_names_than_a_release_step)
{
    enum { N = 70000 };
    tl_trace t;
    tl_trace_init(&t);
    char name[32];
    for (int th = 1; th <= 2; th++) {
        uint32_t a = tl_trace_track(&t, TL_TRACK_THREAD, 1, th, -1);
        for (int i = 0; i < N; i++) {
            snprintf(name, sizeof name, "name%06d", i);
            fx_event(&t, a, TL_CAT_USER, name, 2.0 * i, 2.0 * i + 1 + (i % 5), 0);
        }
    }
    tl_trace_finish(&t);
    tl_view_opts o = {0};
    o.thread_sep = 1;
    tl_error err = {{0}};
    tl_table *tab = tl_view_ranges(&t, &o, &err);
    CHECK(tab != NULL);
    unsigned char *seen = calloc(2 * N, 1);
    int bad = 0;
    for (int r = 0; tab && seen && r < tab->nrows; r++) {
        int th = (int)tab->cells[(size_t)r * tab->ncols].i, i = -1;
        sscanf(tab->cells[(size_t)r * tab->ncols + 1].s, "name%d", &i);
        bad += th < 1 || th > 2 || i < 0 || i >= N || seen[(th - 1) * N + i]++ ||
               tab->cells[(size_t)r * tab->ncols + 2].i != 1;
        bad += r > 0 && r != N &&
               tab->cells[(size_t)r * tab->ncols + 3].i >
                   tab->cells[(size_t)(r - 1) * tab->ncols + 3].i; /* by total */
    }
    CHECK_EQ_INT(tab ? tab->nrows : 0, 2 * N);
    CHECK_EQ_INT(bad, 0);
    tl_table_free(tab);
    memset(seen, 0, 2 * N);
    tab = tl_view_ops(&t, NULL, &err);
    CHECK(tab != NULL);
    bad = 0;
    for (int r = 0; tab && r < tab->nrows; r++) {
        int i = -1;
        sscanf(tab->cells[(size_t)r * tab->ncols].s, "name%d", &i);
        bad += i < 0 || i >= N || seen[i]++;
    }
    CHECK_EQ_INT(tab ? tab->nrows : 0, N); /* one row per name over both threads */
    CHECK_EQ_INT(bad, 0);
    tl_table_free(tab);
    free(seen);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(borrowed_cells_render_sort_and_are_not_freed);
    RUN(reserve_sizes_the_table_to_its_rows);
    RUN(aborted_output_is_not_a_whole_report);
    RUN(csv_tables_share_one_header);
    RUN(streamed_report_is_each_view_in_order);
    RUN(views_with_more_names_than_a_release_step);
    return test_summary();
}
