/*
 * test_table.c — the table renderer: time/byte formatting, text alignment, sorting, lookup of
 * columns, and that CSV and JSON come out parseable with plain numbers.
 */
#include "report/table.h"
#include "json_check.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static const tl_col demo_cols[] = {
    {"Name", "name", TL_COL_STR, 1},          {"Calls", "calls", TL_COL_INT, 0},
    {"Total", "total_us", TL_COL_TIME, 0},    {"Ratio", "ratio_pct", TL_COL_PCT, 0},
    {"Memory", "mem_bytes", TL_COL_BYTES, 0}, {"Rate", "rate", TL_COL_RATE, 0},
};

static tl_table *demo_table(void)
{
    tl_table *t = tl_table_new("Demo", "demo", demo_cols, 6);
    int r = tl_table_add_row(t);
    tl_table_str(t, r, 0, "alpha");
    tl_table_int(t, r, 1, 3);
    tl_table_time(t, r, 2, 1500);
    tl_table_pct(t, r, 3, 12.5);
    tl_table_bytes(t, r, 4, 1536);
    tl_table_float(t, r, 5, 2.0);
    r = tl_table_add_row(t);
    tl_table_str(t, r, 0, "a much longer, \"quoted\" name");
    tl_table_indent(t, r, 0, 1);
    tl_table_int(t, r, 1, 10);
    tl_table_time(t, r, 2, 2500000);
    tl_table_pct(t, r, 3, 50);
    /* memory and rate left empty */
    r = tl_table_add_row(t);
    tl_table_str(t, r, 0, "beta");
    tl_table_int(t, r, 1, 1);
    tl_table_time(t, r, 2, 3000000000LL);
    tl_table_pct(t, r, 3, 37.5);
    tl_table_bytes(t, r, 4, 3LL << 20);
    tl_table_float(t, r, 5, 0.25);
    tl_table_note(t, "a note with %d", 42);
    return t;
}

static char *render(const tl_table *t, tl_format fmt, tl_unit unit)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tl_out o;
    tl_out_begin(&o, f, fmt, unit);
    tl_out_table(&o, t);
    tl_out_end(&o);
    fclose(f);
    return buf;
}

/* ---- tests -------------------------------------------------------------------------------- */

TEST(time_format_auto_scales_like_pytorch)
{
    char b[64];
    tl_fmt_time(b, sizeof b, 1500, TL_UNIT_AUTO);
    CHECK_STR(b, "1.500us");
    tl_fmt_time(b, sizeof b, 2500000, TL_UNIT_AUTO);
    CHECK_STR(b, "2.500ms");
    tl_fmt_time(b, sizeof b, 3000000000LL, TL_UNIT_AUTO);
    CHECK_STR(b, "3.000s");
    tl_fmt_time(b, sizeof b, 999, TL_UNIT_AUTO);
    CHECK_STR(b, "0.999us");
    tl_fmt_time(b, sizeof b, 0, TL_UNIT_AUTO);
    CHECK_STR(b, "0.000us");
    tl_fmt_time(b, sizeof b, 1000000, TL_UNIT_AUTO);
    CHECK_STR(b, "1.000ms");
    tl_fmt_time(b, sizeof b, 2500000, TL_UNIT_US);
    CHECK_STR(b, "2500.000us");
    tl_fmt_time(b, sizeof b, 1500, TL_UNIT_MS);
    CHECK_STR(b, "0.002ms");
    tl_fmt_time(b, sizeof b, 1500, TL_UNIT_NS);
    CHECK_STR(b, "1500ns");
    tl_fmt_time(b, sizeof b, 2500000, TL_UNIT_S);
    CHECK_STR(b, "0.003s");
}

TEST(bytes_format_uses_1024_base)
{
    char b[64];
    tl_fmt_bytes(b, sizeof b, 512);
    CHECK_STR(b, "512 B");
    tl_fmt_bytes(b, sizeof b, 1536);
    CHECK_STR(b, "1.50 KB");
    tl_fmt_bytes(b, sizeof b, 3LL << 20);
    CHECK_STR(b, "3.00 MB");
    tl_fmt_bytes(b, sizeof b, 5LL << 30);
    CHECK_STR(b, "5.00 GB");
    tl_fmt_bytes(b, sizeof b, -2048);
    CHECK_STR(b, "-2.00 KB");
}

TEST(parse_format_and_unit)
{
    CHECK_EQ_INT(tl_format_parse("text"), TL_FMT_TEXT);
    CHECK_EQ_INT(tl_format_parse("csv"), TL_FMT_CSV);
    CHECK_EQ_INT(tl_format_parse("json"), TL_FMT_JSON);
    CHECK_EQ_INT(tl_format_parse("xml"), -1);
    CHECK_EQ_INT(tl_format_parse(NULL), -1);
    CHECK_EQ_INT(tl_unit_parse("auto"), TL_UNIT_AUTO);
    CHECK_EQ_INT(tl_unit_parse("ns"), TL_UNIT_NS);
    CHECK_EQ_INT(tl_unit_parse("us"), TL_UNIT_US);
    CHECK_EQ_INT(tl_unit_parse("ms"), TL_UNIT_MS);
    CHECK_EQ_INT(tl_unit_parse("s"), TL_UNIT_S);
    CHECK_EQ_INT(tl_unit_parse("min"), -1);
}

/* Every line of the table body has its columns at the same offsets: right-aligned numbers
 * end where the header's titles end, the separator's dashes span each column exactly. */
TEST(text_columns_line_up)
{
    tl_table *t = demo_table();
    char *out = render(t, TL_FMT_TEXT, TL_UNIT_AUTO);
    CHECK(strstr(out, "Demo") != NULL);
    CHECK(strstr(out, "1.500us") != NULL);
    CHECK(strstr(out, "2.500ms") != NULL);
    CHECK(strstr(out, "3.000s") != NULL);
    CHECK(strstr(out, "12.50%") != NULL);
    CHECK(strstr(out, "1.50 KB") != NULL);
    CHECK(strstr(out, "a note with 42") != NULL);
    /* lines: rule, header, dashes, 3 rows, dashes, note */
    char *lines[16];
    int n = 0;
    for (char *p = strtok(out, "\n"); p && n < 16; p = strtok(NULL, "\n"))
        lines[n++] = p;
    CHECK_EQ_INT(n, 8);
    if (n == 8) {
        const char *hdr = lines[1], *sep = lines[2];
        CHECK(strncmp(hdr, "Name", 4) == 0);
        /* The end of each numeric column in the header must be the end of the same column in
         * every row: find "Calls" end in header and check the row has a digit there and a
         * blank (or end) just after. */
        const char *titles[] = {"Calls", "Total", "Ratio", "Memory", "Rate"};
        for (int k = 0; k < 5; k++) {
            const char *h = strstr(hdr, titles[k]);
            CHECK(h != NULL);
            if (!h)
                continue;
            size_t end = (size_t)(h - hdr) + strlen(titles[k]); /* one past the last char */
            CHECK(sep[end - 1] == '-');
            CHECK(sep[end] == ' ' || sep[end] == '\0');
            for (int r = 3; r <= 5; r++) {
                CHECK(strlen(lines[r]) >= end);
                if (strlen(lines[r]) < end)
                    continue;
                CHECK(lines[r][end - 1] != ' ');
                CHECK(lines[r][end] == ' ' || lines[r][end] == '\0');
            }
        }
        /* The indented name starts with two blanks; the missing values print "-". */
        CHECK(strncmp(lines[4], "  a much longer", 15) == 0);
        CHECK(strstr(lines[4], " -") != NULL);
        /* No trailing blanks anywhere. */
        for (int i = 0; i < n; i++)
            CHECK(lines[i][strlen(lines[i]) - 1] != ' ');
    }
    free(out);
    tl_table_free(t);
}

TEST(text_forced_unit)
{
    tl_table *t = demo_table();
    char *out = render(t, TL_FMT_TEXT, TL_UNIT_MS);
    CHECK(strstr(out, "0.002ms") != NULL);
    CHECK(strstr(out, "2.500ms") != NULL);
    CHECK(strstr(out, "3000.000ms") != NULL);
    CHECK(strstr(out, "Time unit: ms") != NULL);
    free(out);
    tl_table_free(t);
}

TEST(text_long_names_are_cut)
{
    static const tl_col cols[] = {{"Name", "name", TL_COL_STR, 1}, {"N", "n", TL_COL_INT, 0}};
    tl_table *t = tl_table_new("Long", "long", cols, 2);
    char name[200];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    int r = tl_table_add_row(t);
    tl_table_str(t, r, 0, name);
    tl_table_int(t, r, 1, 7);
    r = tl_table_add_row(t);
    tl_table_str(t, r, 0, "line\nbreak");
    tl_table_int(t, r, 1, 8);
    char *out = render(t, TL_FMT_TEXT, TL_UNIT_AUTO);
    CHECK(strstr(out, "...") != NULL);
    CHECK(strstr(out, "line break") != NULL); /* newline inside a name does not break rows */
    int maxlen = 0;
    for (char *p = strtok(out, "\n"); p; p = strtok(NULL, "\n"))
        if ((int)strlen(p) > maxlen)
            maxlen = (int)strlen(p);
    CHECK(maxlen < 100);
    free(out);
    tl_table_free(t);
}

TEST(csv_has_plain_numbers)
{
    tl_table *t = demo_table();
    char *out = render(t, TL_FMT_CSV, TL_UNIT_MS); /* unit must not affect csv */
    char *lines[16];
    int n = 0;
    for (char *p = strtok(out, "\n"); p && n < 16; p = strtok(NULL, "\n"))
        lines[n++] = p;
    CHECK_EQ_INT(n, 4); /* one header row, no title or comment line */
    if (n == 4) {
        CHECK_STR(lines[0], "name,name_level,calls,total_us,ratio_pct,mem_bytes,rate");
        CHECK_STR(lines[1], "alpha,0,3,1.5,12.5,1536,2");
        CHECK_STR(lines[2], "\"a much longer, \"\"quoted\"\" name\",1,10,2500,50,,");
        CHECK_STR(lines[3], "beta,0,1,3000000,37.5,3145728,0.25");
    }
    free(out);
    tl_table_free(t);
}

TEST(json_is_valid_and_numeric)
{
    tl_table *t = demo_table();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tl_out o;
    tl_out_begin(&o, f, TL_FMT_JSON, TL_UNIT_AUTO);
    tl_out_table(&o, t);
    tl_out_text(&o, "hello \"world\"\n");
    tl_out_table(&o, t); /* same key twice: must not produce a duplicate key */
    tl_out_end(&o);
    fclose(f);
    CHECK(json_valid(buf));
    CHECK(strstr(buf, "\"demo\":") != NULL);
    CHECK(strstr(buf, "\"demo_2\":") != NULL);
    CHECK(strstr(buf, "\"total_us\": 1.5") != NULL);
    CHECK(strstr(buf, "\"total_us\": 3000000") != NULL);
    CHECK(strstr(buf, "\"mem_bytes\": null") != NULL);
    CHECK(strstr(buf, "\"ratio_pct\": 37.5") != NULL);
    CHECK(strstr(buf, "\"messages\": [\"hello \\\"world\\\"\"]") != NULL);
    CHECK(strstr(buf, "\"notes\": [\"a note with 42\"]") != NULL);
    free(buf);
    tl_table_free(t);

    /* An empty output and a table with invalid UTF-8 and control bytes stay valid JSON. */
    static const tl_col cols[] = {{"Name", "name", TL_COL_STR, 1}};
    t = tl_table_new("Bad", "bad", cols, 1);
    int r = tl_table_add_row(t);
    tl_table_str(t, r, 0, "a\xff\x01z\xc3\xa9 \"q\" b\\s\nn\tt\x7f end");
    f = open_memstream(&buf, &len);
    tl_out_begin(&o, f, TL_FMT_JSON, TL_UNIT_AUTO);
    tl_out_table(&o, t);
    tl_out_end(&o);
    fclose(f);
    CHECK(json_valid(buf));
    /* every byte: plain runs as they are, escapes, invalid UTF-8 replaced, valid kept */
    CHECK(strstr(buf, "\"a\\ufffd\\u0001z\xc3\xa9 \\\"q\\\" b\\\\s\\nn\\tt\\u007f end\"") != NULL);
    free(buf);
    tl_table_free(t);

    f = open_memstream(&buf, &len);
    tl_out_begin(&o, f, TL_FMT_JSON, TL_UNIT_AUTO);
    tl_out_end(&o);
    fclose(f);
    CHECK(json_valid(buf));
    free(buf);
}

TEST(sort_is_stable_and_puts_empty_last)
{
    tl_table *t = demo_table();
    int c = tl_table_find_col(t, "mem_bytes");
    CHECK_EQ_INT(c, 4);
    tl_table_sort(t, c, 1, 0);
    CHECK_STR(t->cells[0 * 6].s, "beta");
    CHECK_STR(t->cells[1 * 6].s, "alpha");
    CHECK(!t->cells[2 * 6 + 4].set);
    tl_table_sort(t, c, 0, 0);
    CHECK_STR(t->cells[0 * 6].s, "alpha");
    CHECK_STR(t->cells[1 * 6].s, "beta");
    CHECK(!t->cells[2 * 6 + 4].set);
    /* Equal keys keep their order (stable). */
    static const tl_col cols[] = {{"K", "k", TL_COL_INT, 0}, {"V", "v", TL_COL_INT, 0}};
    tl_table *s = tl_table_new("S", "s", cols, 2);
    for (int i = 0; i < 50; i++) {
        int r = tl_table_add_row(s);
        tl_table_int(s, r, 0, i % 3);
        tl_table_int(s, r, 1, i);
    }
    tl_table_sort(s, 0, 1, 0);
    int ok = 1;
    for (int r = 1; r < 50; r++) {
        int64_t k0 = s->cells[(r - 1) * 2].i, k1 = s->cells[r * 2].i;
        int64_t v0 = s->cells[(r - 1) * 2 + 1].i, v1 = s->cells[r * 2 + 1].i;
        if (k0 < k1 || (k0 == k1 && v0 > v1))
            ok = 0;
    }
    CHECK(ok);
    /* Sorting from row 10 leaves rows 0..9 alone. */
    tl_table_sort(s, 1, 0, 10);
    CHECK_EQ_INT(s->cells[0 * 2 + 1].i, 2);
    tl_table_truncate(s, 5);
    CHECK_EQ_INT(s->nrows, 5);
    tl_table_free(s);
    /* Names sort case-insensitively. */
    tl_table_sort(t, 0, 0, 0);
    CHECK_STR(t->cells[0].s, "a much longer, \"quoted\" name");
    tl_table_free(t);
}

/* The sort moves rows in place, a cycle of the permutation at a time: every row arrives whole
 * (its name still beside its own number), in order, each once. */
TEST(sort_moves_whole_rows_in_place)
{
    static const tl_col cols[] = {{"Name", "name", TL_COL_STR, 1},
                                  {"Key", "key", TL_COL_INT, 0},
                                  {"Ratio", "ratio_pct", TL_COL_PCT, 0}};
    tl_table *t = tl_table_new("T", "t", cols, 3);
    CHECK(t != NULL);
    if (!t)
        return;
    enum { N = 1000 };
    for (int i = 0; i < N; i++) {
        int r = tl_table_add_row(t);
        int64_t key = (int64_t)((i * 7919) % N); /* a permutation of 0..N-1 */
        tl_table_strf(t, r, 0, "row%lld", (long long)key);
        tl_table_int(t, r, 1, key);
        tl_table_pct(t, r, 2, (double)key / 10);
    }
    tl_table_sort(t, 1, 0, 1); /* row 0 stays */
    int ok = 1;
    for (int r = 0; r < N; r++) {
        const tl_cell *c = &t->cells[(size_t)r * 3];
        char want[32];
        snprintf(want, sizeof want, "row%lld", (long long)c[1].i);
        ok &= !strcmp(c[0].s, want) && c[2].d == (double)c[1].i / 10;
        if (r > 1)
            ok &= c[1].i == t->cells[(size_t)(r - 1) * 3 + 1].i + 1;
    }
    CHECK(ok);
    CHECK_EQ_INT(t->cells[1].i, 0); /* row 0 held key 0 and was left out */
    CHECK_EQ_INT(t->cells[(size_t)(N - 1) * 3 + 1].i, N - 1);
    tl_table_free(t);
}

TEST(find_col_by_key_title_or_base)
{
    tl_table *t = demo_table();
    CHECK_EQ_INT(tl_table_find_col(t, "total_us"), 2);
    CHECK_EQ_INT(tl_table_find_col(t, "TOTAL"), 2);
    CHECK_EQ_INT(tl_table_find_col(t, "ratio"), 3);
    CHECK_EQ_INT(tl_table_find_col(t, "Calls"), 1);
    CHECK_EQ_INT(tl_table_find_col(t, "nope"), -1);
    CHECK_EQ_INT(tl_table_find_col(t, ""), -1);
    tl_table_free(t);
}

/* A column no row fills is left out of the text (GPU columns of a CPU-only trace) but kept, with
 * empty values, in csv and json. */
TEST(empty_column_left_out_of_text_only)
{
    tl_table *t = tl_table_new("Demo", "demo", demo_cols, 6);
    int r = tl_table_add_row(t);
    tl_table_str(t, r, 0, "alpha");
    tl_table_int(t, r, 1, 3);
    tl_table_time(t, r, 2, 1500);
    char *txt = render(t, TL_FMT_TEXT, TL_UNIT_AUTO);
    CHECK(txt && strstr(txt, "Calls") && strstr(txt, "Total"));
    CHECK(txt && !strstr(txt, "Ratio") && !strstr(txt, "Memory") && !strstr(txt, "Rate"));
    CHECK(txt && strstr(txt, "alpha      3  1.500us\n")); /* no trailing blank columns */
    char *csv = render(t, TL_FMT_CSV, TL_UNIT_AUTO);
    CHECK(csv && strstr(csv, "name,calls,total_us,ratio_pct,mem_bytes,rate\n"));
    CHECK(csv && strstr(csv, "alpha,3,1.5,,,\n"));
    free(txt);
    free(csv);
    tl_table_free(t);
}

TEST(chain_is_freed)
{
    tl_table *a = demo_table();
    a->next = demo_table();
    a->next->next = demo_table();
    tl_table_free(a); /* ASan/valgrind would report a leak otherwise */
    CHECK(1);
}

/* ---- tables of made rows ---------------------------------------------------------------- */

/* A row per index: names (owned and borrowed, equal and different, one indented), times with
 * ties, empty cells, a NaN: every case the sort and the renderers distinguish. */
enum { MADE_N = 203 };

static void put_made(tl_table *t, int r, int i)
{
    static const char *names[] = {"gamma", "Alpha", "beta", "alpha", "delta"};
    if (i % 3 == 0)
        tl_table_strf(t, r, 0, "%s-%d", names[i % 5], i % 7);
    else
        tl_table_str_ref(t, r, 0, names[i % 5]);
    if (i % 11 == 4)
        tl_table_indent(t, r, 0, 1 + i % 2);
    tl_table_int(t, r, 1, i % 13);
    if (i % 17)
        tl_table_time(t, r, 2, (int64_t)(i % 9) * 1500);
    tl_table_pct(t, r, 3, i % 23 == 5 ? NAN : (double)(i % 10) * 2.5);
    if (i % 4)
        tl_table_bytes(t, r, 4, (int64_t)i << 12);
    tl_table_float(t, r, 5, (double)(i % 6) / 4);
}

static void fill_made(const void *ctx, int row, tl_table *one)
{
    (void)ctx;
    put_made(one, 0, row);
}

static int made_freed;
static void free_made(void *ctx)
{
    made_freed++;
    free(ctx);
}

static tl_table *made_pair(tl_table **held)
{
    *held = tl_table_new("Made", "made", demo_cols, 6);
    for (int i = 0; i < MADE_N; i++)
        put_made(*held, tl_table_add_row(*held), i);
    tl_table_note(*held, "a note");
    tl_table *m =
        tl_table_new_rows("Made", "made", demo_cols, 6, MADE_N, fill_made, malloc(1), free_made);
    tl_table_note(m, "a note");
    return m;
}

/* A table of made rows writes, sorts and cuts exactly as the same rows held as cells. */
TEST(made_rows_render_sort_and_cut_as_held_rows)
{
    const tl_format fmts[] = {TL_FMT_TEXT, TL_FMT_CSV, TL_FMT_JSON};
    tl_table *held, *made = made_pair(&held);
    CHECK(made && made->rows && !made->cells);
    CHECK_EQ_INT(made->nrows, MADE_N);
    for (int f = 0; f < 3; f++) {
        char *a = render(held, fmts[f], TL_UNIT_AUTO), *b = render(made, fmts[f], TL_UNIT_AUTO);
        CHECK(a && b && strcmp(a, b) == 0);
        free(a);
        free(b);
    }
    /* every column, both ways, from 0 and from a later row; then sorted again (an order on an
     * order) and cut */
    for (int col = 0; col < 6; col++)
        for (int desc = 0; desc < 2; desc++)
            for (int from = 0; from <= 50; from += 50) {
                tl_table *h2, *m2 = made_pair(&h2);
                tl_table_sort(h2, col, desc, from);
                tl_table_sort(m2, col, desc, from);
                tl_table_sort(h2, (col + 2) % 6, !desc, from + 7);
                tl_table_sort(m2, (col + 2) % 6, !desc, from + 7);
                tl_table_truncate(h2, 150 - col);
                tl_table_truncate(m2, 150 - col);
                CHECK_EQ_INT(m2->nrows, h2->nrows);
                for (int f = 0; f < 3; f++) {
                    char *a = render(h2, fmts[f], TL_UNIT_US), *b = render(m2, fmts[f], TL_UNIT_US);
                    CHECK(a && b && strcmp(a, b) == 0);
                    free(a);
                    free(b);
                }
                for (int r = 0; r < m2->nrows; r += 37) /* the accessor, on both kinds */
                    for (int c = 0; c < 6; c++) {
                        const tl_cell *x = tl_table_cell(h2, r, c), *y = tl_table_cell(m2, r, c);
                        CHECK(x->set == y->set && x->indent == y->indent);
                        if (c == 0)
                            CHECK(x->set && strcmp(x->s, y->s) == 0);
                    }
                tl_table_free(h2);
                tl_table_free(m2);
            }
    /* rows cannot be added or set; out of range reads an empty cell */
    CHECK(tl_table_add_row(made) < 0);
    CHECK(tl_table_reserve(made, MADE_N + 10) < 0);
    tl_table_int(made, 0, 1, 999);
    CHECK_EQ_INT(tl_table_cell(made, 0, 1)->i, 0);
    CHECK(!tl_table_cell(made, MADE_N, 0)->set && !tl_table_cell(made, 0, 6)->set);
    made_freed = 0;
    tl_table_free(made);
    tl_table_free(held);
    CHECK_EQ_INT(made_freed, 1); /* the view's rows are freed with the table */
    /* no fill: no table, and the rows are freed all the same */
    CHECK(!tl_table_new_rows("x", "x", demo_cols, 6, 3, NULL, malloc(1), free_made));
    CHECK_EQ_INT(made_freed, 2);
}

/* ---- numbers written without printf --------------------------------------------------------
 * The renderer writes times, percents and csv times from integers; printf, as the renderer
 * used it before, is the reference: the same characters for every value tried. */

static void ref_time(char *buf, size_t n, int64_t ns, tl_unit unit)
{
    double us = (double)ns / 1e3;
    if (unit == TL_UNIT_AUTO) {
        double a = fabs(us);
        unit = a >= 1e6 ? TL_UNIT_S : a >= 1e3 ? TL_UNIT_MS : TL_UNIT_US;
    }
    if (unit == TL_UNIT_NS)
        snprintf(buf, n, "%lldns", (long long)ns);
    else if (unit == TL_UNIT_S)
        snprintf(buf, n, "%.3fs", us / 1e6);
    else if (unit == TL_UNIT_MS)
        snprintf(buf, n, "%.3fms", us / 1e3);
    else
        snprintf(buf, n, "%.3fus", us);
}

/* "%.{dec}f" of v without its trailing zeros (and "-0" as "0"): the csv renderer's numbers as
 * printf writes them */
static void ref_plain(char *buf, size_t n, double v, int dec)
{
    snprintf(buf, n, "%.*f", dec, v);
    if (strchr(buf, '.')) {
        char *e = buf + strlen(buf) - 1;
        while (*e == '0')
            *e-- = '\0';
        if (*e == '.')
            *e = '\0';
    }
    if (strcmp(buf, "-0") == 0)
        strcpy(buf, "0");
}

/* A time to try: random at every magnitude, and near the places where rounding or the unit
 * changes (ties at the rounded digit, 999.9995 ms, the unit thresholds, the exact limit). */
static int64_t some_ns(int i)
{
    static const int64_t edges[] = {0,
                                    1,
                                    499,
                                    500,
                                    999,
                                    1000,
                                    999999,
                                    1000000,
                                    1000500,
                                    1001499,
                                    1001500,
                                    1001501,
                                    999999499,
                                    999999500,
                                    999999501,
                                    999999999,
                                    1000000000,
                                    1000500000,
                                    1999999999,
                                    ((int64_t)1 << 50) - 1,
                                    (int64_t)1 << 50,
                                    INT64_MAX,
                                    -1,
                                    -1500,
                                    -1000500,
                                    INT64_MIN};
    int ne = (int)(sizeof edges / sizeof *edges);
    if (i < ne)
        return edges[i];
    int64_t v = (int64_t)(test_rand() >> (test_rand() % 64));
    switch (i % 4) {
    case 0: /* a tie or one off it, at the ms or s digit */
        v = v / 1000 * 1000 + 500 + (int64_t)(test_rand() % 3) - 1;
        break;
    case 1:
        v = v / 1000000 * 1000000 + 500000 + (int64_t)(test_rand() % 3) - 1;
        break;
    default:
        break;
    }
    return i % 7 == 0 ? -v : v;
}

TEST(times_and_percents_without_printf_match_printf)
{
    static const tl_unit units[] = {TL_UNIT_AUTO, TL_UNIT_NS, TL_UNIT_US, TL_UNIT_MS, TL_UNIT_S};
    int bad = 0;
    for (int i = 0; i < 400000; i++) {
        int64_t ns = some_ns(i);
        for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
            char got[64], want[64];
            tl_fmt_time(got, sizeof got, ns, units[u]);
            ref_time(want, sizeof want, ns, units[u]);
            if (strcmp(got, want) != 0 && bad++ < 5)
                CHECK_STR(got, want);
        }
    }
    CHECK_EQ_INT(bad, 0);

    /* percents and csv times, through the renderer */
    static const tl_col cols[] = {{"Ratio", "ratio_pct", TL_COL_PCT, 0},
                                  {"Total", "total_us", TL_COL_TIME, 0}};
    enum { ROWS = 20000 };
    tl_table *t = tl_table_new("T", "t", cols, 2);
    double pct[ROWS];
    int64_t us[ROWS];
    for (int r = 0; r < ROWS; r++) {
        /* ties at the third decimal (x.xx5, as a double a hair off), and any double */
        double d = r % 3 == 0   ? (double)(test_rand() % 100000000) / 100000.0
                   : r % 3 == 1 ? (double)(test_rand() % 100000) / 1000.0 + 0.005
                                : (double)(test_rand() >> 11) / 9007199254740992.0 * 150.0;
        pct[r] = r == 1 ? 99.995 : r == 2 ? 0.125 : r == 4 ? 1e6 : r == 5 ? -0.004 : d;
        us[r] = some_ns(r * 7 + 3);
        int row = tl_table_add_row(t);
        tl_table_pct(t, row, 0, pct[r]);
        tl_table_time(t, row, 1, us[r]);
    }
    char *text = render(t, TL_FMT_TEXT, TL_UNIT_AUTO), *csv = render(t, TL_FMT_CSV, TL_UNIT_AUTO);
    CHECK(text && csv);
    char *tl = text ? strchr(text, '\n') : NULL;     /* past the title */
    tl = tl ? strchr(tl + 1, '\n') : NULL;           /* past the header */
    tl = tl ? strchr(tl + 1, '\n') : NULL;           /* past the rule */
    const char *cl = csv ? strchr(csv, '\n') : NULL; /* past the header */
    int badp = 0, badc = 0, rows = 0;
    for (int r = 0; r < ROWS && tl && cl; r++, rows++) {
        char want[64], got[64];
        snprintf(want, sizeof want, "%.2f%%", pct[r]);
        if (sscanf(tl + 1, "%63s", got) != 1 || strcmp(got, want) != 0) {
            if (badp++ < 5)
                CHECK_STR(got, want);
        }
        /* csv: the percent with four decimals, plain */
        char pw[64];
        ref_plain(pw, sizeof pw, pct[r], 4);
        const char *c0 = strchr(cl + 1, ',');
        if (!c0 || (size_t)(c0 - cl - 1) != strlen(pw) || strncmp(cl + 1, pw, strlen(pw)) != 0) {
            if (badc++ < 5)
                CHECK_STR(cl + 1, pw);
        }
        /* csv: the time in us, plain */
        char cw[64];
        if (us[r] % 1000 == 0)
            snprintf(cw, sizeof cw, "%lld", (long long)(us[r] / 1000));
        else
            ref_plain(cw, sizeof cw, (double)us[r] / 1e3, 3);
        const char *comma = strchr(cl + 1, ',');
        const char *eol = strchr(cl + 1, '\n');
        if (!comma || !eol || (size_t)(eol - comma - 1) != strlen(cw) ||
            strncmp(comma + 1, cw, strlen(cw)) != 0) {
            if (badc++ < 5)
                CHECK_STR(comma ? comma + 1 : "", cw);
        }
        tl = strchr(tl + 1, '\n');
        cl = eol;
    }
    CHECK_EQ_INT(rows, ROWS);
    CHECK_EQ_INT(badp, 0);
    CHECK_EQ_INT(badc, 0);
    free(text);
    free(csv);
    tl_table_free(t);
}

int main(void)
{
    RUN(time_format_auto_scales_like_pytorch);
    RUN(bytes_format_uses_1024_base);
    RUN(parse_format_and_unit);
    RUN(text_columns_line_up);
    RUN(text_forced_unit);
    RUN(text_long_names_are_cut);
    RUN(csv_has_plain_numbers);
    RUN(json_is_valid_and_numeric);
    RUN(sort_is_stable_and_puts_empty_last);
    RUN(sort_moves_whole_rows_in_place);
    RUN(find_col_by_key_title_or_base);
    RUN(empty_column_left_out_of_text_only);
    RUN(chain_is_freed);
    RUN(made_rows_render_sort_and_cut_as_held_rows);
    RUN(times_and_percents_without_printf_match_printf);
    return test_summary();
}
