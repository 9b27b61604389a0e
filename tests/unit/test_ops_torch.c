/*
 * test_ops_torch.c — the ops table against the table PyTorch itself printed.
 *
 * tests/data/torch_gen.py profiled a small MLP with Debian's python3-torch (1.13, CPU only),
 * exported the trace (the older exporter: a bare array of "X" events, integer microseconds,
 * no categories, shapes or memory) and printed key_averages().table() for several sort keys.
 * This test reads that trace with a loader of its own (so that the view is checked apart from
 * the JSON reader) and with tl_load, computes the ops view with the same sort key, and
 * compares every row: name, calls,
 * Self CPU, CPU total, CPU time avg and both percentages, and the footer total. The memory and
 * input-shape columns are not in that trace format and are checked by test_ops_table.c.
 */
#include "analysis/views.h"
#include "testlib.h"

#include <stdlib.h>
#include <string.h>

#define DATA TALLY_SOURCE_DIR "/tests/data/"

/* Load the legacy bare-array trace: {"name": "...", "ph": "X", "ts": N, "dur": N, "tid": N,
 * "pid": "CPU functions", "args": {}}. */
static int load_legacy(tl_trace *t, const char *path)
{
    size_t len;
    char *buf = test_read_file(path, &len);
    if (!buf)
        return -1;
    tl_trace_init(t);
    uint32_t track = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    int n = 0;
    for (char *p = buf; (p = strstr(p, "{\"name\": \"")) != NULL;) {
        p += 10;
        char *q = strchr(p, '"');
        if (!q)
            break;
        uint32_t name = tl_intern(&t->strings, p, (size_t)(q - p));
        char *ts = strstr(q, "\"ts\": "), *dur = strstr(q, "\"dur\": ");
        if (!ts || !dur)
            break;
        tl_event *e = tl_trace_add(t);
        e->name = name;
        e->track = track;
        e->ts = strtoll(ts + 6, NULL, 10) * 1000;
        e->dur = strtoll(dur + 7, NULL, 10) * 1000;
        e->cat = strncmp(p, "ProfilerStep#", 13) == 0 ? TL_CAT_STEP : TL_CAT_OPERATOR;
        n++;
        p = dur;
    }
    free(buf);
    return n > 0 && tl_trace_finish(t) == 0 ? 0 : -1;
}

/* "117.000us", "2.811ms", "1.5s" -> ns; the tolerance is half a unit of the last digit. */
static int64_t parse_time(const char *s, int64_t *tol)
{
    char *end;
    double v = strtod(s, &end);
    double mult = 1e3;
    if (!strncmp(end, "ms", 2))
        mult = 1e6;
    else if (!strncmp(end, "s", 1))
        mult = 1e9;
    *tol = (int64_t)(mult * 0.0005) + 1;
    return (int64_t)(v * mult + (v >= 0 ? 0.5 : -0.5));
}

/* One table as PyTorch printed it. */
typedef struct ptable {
    char key[64];
    int shapes;
    int ncols;
    char title[20][64];
    int nrows;
    char cell[128][20][64];
    char footer[64]; /* "2.869ms" */
} ptable;

/* Copy src into dst[n], cut to fit. */
static void copy_str(char *dst, size_t n, const char *src)
{
    size_t m = strlen(src);
    if (m >= n)
        m = n - 1;
    memcpy(dst, src, m);
    dst[m] = 0;
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n'))
        s[--n] = 0;
    size_t k = 0;
    while (s[k] == ' ')
        k++;
    memmove(s, s + k, strlen(s + k) + 1);
}

/* Split line by the column spans of the dashed separator sep. */
static int split(const char *sep, const char *line, char out[][64], int maxc)
{
    int c = 0;
    size_t i = 0, ll = strlen(line);
    while (sep[i] && sep[i] != '\n' && c < maxc) {
        while (sep[i] == ' ')
            i++;
        if (sep[i] != '-')
            break;
        size_t s = i;
        while (sep[i] == '-')
            i++;
        size_t w = i - s;
        char tmp[256] = "";
        if (s < ll) {
            size_t m = ll - s < w ? ll - s : w;
            if (m > sizeof tmp - 1)
                m = sizeof tmp - 1;
            memcpy(tmp, line + s, m);
            tmp[m] = 0;
        }
        trim(tmp);
        copy_str(out[c], 64, tmp);
        c++;
    }
    return c;
}

/* Parse every "=== key" block of the printed tables. */
static int parse_tables(const char *path, ptable *tabs, int max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[2048], sep[2048] = "";
    int nt = -1, state = 0; /* 0 before sep, 1 header, 2 after header sep, 3 rows */
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "=== ", 4)) {
            if (nt + 1 >= max)
                break;
            ptable *p = &tabs[++nt];
            memset(p, 0, sizeof *p);
            sscanf(line + 4, "%63s", p->key);
            p->shapes = strstr(line, "group_by_input_shape") != NULL;
            state = 0;
            continue;
        }
        if (nt < 0)
            continue;
        ptable *p = &tabs[nt];
        if (!strncmp(line, "---", 3)) {
            copy_str(sep, sizeof sep, line);
            state = state == 0 ? 1 : state == 1 ? 2 : state == 2 ? 3 : 4;
            continue;
        }
        if (state == 1) {
            p->ncols = split(sep, line, p->title, 20);
        } else if (state == 2 && p->nrows < 128) {
            split(sep, line, p->cell[p->nrows], 20);
            p->nrows++;
        } else if (!strncmp(line, "Self CPU time total: ", 21)) {
            copy_str(p->footer, sizeof p->footer, line + 21);
            trim(p->footer);
        }
    }
    fclose(f);
    return nt + 1;
}

static int col_of(const ptable *p, const char *title)
{
    for (int c = 0; c < p->ncols; c++)
        if (!strcmp(p->title[c], title))
            return c;
    return -1;
}

/* Our row whose name matches torch's (which cuts names at 52 chars + "..."). */
static int find_row(const tl_table *tab, const char *name)
{
    size_t n = strlen(name);
    int cut = n > 3 && !strcmp(name + n - 3, "...");
    for (int r = 0; r < tab->nrows; r++) {
        const char *s = tl_table_cell(tab, r, 0)->s; /* held or made rows */
        if (!s)
            continue;
        if (cut ? (strlen(s) >= n - 3 && !strncmp(s, name, n - 3)) : !strcmp(s, name))
            return r;
    }
    return -1;
}

static int64_t cell_i(const tl_table *tab, int r, const char *key)
{
    int c = tl_table_find_col(tab, key);
    return c < 0 ? -1 : tl_table_cell(tab, r, c)->i;
}

static double cell_d(const tl_table *tab, int r, const char *key)
{
    int c = tl_table_find_col(tab, key);
    return c < 0 ? -1 : tl_table_cell(tab, r, c)->d;
}

static ptable tabs[8];

/* Every comparison runs twice: the table held as cells, and made as it is read (the
 * report's and `tally ops`'s). */
static int made_rows;

static void check_block(const tl_trace *t, const ptable *p, int check_order)
{
    tl_view_opts vo = {0};
    vo.sort = p->key;
    vo.group_by_shape = p->shapes;
    vo.made_rows = made_rows;
    tl_error err = {{0}};
    tl_table *tab = tl_view_ops(t, &vo, &err);
    CHECK(tab != NULL);
    if (!tab) {
        fprintf(stderr, "  %s\n", err.msg);
        return;
    }
    CHECK_EQ_INT(tab->nrows, p->nrows);
    int cn = col_of(p, "Name"), cs = col_of(p, "Self CPU"), ct = col_of(p, "CPU total"),
        ca = col_of(p, "CPU time avg"), cc = col_of(p, "# of Calls"), csp = col_of(p, "Self CPU %"),
        ctp = col_of(p, "CPU total %");
    CHECK(cn >= 0 && cs >= 0 && ct >= 0 && ca >= 0 && cc >= 0 && csp >= 0 && ctp >= 0);
    if (cn < 0 || cs < 0 || ct < 0 || ca < 0 || cc < 0 || csp < 0 || ctp < 0) {
        tl_table_free(tab);
        return;
    }
    int bad = 0;
    for (int i = 0; i < p->nrows && bad < 5; i++) {
        const char *name = p->cell[i][cn];
        int r = find_row(tab, name);
        if (r < 0) {
            fprintf(stderr, "  [%s] row '%s' missing\n", p->key, name);
            bad++;
            test_failures++;
            continue;
        }
        if (check_order && r != i) {
            fprintf(stderr, "  [%s] row '%s' at %d, torch has it at %d\n", p->key, name, r, i);
            bad++;
            test_failures++;
        }
        int64_t tol;
        int64_t v = parse_time(p->cell[i][cs], &tol);
        CHECK_NEAR(cell_i(tab, r, "self_cpu_us"), v, tol);
        v = parse_time(p->cell[i][ct], &tol);
        CHECK_NEAR(cell_i(tab, r, "cpu_total_us"), v, tol);
        v = parse_time(p->cell[i][ca], &tol);
        CHECK_NEAR(cell_i(tab, r, "cpu_avg_us"), v, tol);
        CHECK_EQ_INT(cell_i(tab, r, "calls"), atoll(p->cell[i][cc]));
        CHECK_NEAR(cell_d(tab, r, "self_cpu_pct"), atof(p->cell[i][csp]), 0.0051);
        CHECK_NEAR(cell_d(tab, r, "cpu_total_pct"), atof(p->cell[i][ctp]), 0.0051);
    }
    /* the footer: Self CPU time total */
    int64_t tol, total = parse_time(p->footer, &tol), sum = 0;
    for (int r = 0; r < tab->nrows; r++)
        sum += cell_i(tab, r, "self_cpu_us");
    CHECK_NEAR(sum, total, tol);
    int found = 0;
    for (int k = 0; k < tab->nnotes; k++)
        if (strstr(tab->notes[k], "Self CPU time total: ") && strstr(tab->notes[k], p->footer))
            found = 1;
    CHECK(found);
    tl_table_free(tab);
}

TEST(ops_matches_torch_tables)
{
    tl_trace t;
    int rc = load_legacy(&t, DATA "torch_mlp.trace.json");
    CHECK_EQ_INT(rc, 0);
    if (rc != 0)
        return;
    int nt = parse_tables(DATA "torch_mlp.tables.txt", tabs, 8);
    CHECK(nt >= 5);
    int checked = 0;
    for (int i = 0; i < nt; i++) {
        /* the trace has neither memory nor shapes: tables sorted by memory are compared row
         * by row but not in order, the shape-grouped one is skipped */
        if (tabs[i].shapes)
            continue;
        int order = strstr(tabs[i].key, "memory") == NULL;
        check_block(&t, &tabs[i], order);
        checked++;
    }
    CHECK(checked >= 5);
    tl_trace_free(&t);
}

/* The same comparison with the trace read by tally's own reader (tl_load). */
TEST(ops_matches_torch_tables_through_reader)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    int rc = tl_load(&t, DATA "torch_mlp.trace.json", 0, &err);
    CHECK_EQ_INT(rc, 0);
    if (rc != 0) {
        fprintf(stderr, "  %s\n", err.msg);
        tl_trace_free(&t);
        return;
    }
    if (!t.finished)
        tl_trace_finish(&t);
    int nt = parse_tables(DATA "torch_mlp.tables.txt", tabs, 8);
    for (int i = 0; i < nt; i++)
        if (!tabs[i].shapes)
            check_block(&t, &tabs[i], strstr(tabs[i].key, "memory") == NULL);
    tl_trace_free(&t);
}

/* The step rows: three ProfilerStep#N events aggregate into one "ProfilerStep*" row. */
TEST(ops_steps_aggregate)
{
    tl_trace t;
    if (load_legacy(&t, DATA "torch_mlp.trace.json") != 0) {
        CHECK(0);
        return;
    }
    tl_error err;
    tl_table *tab = tl_view_ops(&t, NULL, &err);
    CHECK(tab != NULL);
    if (tab) {
        int r = find_row(tab, "ProfilerStep*");
        CHECK(r >= 0);
        if (r >= 0)
            CHECK_EQ_INT(cell_i(tab, r, "calls"), 3);
        for (int k = 0; k < tab->nrows; k++)
            CHECK(strncmp(tl_table_cell(tab, k, 0)->s, "ProfilerStep#", 13) != 0);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

int main(void)
{
    for (made_rows = 0; made_rows < 2; made_rows++) {
        RUN(ops_matches_torch_tables);
        RUN(ops_matches_torch_tables_through_reader);
    }
    RUN(ops_steps_aggregate);
    return test_summary();
}
