/*
 * test_ops_torch_cuda.c — the ops table against the table PyTorch 2.x printed for a CUDA run.
 *
 * tests/data/torch_cuda_gen.py profiled a small MLP on an H100 with PyTorch 2.11 (Kineto:
 * CPU + CUDA activities, record_shapes, profile_memory, a schedule with three active steps;
 * the backward pass runs on autograd's own thread), exported the Kineto trace and printed
 * key_averages().table() for several sort keys and once grouped by input shape (stored
 * gzipped). This test
 * reads the trace with tl_load and compares every row PyTorch printed: name, calls, Self CPU,
 * CPU total, CPU time avg, Self CUDA, CUDA total, CUDA time avg, the four memory columns and
 * the percentages, the order of the rows, and both footer totals.
 */
#include "analysis/views.h"
#include "testlib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DATA TALLY_SOURCE_DIR "/tests/data/"

#ifndef OPS_TORCH_LOAD
#define OPS_TORCH_LOAD(t, path, err) tl_load(t, path, 0, err)
#endif

/* ---- PyTorch's printed tables -------------------------------------------------------------- */

#define MAXC 20
#define MAXR 160
#define CELL 208

typedef struct ptable {
    char key[64];
    int shapes;
    int ncols;
    char title[MAXC][32];
    int nrows;
    char cell[MAXR][MAXC][CELL];
    char footer_cpu[32], footer_cuda[32];
} ptable;

static void copy_str(char *dst, size_t n, const char *src, size_t m)
{
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

/* Split line by the column spans of the dashed separator line sep. */
static int split(const char *sep, const char *line, char out[][CELL], int maxc)
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
        out[c][0] = 0;
        if (s < ll)
            copy_str(out[c], CELL, line + s, ll - s < w ? ll - s : w);
        trim(out[c]);
        c++;
    }
    return c;
}

/* Read the tables (gzipped: PyTorch pads names to 200 columns) line by line. */
static int parse_tables(const char *path, ptable *tabs, int max)
{
    size_t len;
    char *text = test_read_file(path, &len);
    if (!text)
        return -1;
    static char line[4096], sep[4096];
    char titles[MAXC][CELL];
    const char *cur = text, *endp = text + len;
    int nt = -1, state = 0;
    while (cur < endp) {
        const char *nl = memchr(cur, '\n', (size_t)(endp - cur));
        size_t ll = nl ? (size_t)(nl - cur) + 1 : (size_t)(endp - cur);
        copy_str(line, sizeof line, cur, ll);
        cur += ll;
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
            copy_str(sep, sizeof sep, line, strlen(line));
            state++;
            continue;
        }
        if (state == 1) {
            /* titles are split at runs of 2+ spaces: PyTorch lets a 13-character title
             * ("Self CUDA Mem") overflow its 12-wide column and shift the ones after it */
            (void)titles;
            p->ncols = 0;
            for (const char *s = line; *s && p->ncols < MAXC;) {
                while (*s == ' ' || *s == '\n')
                    s++;
                if (!*s)
                    break;
                const char *e = s;
                while (*e && *e != '\n' && !(e[0] == ' ' && e[1] == ' '))
                    e++;
                copy_str(p->title[p->ncols], sizeof p->title[0], s, (size_t)(e - s));
                p->ncols++;
                s = e;
            }
        } else if (state == 2 && p->nrows < MAXR) {
            split(sep, line, p->cell[p->nrows], MAXC);
            p->nrows++;
        } else if (!strncmp(line, "Self CPU time total: ", 21)) {
            copy_str(p->footer_cpu, sizeof p->footer_cpu, line + 21, strlen(line + 21));
            trim(p->footer_cpu);
        } else if (!strncmp(line, "Self CUDA time total: ", 22)) {
            copy_str(p->footer_cuda, sizeof p->footer_cuda, line + 22, strlen(line + 22));
            trim(p->footer_cuda);
        }
    }
    free(text);
    return nt + 1;
}

static int col_of(const ptable *p, const char *title)
{
    for (int c = 0; c < p->ncols; c++)
        if (!strcmp(p->title[c], title))
            return c;
    return -1;
}

/* "117.000us", "2.811ms", "1.500s" -> ns, with half a unit of the last digit as tolerance. */
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
    return llround(v * mult);
}

/* "33.00 KB", "-1.57 MB", "0 B" -> bytes, with tolerance. */
static int64_t parse_mem(const char *s, int64_t *tol)
{
    char *end;
    double v = strtod(s, &end);
    while (*end == ' ')
        end++;
    double mult = 1;
    if (!strncasecmp(end, "KB", 2))
        mult = 1024.0;
    else if (!strncasecmp(end, "MB", 2))
        mult = 1024.0 * 1024;
    else if (!strncasecmp(end, "GB", 2))
        mult = 1024.0 * 1024 * 1024;
    *tol = (int64_t)(mult * 0.005) + 1;
    return llround(v * mult);
}

/* ---- comparison ------------------------------------------------------------------------------ */

static const tl_cell *cell(const tl_table *tab, int r, const char *key)
{
    static const tl_cell none = {0};
    int c = tl_table_find_col(tab, key);
    return c < 0 ? &none : tl_table_cell(tab, r, c);
}

static int name_matches(const char *ours, const char *theirs)
{
    size_t n = strlen(theirs);
    if (n > 3 && !strcmp(theirs + n - 3, "..."))
        return strlen(ours) >= n - 3 && !strncmp(ours, theirs, n - 3);
    return !strcmp(ours, theirs);
}

/* Columns compared: torch title, our key, kind (t = time, p = percent, m = memory, n = count). */
static const struct {
    const char *title, *key;
    char kind;
} cmp_cols[] = {
    {"Self CPU %", "self_cpu_pct", 'p'},           {"Self CPU", "self_cpu_us", 't'},
    {"CPU total %", "cpu_total_pct", 'p'},         {"CPU total", "cpu_total_us", 't'},
    {"CPU time avg", "cpu_avg_us", 't'},           {"Self CUDA", "self_cuda_us", 't'},
    {"Self CUDA %", "self_cuda_pct", 'p'},         {"CUDA total", "cuda_total_us", 't'},
    {"CUDA time avg", "cuda_avg_us", 't'},         {"CPU Mem", "cpu_mem_bytes", 'm'},
    {"Self CPU Mem", "self_cpu_mem_bytes", 'm'},   {"CUDA Mem", "cuda_mem_bytes", 'm'},
    {"Self CUDA Mem", "self_cuda_mem_bytes", 'm'}, {"# of Calls", "calls", 'n'},
};
#define NCMP (int)(sizeof cmp_cols / sizeof cmp_cols[0])

/* Number of columns of PyTorch row i that differ from our row r (0 = same row). With report,
 * print each difference. */
static int row_diff(const ptable *p, int i, const tl_table *tab, int r, int report)
{
    int bad = 0;
    for (int k = 0; k < NCMP; k++) {
        int c = col_of(p, cmp_cols[k].title);
        if (c < 0)
            continue;
        const char *s = p->cell[i][c];
        const tl_cell *x = cell(tab, r, cmp_cols[k].key);
        int64_t tol = 0, want;
        int ok;
        if (cmp_cols[k].kind == 'p') {
            ok = fabs(x->d - atof(s)) <= 0.0051;
        } else {
            want = cmp_cols[k].kind == 't'   ? parse_time(s, &tol)
                   : cmp_cols[k].kind == 'm' ? parse_mem(s, &tol)
                                             : atoll(s);
            /* Kineto's writer widens every gpu_user_annotation by 2 ns so that it sorts before
             * its kernels; PyTorch's table uses the true duration, tally the trace's */
            if (cmp_cols[k].kind == 't' && col_of(p, "# of Calls") >= 0)
                tol += 2 * atoll(p->cell[i][col_of(p, "# of Calls")]);

            ok = llabs(x->i - want) <= tol;
        }
        if (!ok) {
            bad++;
            if (report)
                fprintf(stderr, "  [%s] %s: %s is %s in torch, ours %lld / %.4f\n", p->key,
                        p->cell[i][0], cmp_cols[k].title, s, (long long)x->i, x->d);
        }
    }
    if (p->shapes) {
        int c = col_of(p, "Input Shapes");
        const char *ours = cell(tab, r, "input_shapes")->s;
        if (c >= 0 && !(ours && name_matches(ours, p->cell[i][c]))) {
            bad++;
            if (report)
                fprintf(stderr, "  [%s] %s: shapes '%s' in torch, ours '%s'\n", p->key,
                        p->cell[i][0], p->cell[i][c], ours ? ours : "(none)");
        }
    }
    return bad;
}

/* Every comparison runs twice: the table held as cells, and made as it is read (the
 * report's and `tally ops`'s). */
static int made_rows;

static void check_block(const tl_trace *t, const ptable *p)
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
    int *used = calloc((size_t)tab->nrows + 1, sizeof *used);
    int misordered = 0, reported = 0;
    for (int i = 0; i < p->nrows; i++) {
        /* our row: same name (and shapes), all columns equal; prefer the same position */
        int best = -1, best_bad = 1 << 30;
        for (int r = 0; r < tab->nrows; r++) {
            if (used[r] || !name_matches(cell(tab, r, "name")->s, p->cell[i][0]))
                continue;
            int b = row_diff(p, i, tab, r, 0) * 2 + (r != i);
            if (b < best_bad) {
                best_bad = b;
                best = r;
            }
        }
        if (best < 0) {
            fprintf(stderr, "  [%s] row '%s' missing\n", p->key, p->cell[i][0]);
            test_failures++;
            continue;
        }
        used[best] = 1;
        test_checks++;
        if (best_bad > 1) {
            test_failures++;
            if (reported++ < 10)
                row_diff(p, i, tab, best, 1);
        }
        if (best != i) {
            misordered++;
            if (misordered <= 5)
                fprintf(stderr, "  [%s] '%s' is row %d in torch's table, %d in ours\n", p->key,
                        p->cell[i][0], i, best);
        }
    }
    if (misordered)
        fprintf(stderr, "  [%s] %d rows in another position than torch's\n", p->key, misordered);
    CHECK_EQ_INT(misordered, 0);
    int fc = 0, fg = 0;
    for (int k = 0; k < tab->nnotes; k++) {
        if (strstr(tab->notes[k], "Self CPU time total: ") && strstr(tab->notes[k], p->footer_cpu))
            fc = 1;
        if (strstr(tab->notes[k], "Self CUDA time total: ") &&
            strstr(tab->notes[k], p->footer_cuda))
            fg = 1;
    }
    CHECK(fc);
    CHECK(fg || !p->footer_cuda[0]);
    if (!fc || !(fg || !p->footer_cuda[0]))
        for (int k = 0; k < tab->nnotes; k++)
            fprintf(stderr, "  note: %s (torch: %s / %s)\n", tab->notes[k], p->footer_cpu,
                    p->footer_cuda);
    free(used);
    tl_table_free(tab);
}

static ptable tabs[10];

TEST(ops_matches_torch_cuda_tables)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    int rc = OPS_TORCH_LOAD(&t, DATA "torch_cuda_mlp.trace.json.gz", &err);
    CHECK_EQ_INT(rc, 0);
    if (rc != 0) {
        fprintf(stderr, "  %s\n", err.msg);
        tl_trace_free(&t);
        return;
    }
    if (!t.finished)
        tl_trace_finish(&t);
    int nt = parse_tables(DATA "torch_cuda_mlp.tables.txt.gz", tabs, 10);
    CHECK(nt >= 8);
    for (int i = 0; i < nt; i++) {
        int before = test_failures;
        check_block(&t, &tabs[i]);
        if (test_failures != before)
            fprintf(stderr, "  (table sorted by %s%s)\n", tabs[i].key,
                    tabs[i].shapes ? ", by shape" : "");
    }
    tl_trace_free(&t);
}

int main(void)
{
    for (made_rows = 0; made_rows < 2; made_rows++)
        RUN(ops_matches_torch_cuda_tables);
    return test_summary();
}
