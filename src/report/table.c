/*
 * table.c — typed tables and their three renderings.
 *
 * A view fills a tl_table with typed cells; nothing here knows what a view means. The text
 * renderer formats every cell first, measures the columns, then prints a title rule, a header,
 * the rows and the notes, so that columns line up whatever the data. Times are auto-scaled per
 * cell the way PyTorch's profiler tables do it ("1.500us", "2.500ms", "3.000s"). CSV and JSON
 * carry plain numbers: times in microseconds (the column key says "_us"), percentages as
 * numbers, bytes as integers, so that a script never has to parse "1.5 MB".
 *
 * CSV is one plain table, whatever the number of tables written: one header row and no comment
 * lines, so that pandas.read_csv and Python's csv module read it unaided. A single table is
 * written as it is; several (a report's views, the tables of diff or gaps) are held until
 * tl_out_end and written as one table whose first column, "view", holds each row's table key,
 * under the union of the tables' columns (a column a table lacks is empty on its rows). The
 * held rows are CSV text in a temporary file (in memory when none can be made), not cells:
 * a report of a million names holds no table but the one being computed. Titles and notes
 * are text and JSON only.
 *
 * Output errors (a full disk, a closed pipe) are left in the FILE's error flag for the caller
 * to check with ferror(); nothing here exits or prints anywhere else.
 */
#include "report/table.h"
#include "trace/sort.h"

#include "trace/checked.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Widest a text column may get in text output unless tl_out.wide is set; longer names end in
 * "...". */
#define TL_TEXT_MAX_NAME 60

/* One table held for CSV output: its key, and how many of the union's columns there were when
 * it came (its fields fill those; the columns later tables add are empty on its rows). Its
 * rows are CSV text in the output's spool, each ended by a NUL (a field may hold a line
 * break, never a NUL). */
typedef struct csv_held {
    char *view;
    int nu;
    int nrows;
} csv_held;

/* Renderer state that does not belong in the public struct: JSON messages are collected and
 * written at the end (a JSON object may hold the key "messages" only once), table keys are
 * remembered so that a repeated key gets a suffix instead of producing a duplicate key, and
 * CSV tables are held until the end (the header is the union of their columns). */
struct tl_out_priv {
    char **msgs;
    int nmsgs;
    char **keys;
    int nkeys;
    int nmembers; /* JSON: top-level members written so far (tables and tl_out_json) */
    csv_held *csv;
    int ncsv;
    char **ukeys; /* CSV: the union of the columns so far, in order of first appearance */
    int nu, ucap;
    FILE *spool; /* CSV: the held rows as text: a temporary file, else memory */
    int inmem;   /* the spool is in memory (no temporary file could be made) */
    char *mem;   /* its buffer (open_memstream) */
    size_t memlen;
};

/* ---- small utilities -------------------------------------------------------------------- */

static char *xstrdup(const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static char *xvasprintf(const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0)
        return xstrdup("");
    char *p = malloc((size_t)n + 1);
    if (!p)
        return NULL;
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

/* Display width of a UTF-8 string: one column per code point (continuation bytes skipped). */
static int disp_width(const char *s)
{
    int w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

/* Byte offset of the first n display columns of s. */
static size_t disp_prefix(const char *s, int n)
{
    size_t i = 0;
    int w = 0;
    while (s[i]) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (w == n)
                break;
            w++;
        }
        i++;
    }
    return i;
}

/* ---- numbers without printf ----------------------------------------------------------------
 * A table of a million rows formats several million numbers; printf's "%.3f" of a double took
 * most of the time. These write the same characters from integers, and say when they cannot
 * be sure of that (a tie at the rounded digit, where printf rounds the double's binary value, a
 * negative or very large number): the caller then uses printf. */

/* Below this, a time's double (ns / 1e3, then / 1e3 or / 1e6) is within 2.5e-7 of a unit (ms:
 * 1e-6 ms from the nearest tie; s: 1e-9 of 1e6 s; us: exact to 1e-3), so rounding it and
 * rounding the integer agree. */
#define EXACT_NS ((int64_t)1 << 50)

/* The decimal digits of v at p; returns the end. */
static char *put_digits(char *p, uint64_t v)
{
    char tmp[20];
    int k = 0;
    do {
        tmp[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (k)
        *p++ = tmp[--k];
    return p;
}

/* q / 10^dec with dec (1 to 6) decimals, then suffix, into buf[n] (cut as snprintf cuts). */
static void put_fixed(char *buf, size_t n, uint64_t q, int dec, const char *suffix)
{
    char tmp[48], *p = tmp;
    uint64_t pow = 1;
    for (int i = 0; i < dec; i++)
        pow *= 10;
    p = put_digits(p, q / pow);
    *p++ = '.';
    for (uint64_t d = pow / 10, f = q % pow; d; d /= 10)
        *p++ = (char)('0' + f / d % 10);
    size_t sl = strlen(suffix);
    memcpy(p, suffix, sl);
    p += sl;
    size_t len = (size_t)(p - tmp);
    if (len >= n)
        len = n - 1;
    memcpy(buf, tmp, len);
    buf[len] = '\0';
}

/* tl_fmt_time's text from integers; -1 when printf must decide (above). */
static int fmt_time_int(char *buf, size_t n, int64_t ns, tl_unit unit)
{
    if (ns < 0 || ns >= EXACT_NS)
        return -1;
    if (unit == TL_UNIT_AUTO)
        unit = ns >= 1000000000 ? TL_UNIT_S : ns >= 1000000 ? TL_UNIT_MS : TL_UNIT_US;
    uint64_t step = unit == TL_UNIT_S ? 1000000 : unit == TL_UNIT_MS ? 1000 : 1;
    if (unit == TL_UNIT_NS) {
        char tmp[24], *p = put_digits(tmp, (uint64_t)ns);
        *p = '\0';
        snprintf(buf, n, "%sns", tmp);
        return 0;
    }
    uint64_t q = (uint64_t)ns / step, r = (uint64_t)ns % step;
    if (step > 1 && 2 * r == step)
        return -1;
    q += step > 1 && 2 * r > step;
    put_fixed(buf, n, q, 3, unit == TL_UNIT_S ? "s" : unit == TL_UNIT_MS ? "ms" : "us");
    return 0;
}

/* "%.{dec}f" of d (dec 1 to 6), then suffix, from integers; -1 when printf must decide. Below
 * 1e9, d * 10^dec is within 1.1e-7 of its exact value, so only a value within 1e-6 of a tie at
 * the next decimal is left to printf (and -0, negatives, NaN, large values). */
static int fmt_fixed_int(char *buf, size_t n, double d, int dec, const char *suffix)
{
    static const double pow10[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};
    if (!(d >= 0) || signbit(d) || dec < 1 || dec > 6)
        return -1;
    double y = d * pow10[dec];
    if (!(y < 1e9))
        return -1;
    double whole = floor(y), frac = y - whole;
    if (fabs(frac - 0.5) < 1e-6)
        return -1;
    put_fixed(buf, n, (uint64_t)whole + (frac > 0.5), dec, suffix);
    return 0;
}

/* Print a double as a plain number without useless trailing zeros ("12.5", "3", "0.001"). */
static void fmt_plain(char *buf, size_t n, double v, int decimals)
{
    if (!isfinite(v)) {
        snprintf(buf, n, "null");
        return;
    }
    if (fmt_fixed_int(buf, n, v, decimals, "") != 0)
        snprintf(buf, n, "%.*f", decimals, v);
    if (strchr(buf, '.')) {
        char *e = buf + strlen(buf) - 1;
        while (*e == '0')
            *e-- = '\0';
        if (*e == '.')
            *e = '\0';
    }
    if (strcmp(buf, "-0") == 0)
        snprintf(buf, n, "0");
}

/* ---- building ---------------------------------------------------------------------------- */

tl_table *tl_table_new(const char *title, const char *key, const tl_col *cols, int ncols)
{
    tl_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->title = xstrdup(title);
    t->key = xstrdup(key ? key : title);
    t->ncols = ncols > 0 ? ncols : 0;
    t->cols = calloc(t->ncols ? (size_t)t->ncols : 1, sizeof *t->cols);
    if (!t->title || !t->key || !t->cols) {
        tl_table_free(t);
        return NULL;
    }
    /* Titles and keys are copied: a view may build them with snprintf ("GPU 0"). */
    for (int c = 0; c < t->ncols; c++) {
        t->cols[c] = cols[c];
        t->cols[c].title = xstrdup(cols[c].title);
        t->cols[c].key = xstrdup(cols[c].key ? cols[c].key : cols[c].title);
    }
    return t;
}

static void table_free_one(tl_table *t);

_Static_assert(sizeof(tl_cell) == 16, "a cell is 16 bytes (see table.h)");

static void free_row(tl_table *t, int row)
{
    for (int c = 0; c < t->ncols; c++) {
        tl_cell *cell = &t->cells[(size_t)row * t->ncols + c];
        if (t->cols[c].type == TL_COL_STR) {
            if (!cell->borrowed)
                free(cell->s);
            cell->s = NULL;
            cell->borrowed = 0;
        }
    }
}

/* s with the words GPU and CUDA replaced by accel, in a new string; NULL when s has neither
 * (or out of memory: *oom set). */
static char *accel_words(const char *s, const char *accel, int *oom)
{
    static const char *const words[] = {"GPU", "CUDA"};
    size_t n = strlen(s), an = strlen(accel), hits = 0;
    for (int pass = 0; pass < 2; pass++) {
        char *out = pass ? malloc(n + hits * an + 1) : NULL, *o = out;
        if (pass && !out) {
            *oom = 1;
            return NULL;
        }
        for (size_t i = 0; i < n;) {
            size_t w = 0;
            for (int k = 0; k < 2 && !w; k++) {
                size_t wl = strlen(words[k]);
                if (!strncmp(s + i, words[k], wl) &&
                    (i == 0 || !isalnum((unsigned char)s[i - 1])) &&
                    !isalnum((unsigned char)s[i + wl]) && s[i + wl] != '_')
                    w = wl;
            }
            if (w) {
                hits += !pass;
                if (pass) {
                    memcpy(o, accel, an);
                    o += an;
                }
                i += w;
            } else {
                if (pass)
                    *o++ = s[i];
                i++;
            }
        }
        if (!pass && !hits)
            return NULL;
        if (pass) {
            *o = 0;
            return out;
        }
    }
    return NULL;
}

/* Replace *s by its accel_words, when it has any. */
static void accel_rename(char **s, const char *accel, int *oom)
{
    char *r = *s ? accel_words(*s, accel, oom) : NULL;
    if (r) {
        free(*s);
        *s = r;
    }
}

int tl_table_name_accel(tl_table *t, const char *accel)
{
    int oom = 0;
    if (!accel || !strcmp(accel, "GPU"))
        return 0;
    for (; t; t = t->next) {
        accel_rename(&t->title, accel, &oom);
        for (int c = 0; c < t->ncols; c++) {
            char *title = (char *)t->cols[c].title; /* (owned: tl_table_new copies it) */
            accel_rename(&title, accel, &oom);
            t->cols[c].title = title;
        }
        for (int i = 0; i < t->nnotes; i++)
            accel_rename(&t->notes[i], accel, &oom);
    }
    return oom ? -1 : 0;
}

void tl_table_free(tl_table *t)
{
    while (t) {
        tl_table *next = t->next;
        t->next = NULL;
        table_free_one(t);
        t = next;
    }
}

/* A table of made rows (tl_table_new_rows): the view's own rows, and the one made last. */
struct tl_rows {
    tl_row_fill fill;
    void *ctx;
    void (*ctx_free)(void *);
    int *order;    /* row r is the view's row order[r] (after a sort); NULL: row r */
    tl_table *one; /* the row made last, as row 0 of a table of the same columns */
    int made;      /* the row `one` holds; -1: none */
};

static void table_free_one(tl_table *t)
{
    for (int r = 0; !t->rows && r < t->nrows; r++)
        free_row(t, r);
    if (t->rows) {
        tl_table_free(t->rows->one);
        free(t->rows->order);
        if (t->rows->ctx_free)
            t->rows->ctx_free(t->rows->ctx);
        free(t->rows);
    }
    free(t->cells);
    if (t->cols) {
        for (int c = 0; c < t->ncols; c++) {
            free((char *)t->cols[c].title);
            free((char *)t->cols[c].key);
        }
    }
    free(t->cols);
    for (int i = 0; i < t->nnotes; i++)
        free(t->notes[i]);
    free(t->notes);
    free(t->title);
    free(t->key);
    free(t);
}

tl_table *tl_table_new_rows(const char *title, const char *key, const tl_col *cols, int ncols,
                            int nrows, tl_row_fill fill, void *ctx, void (*ctx_free)(void *))
{
    tl_table *t = nrows >= 0 && fill ? tl_table_new(title, key, cols, ncols) : NULL;
    struct tl_rows *R = t ? calloc(1, sizeof *R) : NULL;
    tl_table *one = R ? tl_table_new(title, key, cols, ncols) : NULL;
    if (!one || tl_table_add_row(one) != 0) {
        tl_table_free(one);
        free(R);
        tl_table_free(t);
        if (ctx_free)
            ctx_free(ctx);
        return NULL;
    }
    R->fill = fill;
    R->ctx = ctx;
    R->ctx_free = ctx_free;
    R->one = one;
    R->made = -1;
    t->rows = R;
    t->nrows = nrows;
    return t;
}

int tl_table_reserve(tl_table *t, int nrows)
{
    if (!t || nrows < 0 || t->rows)
        return -1;
    if (nrows <= t->cap_rows)
        return 0;
    size_t cells = (size_t)nrows * (t->ncols ? (size_t)t->ncols : 1);
    tl_cell *nc = realloc(t->cells, cells * sizeof *nc);
    if (!nc)
        return -1;
    t->cells = nc;
    t->cap_rows = nrows;
    return 0;
}

int tl_table_add_row(tl_table *t)
{
    if (!t || t->rows)
        return -1;
    if (t->nrows == t->cap_rows &&
        (t->cap_rows > INT_MAX / 2 || tl_table_reserve(t, t->cap_rows ? t->cap_rows * 2 : 16) != 0))
        return -1;
    int r = t->nrows++;
    if (t->ncols)
        memset(&t->cells[(size_t)r * t->ncols], 0, (size_t)t->ncols * sizeof(tl_cell));
    return r;
}

static tl_cell *cell_at(tl_table *t, int row, int col)
{
    if (!t || t->rows || row < 0 || row >= t->nrows || col < 0 || col >= t->ncols)
        return NULL;
    return &t->cells[(size_t)row * t->ncols + col];
}

/* The cell for a string: only a STR column holds one (s shares its bytes with d); a string
 * given to another column leaves it set and zero, as it always read. */
static tl_cell *str_cell_at(tl_table *t, int row, int col)
{
    tl_cell *c = cell_at(t, row, col);
    if (c && t->cols[col].type != TL_COL_STR) {
        c->set = 1;
        return NULL;
    }
    return c;
}

/* Row `row` of a table of made rows, made into R->one unless it holds it already. */
static const tl_cell *made_cell(const tl_table *t, int row, int col)
{
    struct tl_rows *R = t->rows;
    if (R->made != row) {
        free_row(R->one, 0);
        memset(R->one->cells, 0, (size_t)t->ncols * sizeof *R->one->cells);
        R->fill(R->ctx, R->order ? R->order[row] : row, R->one);
        R->made = row;
    }
    return &R->one->cells[col];
}

static const tl_cell *ccell_at(const tl_table *t, int row, int col)
{
    if (t->rows)
        return made_cell(t, row, col);
    return &t->cells[(size_t)row * t->ncols + col];
}

const tl_cell *tl_table_cell(const tl_table *t, int row, int col)
{
    static const tl_cell none;
    if (!t || row < 0 || row >= t->nrows || col < 0 || col >= t->ncols)
        return &none;
    return ccell_at(t, row, col);
}

/* Empty a string cell before it takes a new string. */
static void str_cell_clear(tl_cell *c)
{
    if (!c->borrowed)
        free(c->s);
    c->s = NULL;
    c->borrowed = 0;
    c->set = 0;
}

void tl_table_str(tl_table *t, int row, int col, const char *s)
{
    tl_cell *c = str_cell_at(t, row, col);
    if (!c)
        return;
    str_cell_clear(c);
    c->s = xstrdup(s);
    c->set = c->s != NULL;
}

void tl_table_str_ref(tl_table *t, int row, int col, const char *s)
{
    tl_cell *c = str_cell_at(t, row, col);
    if (!c)
        return;
    str_cell_clear(c);
    c->s = (char *)(s ? s : "");
    c->borrowed = 1;
    c->set = 1;
}

void tl_table_strf(tl_table *t, int row, int col, const char *fmt, ...)
{
    tl_cell *c = str_cell_at(t, row, col);
    if (!c)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    str_cell_clear(c);
    c->s = s;
    c->set = s != NULL;
}

void tl_table_indent(tl_table *t, int row, int col, int indent)
{
    tl_cell *c = cell_at(t, row, col);
    if (c)
        c->indent = indent < 0 ? 0 : indent;
}

static int is_int_type(tl_coltype ty)
{
    return ty == TL_COL_INT || ty == TL_COL_TIME || ty == TL_COL_BYTES;
}

/* Set a number cell from v (is_int) or d: an integer column keeps an int64 (a double
 * saturates), the others a double; a STR column's bytes hold its string, so it is only marked
 * set. */
static void num_cell(tl_table *t, int row, int col, int is_int, int64_t v, double d)
{
    tl_cell *c = cell_at(t, row, col);
    if (!c)
        return;
    tl_coltype ty = t->cols[col].type;
    if (is_int_type(ty))
        c->i = is_int ? v : tl_d_to_i64(d);
    else if (ty != TL_COL_STR)
        c->d = is_int ? (double)v : d;
    c->set = 1;
}

void tl_table_int(tl_table *t, int row, int col, int64_t v)
{
    num_cell(t, row, col, 1, v, 0);
}

void tl_table_time(tl_table *t, int row, int col, int64_t ns)
{
    tl_table_int(t, row, col, ns);
}

void tl_table_bytes(tl_table *t, int row, int col, int64_t bytes)
{
    tl_table_int(t, row, col, bytes);
}

void tl_table_pct(tl_table *t, int row, int col, double pct)
{
    num_cell(t, row, col, 0, 0, pct);
}

void tl_table_float(tl_table *t, int row, int col, double v)
{
    tl_table_pct(t, row, col, v);
}

void tl_table_note(tl_table *t, const char *fmt, ...)
{
    if (!t)
        return;
    char **nn = realloc(t->notes, (size_t)(t->nnotes + 1) * sizeof *nn);
    if (!nn)
        return;
    t->notes = nn;
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    if (s)
        t->notes[t->nnotes++] = s;
}

void tl_table_note_is_why_empty(tl_table *t)
{
    if (t && t->nnotes)
        t->why_empty = t->nnotes;
}

/* ---- sorting ----------------------------------------------------------------------------- */

/* Order of two set cells of column type ty, ascending. */
static int cmp_cells(const tl_cell *a, const tl_cell *b, tl_coltype ty)
{
    if (ty == TL_COL_STR) {
        int r = strcasecmp(a->s ? a->s : "", b->s ? b->s : "");
        return r ? r : strcmp(a->s ? a->s : "", b->s ? b->s : "");
    }
    if (is_int_type(ty))
        return (a->i > b->i) - (a->i < b->i);
    /* NaN sorts like an empty cell would: after every number. */
    int an = isnan(a->d), bn = isnan(b->d);
    if (an || bn)
        return an - bn;
    return (a->d > b->d) - (a->d < b->d);
}

/* Negative when cell a goes before cell b: empty cells and NaN last in either direction, the
 * rest by cmp_cells (reversed when desc). 0 when they tie. */
static int cell_before(const tl_cell *a, const tl_cell *b, tl_coltype ty, int desc)
{
    if (!a->set || !b->set)
        return a->set ? -1 : b->set ? 1 : 0;
    if (ty != TL_COL_STR && !is_int_type(ty) && (isnan(a->d) || isnan(b->d)))
        return cmp_cells(a, b, ty);
    int r = cmp_cells(a, b, ty);
    return desc ? -r : r;
}

/* A table of made rows sorts the key of each row made once: 8 bytes (a number, or a string's
 * pointer; which, the column's type says) and a byte of flags. */
typedef union made_key {
    int64_t i;
    double d;
    char *s;
} made_key;

enum { KEY_SET = 1, KEY_OWNED = 2 };

/* A sort of rows from + i (i = 0..n-1) by their cells of column col: the index of each row is
 * its place before the sort, and ties keep that order (a stable sort). */
typedef struct sort_ctx {
    const tl_table *t;
    int col, desc, from;
    const made_key *key; /* a table of made rows: the key of row from + i is key[i] */
    const uint8_t *fl;   /* and its KEY_* flags */
} sort_ctx;

static int place_before(const void *ctx, int32_t a, int32_t b)
{
    const sort_ctx *x = ctx;
    tl_cell ka, kb;
    const tl_cell *ca = &ka, *cb = &kb;
    if (x->key) {
        ka = (tl_cell){.i = x->key[a].i, .set = x->fl[a] & KEY_SET};
        kb = (tl_cell){.i = x->key[b].i, .set = x->fl[b] & KEY_SET};
    } else {
        ca = ccell_at(x->t, x->from + a, x->col);
        cb = ccell_at(x->t, x->from + b, x->col);
    }
    int r = cell_before(ca, cb, x->t->cols[x->col].type, x->desc);
    return r ? r : a < b ? -1 : 1;
}

/* tl_table_sort of a table of made rows: the key of each of rows [from, from + n) made once (a
 * string the row owns is copied: the next row made frees it), their places sorted in place, and
 * the rows' order takes the result; no row is held as cells. The first sort sorts the order
 * itself (it is the places then): 13 bytes a row with the order (a merge sort of the key cells
 * held 28); a later one sorts an index of places and maps it through. */
static void sort_made(tl_table *t, int col, int desc, int from, int n)
{
    struct tl_rows *R = t->rows;
    int str = t->cols[col].type == TL_COL_STR, first = !R->order;
    made_key *key = malloc((size_t)n * sizeof *key);
    uint8_t *fl = malloc((size_t)n);
    int *order = first ? malloc((size_t)t->nrows * sizeof *order) : R->order;
    int32_t *idx = !first ? malloc((size_t)n * sizeof *idx) : order ? order + from : NULL;
    int nkeys = 0;
    if (!key || !fl || !idx)
        goto out;
    for (int i = 0; i < n; i++, nkeys++) {
        const tl_cell *c = made_cell(t, from + i, col);
        fl[i] = c->set ? KEY_SET : 0;
        key[i].i = c->i;
        if (str && c->set && !c->borrowed) {
            key[i].s = xstrdup(c->s); /* NULL when out of memory: compares as "" */
            fl[i] |= KEY_OWNED;
        }
        idx[i] = i;
    }
    tl_sort_index(idx, (size_t)n, place_before, &(sort_ctx){t, col, desc, from, key, fl});
    if (first) {
        for (int i = 0; i < from; i++)
            order[i] = i;
        for (int i = 0; i < n; i++)
            idx[i] += from;
        R->order = order;
    } else {
        for (int i = 0; i < n; i++)
            idx[i] = order[from + idx[i]];
        memcpy(order + from, idx, (size_t)n * sizeof *idx);
    }
    R->made = -1;
out:
    if (first && !R->order)
        free(order);
    else if (!first)
        free(idx);
    for (int i = 0; str && i < nkeys; i++)
        if (fl[i] & KEY_OWNED)
            free(key[i].s);
    free(key);
    free(fl);
}

void tl_table_sort(tl_table *t, int col, int desc, int from)
{
    if (!t || col < 0 || col >= t->ncols || t->ncols == 0)
        return;
    if (from < 0)
        from = 0;
    int n = t->nrows - from;
    if (n < 2)
        return;
    if (t->rows) {
        sort_made(t, col, desc, from, n);
        return;
    }
    /* the rows' places sorted, then the rows moved into that order in place, holding one row
     * aside (a copy of every row would double the table's memory) */
    int32_t *idx = malloc((size_t)n * sizeof *idx);
    tl_cell *held = malloc((size_t)t->ncols * sizeof *held);
    if (idx && held) {
        for (int i = 0; i < n; i++)
            idx[i] = i;
        tl_sort_index(idx, (size_t)n, place_before, &(sort_ctx){t, col, desc, from, NULL, NULL});
        tl_permute(&t->cells[(size_t)from * t->ncols], (size_t)n, (size_t)t->ncols * sizeof *held,
                   idx, held);
    }
    free(idx);
    free(held);
}

/* "total_us" matches "total", "ratio_pct" matches "ratio": the unit suffix may be left off. */
static int key_matches_base(const char *key, const char *name)
{
    static const char *const suffixes[] = {"_us", "_pct", "_bytes", "_ns", "_ms", "_s"};
    size_t kl = strlen(key), nl = strlen(name);
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        size_t sl = strlen(suffixes[i]);
        if (kl == nl + sl && strncasecmp(key, name, nl) == 0 &&
            strcasecmp(key + nl, suffixes[i]) == 0)
            return 1;
    }
    return 0;
}

int tl_table_find_col(const tl_table *t, const char *name)
{
    if (!t || !name || !*name)
        return -1;
    for (int c = 0; c < t->ncols; c++)
        if (strcasecmp(t->cols[c].key, name) == 0)
            return c;
    for (int c = 0; c < t->ncols; c++)
        if (strcasecmp(t->cols[c].title, name) == 0)
            return c;
    for (int c = 0; c < t->ncols; c++)
        if (key_matches_base(t->cols[c].key, name))
            return c;
    return -1;
}

void tl_table_truncate(tl_table *t, int n)
{
    if (!t || n < 0 || n >= t->nrows)
        return;
    for (int r = n; !t->rows && r < t->nrows; r++)
        free_row(t, r);
    t->nrows = n;
}

/* ---- parsing options --------------------------------------------------------------------- */

int tl_format_parse(const char *s)
{
    if (!s)
        return -1;
    if (strcasecmp(s, "text") == 0)
        return TL_FMT_TEXT;
    if (strcasecmp(s, "csv") == 0)
        return TL_FMT_CSV;
    if (strcasecmp(s, "json") == 0)
        return TL_FMT_JSON;
    return -1;
}

int tl_unit_parse(const char *s)
{
    if (!s)
        return -1;
    static const struct {
        const char *name;
        tl_unit unit;
    } units[] = {{"auto", TL_UNIT_AUTO},
                 {"ns", TL_UNIT_NS},
                 {"us", TL_UNIT_US},
                 {"ms", TL_UNIT_MS},
                 {"s", TL_UNIT_S}};
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strcasecmp(s, units[i].name) == 0)
            return (int)units[i].unit;
    return -1;
}

/* ---- cell formatting --------------------------------------------------------------------- */

void tl_fmt_time(char *buf, size_t n, int64_t ns, tl_unit unit)
{
    if (!buf || n == 0)
        return;
    if (fmt_time_int(buf, n, ns, unit) == 0)
        return;
    double us = (double)ns / 1e3;
    if (unit == TL_UNIT_AUTO) {
        double a = fabs(us);
        unit = a >= 1e6 ? TL_UNIT_S : a >= 1e3 ? TL_UNIT_MS : TL_UNIT_US;
    }
    switch (unit) {
    case TL_UNIT_NS:
        snprintf(buf, n, "%lldns", (long long)ns);
        break;
    case TL_UNIT_S:
        snprintf(buf, n, "%.3fs", us / 1e6);
        break;
    case TL_UNIT_MS:
        snprintf(buf, n, "%.3fms", us / 1e3);
        break;
    default:
        snprintf(buf, n, "%.3fus", us);
        break;
    }
}

void tl_fmt_bytes(char *buf, size_t n, int64_t bytes)
{
    if (!buf || n == 0)
        return;
    const double kib = 1024.0, mib = kib * 1024, gib = mib * 1024;
    double a = fabs((double)bytes);
    if (a >= gib)
        snprintf(buf, n, "%.2f GB", (double)bytes / gib);
    else if (a >= mib)
        snprintf(buf, n, "%.2f MB", (double)bytes / mib);
    else if (a >= kib)
        snprintf(buf, n, "%.2f KB", (double)bytes / kib);
    else
        snprintf(buf, n, "%lld B", (long long)bytes);
}

/* Text form of one cell into buf (not including indentation). */
static void fmt_text_cell(char *buf, size_t n, const tl_cell *c, tl_coltype ty, tl_unit unit)
{
    if (!c->set) {
        snprintf(buf, n, "-");
        return;
    }
    switch (ty) {
    case TL_COL_STR:
        snprintf(buf, n, "%s", c->s ? c->s : "");
        break;
    case TL_COL_INT:
        snprintf(buf, n, "%lld", (long long)c->i);
        break;
    case TL_COL_TIME:
        tl_fmt_time(buf, n, c->i, unit);
        break;
    case TL_COL_PCT:
        if (fmt_fixed_int(buf, n, c->d, 2, "%") == 0)
            break;
        if (isfinite(c->d))
            snprintf(buf, n, "%.2f%%", c->d);
        else
            snprintf(buf, n, "NaN");
        break;
    case TL_COL_BYTES:
        tl_fmt_bytes(buf, n, c->i);
        break;
    case TL_COL_FLOAT:
        if (isfinite(c->d))
            snprintf(buf, n, "%.3f", c->d);
        else
            snprintf(buf, n, "NaN");
        break;
    case TL_COL_RATE:
        if (isfinite(c->d))
            snprintf(buf, n, "%.2f", c->d);
        else
            snprintf(buf, n, "NaN");
        break;
    }
}

/* Machine form of a set numeric cell (csv/json): plain numbers, times in microseconds. */
static void fmt_number_cell(char *buf, size_t n, const tl_cell *c, tl_coltype ty)
{
    switch (ty) {
    case TL_COL_INT:
    case TL_COL_BYTES:
        snprintf(buf, n, "%lld", (long long)c->i);
        break;
    case TL_COL_TIME:
        /* Exact: ns / 1000 has at most three decimals. */
        if (c->i % 1000 == 0)
            snprintf(buf, n, "%lld", (long long)(c->i / 1000));
        else if (c->i > 0 && c->i < EXACT_NS) { /* "%.3f" without its trailing zeros */
            put_fixed(buf, n, (uint64_t)c->i, 3, "");
            char *e = buf + strlen(buf) - 1;
            while (*e == '0')
                *e-- = '\0';
        } else
            fmt_plain(buf, n, (double)c->i / 1e3, 3);
        break;
    case TL_COL_PCT:
        fmt_plain(buf, n, c->d, 4);
        break;
    default:
        fmt_plain(buf, n, c->d, 6);
        break;
    }
}

/* Which columns hold indented text (lvl[c] = 1)? Those carry an extra "<key>_level" field in
 * csv and json. One pass over the rows, a row at a time (a table of made rows makes each row
 * once). */
static void indent_cols(const tl_table *t, int *lvl)
{
    int left = 0;
    for (int c = 0; c < t->ncols; c++) {
        lvl[c] = 0;
        left += t->cols[c].type == TL_COL_STR;
    }
    for (int r = 0; r < t->nrows && left > 0; r++)
        for (int c = 0; c < t->ncols; c++)
            if (t->cols[c].type == TL_COL_STR && !lvl[c] && ccell_at(t, r, c)->indent > 0) {
                lvl[c] = 1;
                left--;
            }
}

/* ---- text -------------------------------------------------------------------------------- */

/* A line under construction; trailing blanks are cut before it is written. */
typedef struct linebuf {
    char *p;
    size_t n, cap;
} linebuf;

static void lb_putn(linebuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->n + n + 1 > cap)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np)
            return;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void lb_pad(linebuf *b, char ch, int n)
{
    char tmp[64];
    memset(tmp, ch, sizeof tmp);
    while (n > 0) {
        int k = n > (int)sizeof tmp ? (int)sizeof tmp : n;
        lb_putn(b, tmp, (size_t)k);
        n -= k;
    }
}

static void lb_flush(linebuf *b, FILE *f)
{
    while (b->n > 0 && b->p[b->n - 1] == ' ')
        b->n--;
    if (b->n)
        fwrite(b->p, 1, b->n, f);
    fputc('\n', f);
    b->n = 0;
}

/* Append s into a field of width w; control characters become blanks so a name holding a
 * newline cannot break the layout; names wider than the field end in "...". */
static void lb_field(linebuf *b, const char *s, int w, int left)
{
    int sw = disp_width(s);
    size_t len = strlen(s);
    int cut = 0;
    if (sw > w) {
        len = disp_prefix(s, w > 3 ? w - 3 : w);
        sw = w;
        cut = w > 3;
    }
    if (!left)
        lb_pad(b, ' ', w - sw);
    size_t start = b->n;
    lb_putn(b, s, len);
    for (size_t i = start; i < b->n; i++)
        if ((unsigned char)b->p[i] < 0x20 || b->p[i] == 0x7f)
            b->p[i] = ' ';
    if (cut)
        lb_putn(b, "...", 3);
    if (left)
        lb_pad(b, ' ', w - sw);
}

/* Room for a cell's text: its own bytes, then the heap for a longer name (--wide prints a
 * kernel's 657-byte name whole). */
typedef struct cellbuf {
    char *p; /* small, or a heap block of cap bytes */
    size_t cap;
    char small[552];
} cellbuf;

/* The text of cell (r, c) with its indentation (at most 40 blanks), in cb (the whole name;
 * without memory for it, its first 511 bytes). */
static const char *text_cell(cellbuf *cb, const tl_table *t, int r, int c, tl_unit unit)
{
    const tl_cell *cell = ccell_at(t, r, c);
    int str = cell->set && t->cols[c].type == TL_COL_STR;
    int ind = str ? cell->indent : 0;
    if (ind > 20)
        ind = 20;
    size_t need = (size_t)ind * 2 + (str && cell->s ? strlen(cell->s) : 0) + 64;
    if (!cb->p) {
        cb->p = cb->small;
        cb->cap = sizeof cb->small;
    }
    if (need > cb->cap) {
        char *np = cb->p == cb->small ? malloc(need) : realloc(cb->p, need);
        if (np) {
            cb->p = np;
            cb->cap = need;
        }
    }
    memset(cb->p, ' ', (size_t)ind * 2);
    fmt_text_cell(cb->p + ind * 2, cb->cap - (size_t)ind * 2, cell, t->cols[c].type, unit);
    return cb->p;
}

static void cellbuf_free(cellbuf *cb)
{
    if (cb->p != cb->small)
        free(cb->p);
}

/* Two passes over the cells, each formatting them again: one for the column widths, one to
 * write. Keeping every cell's text between them cost a malloc per cell (~40 bytes each, 300 MB
 * for a million rows of seven columns). */
static void text_table(tl_out *o, const tl_table *t)
{
    FILE *f = o->f;
    int nc = t->ncols, nr = t->nrows;
    int *w = calloc(nc ? (size_t)nc : 1, sizeof *w);
    char *show = calloc(nc ? (size_t)nc : 1, 1);
    if (!w || !show) {
        free(w);
        free(show);
        return;
    }
    /* A column no row fills (GPU columns of a CPU-only trace) is left out of the text; csv and
     * json keep it, empty, so that scripts see the same fields for every trace. */
    int hidden = 0; /* columns no row seen so far fills; a row at a time (see indent_cols) */
    for (int c = 0; c < nc; c++) {
        w[c] = disp_width(t->cols[c].title);
        show[c] = nr == 0;
        hidden += !show[c];
    }
    for (int r = 0; r < nr && hidden > 0; r++)
        for (int c = 0; c < nc; c++)
            if (!show[c] && ccell_at(t, r, c)->set) {
                show[c] = 1;
                hidden--;
            }
    cellbuf cb = {0};
    for (int r = 0; r < nr; r++) {
        for (int c = 0; c < nc; c++) {
            if (!show[c])
                continue;
            int cw = disp_width(text_cell(&cb, t, r, c, o->unit));
            if (!o->wide && t->cols[c].type == TL_COL_STR && cw > TL_TEXT_MAX_NAME)
                cw = TL_TEXT_MAX_NAME;
            if (cw > w[c])
                w[c] = cw;
        }
    }
    int total = 0, nshown = 0;
    for (int c = 0; c < nc; c++)
        if (show[c])
            total += w[c] + (nshown++ ? 2 : 0);

    linebuf b = {0};
    if (o->ntables > 0)
        fputc('\n', f);
    /* Title centred in a rule as wide as the table ("-----Overview-----"). */
    int tw = disp_width(t->title);
    int rule = total > tw + 4 ? total : tw + 4;
    lb_pad(&b, '-', (rule - tw) / 2);
    lb_putn(&b, t->title, strlen(t->title));
    lb_pad(&b, '-', rule - tw - (rule - tw) / 2);
    lb_flush(&b, f);
    if (o->unit != TL_UNIT_AUTO) {
        for (int c = 0; c < nc; c++) {
            if (t->cols[c].type == TL_COL_TIME) {
                static const char *const names[] = {"auto", "ns", "us", "ms", "s"};
                fprintf(f, "Time unit: %s\n", names[o->unit]);
                break;
            }
        }
    }
    if (nc > 0) {
        for (int c = 0, k = 0; c < nc; c++) {
            if (!show[c])
                continue;
            if (k++)
                lb_putn(&b, "  ", 2);
            lb_field(&b, t->cols[c].title, w[c], t->cols[c].left);
        }
        lb_flush(&b, f);
        for (int c = 0, k = 0; c < nc; c++) {
            if (!show[c])
                continue;
            if (k++)
                lb_putn(&b, "  ", 2);
            lb_pad(&b, '-', w[c]);
        }
        lb_flush(&b, f);
        for (int r = 0; r < nr; r++) {
            for (int c = 0, k = 0; c < nc; c++) {
                if (!show[c])
                    continue;
                if (k++)
                    lb_putn(&b, "  ", 2);
                lb_field(&b, text_cell(&cb, t, r, c, o->unit), w[c], t->cols[c].left);
            }
            lb_flush(&b, f);
        }
        for (int c = 0, k = 0; c < nc && nr > 0; c++) {
            if (!show[c])
                continue;
            if (k++)
                lb_putn(&b, "  ", 2);
            lb_pad(&b, '-', w[c]);
        }
        if (nr > 0)
            lb_flush(&b, f);
    }
    for (int i = 0; i < t->nnotes; i++)
        fprintf(f, "%s\n", t->notes[i]);
    cellbuf_free(&cb);
    free(b.p);
    free(w);
    free(show);
}

/* ---- csv --------------------------------------------------------------------------------- */

static void put_commas(FILE *f, int n)
{
    static const char commas[] = ",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,";
    for (; n > 0; n -= (int)sizeof commas - 1)
        fwrite(commas, 1, n < (int)sizeof commas - 1 ? (size_t)n : sizeof commas - 1, f);
}

static void csv_str(FILE *f, const char *s)
{
    if (!s)
        s = "";
    /* A leading '#' is quoted too, so that no line starts with one: readers told to skip
     * comment lines (numpy.genfromtxt, gnuplot) keep PyTorch's "## forward ##" rows. */
    int quote = strpbrk(s, ",\"\r\n") != NULL ||
                (*s && (s[0] == ' ' || s[0] == '#' || s[strlen(s) - 1] == ' '));
    if (!quote) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* The key t is written under: its own, or with "_2", "_3", ... when a table of this output
 * already used it, so that JSON keys and CSV view names stay unique. */
static void unique_key(tl_out *o, const tl_table *t, char *key, size_t n)
{
    struct tl_out_priv *pv = o->priv;
    snprintf(key, n, "%s", t->key);
    if (!pv)
        return;
    for (int k = 2;; k++) {
        int dup = 0;
        for (int i = 0; i < pv->nkeys; i++)
            if (strcmp(pv->keys[i], key) == 0)
                dup = 1;
        if (!dup)
            break;
        snprintf(key, n, "%s_%d", t->key, k);
    }
    char **nk = realloc(pv->keys, (size_t)(pv->nkeys + 1) * sizeof *nk);
    if (nk) {
        pv->keys = nk;
        char *d = xstrdup(key);
        if (d)
            pv->keys[pv->nkeys++] = d;
    }
}

/* The union column of key for column c of a table whose earlier columns took map[0..c-1]:
 * the first column of that key no earlier column took, else a new one; -1 when out of memory. */
static int csv_union_col(struct tl_out_priv *pv, const char *key, const int *map, int c)
{
    for (int k = 0; k < pv->nu; k++) {
        int taken = 0; /* an earlier column of this table took union column k */
        for (int j = 0; j < c && !taken; j++)
            taken = map[j] == k;
        if (!taken && strcmp(pv->ukeys[k], key) == 0)
            return k;
    }
    if (pv->nu == pv->ucap) {
        int cap = pv->ucap ? pv->ucap * 2 : 32;
        char **nk = realloc(pv->ukeys, (size_t)cap * sizeof *nk);
        if (!nk)
            return -1;
        pv->ukeys = nk;
        pv->ucap = cap;
    }
    char *d = xstrdup(key);
    if (!d)
        return -1;
    pv->ukeys[pv->nu] = d;
    return pv->nu++;
}

/* Write t's rows as CSV text into the output's spool, under the union's columns so far. A
 * spool on disk (tmpfile) keeps a report of a million rows out of memory. */
static void csv_table(tl_out *o, const tl_table *t)
{
    struct tl_out_priv *pv = o->priv;
    if (!pv)
        return;
    if (!pv->spool && !(pv->spool = tmpfile())) {
        if (!(pv->spool = open_memstream(&pv->mem, &pv->memlen)))
            return;
        pv->inmem = 1;
    }
    csv_held *nh = realloc(pv->csv, (size_t)(pv->ncsv + 1) * sizeof *nh);
    if (!nh)
        return;
    pv->csv = nh;
    csv_held *h = &pv->csv[pv->ncsv];
    memset(h, 0, sizeof *h);
    char key[256];
    unique_key(o, t, key, sizeof key);
    int *lvl = calloc(t->ncols ? (size_t)t->ncols : 1, sizeof *lvl);
    int n = 0;
    if (lvl)
        indent_cols(t, lvl);
    for (int c = 0; lvl && c < t->ncols; c++)
        n += 1 + lvl[c];
    int *map = calloc(n ? (size_t)n : 1, sizeof *map);
    char *nbuf = malloc((n ? (size_t)n : 1) * 128); /* each field's number text */
    h->view = xstrdup(key);
    if (!lvl || !map || !nbuf || !h->view)
        goto out;
    for (int c = 0, k = 0; c < t->ncols; c++) {
        if ((map[k] = csv_union_col(pv, t->cols[c].key, map, k)) < 0)
            goto out;
        k++;
        if (lvl[c]) {
            char lk[256];
            snprintf(lk, sizeof lk, "%s_level", t->cols[c].key);
            if ((map[k] = csv_union_col(pv, lk, map, k)) < 0)
                goto out;
            k++;
        }
    }
    h->nu = pv->nu;
    const char **line = calloc(h->nu ? (size_t)h->nu : 1, sizeof *line);
    if (!line)
        goto out;
    FILE *sp = pv->spool;
    for (int r = 0; r < t->nrows; r++) {
        memset(line, 0, (size_t)(h->nu ? h->nu : 1) * sizeof *line);
        for (int c = 0, k = 0; c < t->ncols; c++) {
            const tl_cell *cell = ccell_at(t, r, c);
            char *buf = nbuf + (size_t)k * 128;
            if (cell->set) {
                if (t->cols[c].type == TL_COL_STR) {
                    line[map[k]] = cell->s ? cell->s : "";
                } else {
                    fmt_number_cell(buf, 128, cell, t->cols[c].type);
                    if (strcmp(buf, "null") != 0)
                        line[map[k]] = buf;
                }
            }
            k++;
            if (lvl[c]) {
                buf += 128;
                snprintf(buf, 128, "%d", cell->indent);
                line[map[k++]] = buf;
            }
        }
        /* the commas before a field (most of the union's columns are another view's: empty)
         * in one write */
        int commas = 0;
        for (int k = 0; k < h->nu; k++) {
            commas += k > 0;
            if (line[k]) {
                put_commas(sp, commas);
                commas = 0;
                csv_str(sp, line[k]);
            }
        }
        put_commas(sp, commas);
        fputc('\0', sp);
    }
    free(line);
    h->nrows = t->nrows;
    pv->ncsv++;
    h = NULL;
out:
    if (h)
        free(h->view);
    free(lvl);
    free(map);
    free(nbuf);
}

/* Write the held tables: one as it is; several as one table with a "view" column first and
 * the union of their columns, in order of first appearance (a key twice in one table is two
 * columns). */
static void csv_write(tl_out *o)
{
    struct tl_out_priv *pv = o->priv;
    FILE *f = o->f;
    if (!pv || pv->ncsv == 0 || !pv->spool)
        return;
    int multi = pv->ncsv > 1, nu = pv->nu;
    if (multi)
        fputs("view", f);
    for (int k = 0; k < nu; k++) {
        if (k || multi)
            fputc(',', f);
        csv_str(f, pv->ukeys[k]);
    }
    fputc('\n', f);
    FILE *rd = NULL;
    if (!pv->inmem) { /* a file: read it from the start */
        if (fflush(pv->spool) == 0 && fseek(pv->spool, 0, SEEK_SET) == 0)
            rd = pv->spool;
    } else { /* memory: the buffer is final once the stream is closed */
        fclose(pv->spool);
        pv->spool = NULL;
        rd = pv->memlen ? fmemopen(pv->mem, pv->memlen, "r") : NULL;
    }
    char *lb = NULL;
    size_t lcap = 0;
    for (int i = 0; i < pv->ncsv; i++) {
        const csv_held *h = &pv->csv[i];
        for (int r = 0; r < h->nrows; r++) {
            ssize_t len = rd ? getdelim(&lb, &lcap, '\0', rd) : -1;
            if (len <= 0)
                goto out; /* a spool that could not be written or read: the rows are lost */
            if (multi)
                csv_str(f, h->view);
            if (h->nu > 0) {
                if (multi)
                    fputc(',', f);
                fwrite(lb, 1, (size_t)len - 1, f);
            }
            for (int k = h->nu; k < nu; k++)
                if (k || multi)
                    fputc(',', f);
            fputc('\n', f);
        }
    }
out:
    free(lb);
    if (rd && rd != pv->spool)
        fclose(rd);
}

/* ---- json -------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s, or 0 when the bytes there are not valid UTF-8. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    int n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0)
        n = 2, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
        n = 3, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
        n = 4, min = 0x10000;
    else
        return 0;
    unsigned cp = c & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        /* a run of plain characters in one write */
        const unsigned char *q = p;
        while (*q >= 0x20 && *q < 0x7f && *q != '"' && *q != '\\')
            q++;
        if (q > p) {
            fwrite(p, 1, (size_t)(q - p), f);
            p = q;
            continue;
        }
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            p++;
        } else if (c == '\n') {
            fputs("\\n", f);
            p++;
        } else if (c == '\t') {
            fputs("\\t", f);
            p++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            fputc(c, f);
            p++;
        } else {
            int n = utf8_len(p);
            if (n == 0) {
                fputs("\\ufffd", f); /* invalid byte: keep the JSON valid */
                p++;
            } else {
                fwrite(p, 1, (size_t)n, f);
                p += n;
            }
        }
    }
    fputc('"', f);
}

static const char *type_name(tl_coltype ty)
{
    switch (ty) {
    case TL_COL_STR:
        return "str";
    case TL_COL_INT:
        return "int";
    case TL_COL_TIME:
        return "time_us";
    case TL_COL_PCT:
        return "pct";
    case TL_COL_BYTES:
        return "bytes";
    case TL_COL_FLOAT:
        return "float";
    case TL_COL_RATE:
        return "rate";
    }
    return "str";
}

/* Count one more top-level member of the JSON object; non-zero when one was written before. */
static int json_member(tl_out *o)
{
    struct tl_out_priv *pv = o->priv;
    return pv ? pv->nmembers++ > 0 : o->ntables > 0;
}

void tl_json_str(FILE *f, const char *s)
{
    json_str(f, s);
}

static void json_table(tl_out *o, const tl_table *t)
{
    FILE *f = o->f;
    /* A key already used gets "_2", "_3", ... so that the object stays valid. */
    char key[256];
    unique_key(o, t, key, sizeof key);
    fputs(json_member(o) ? ",\n  " : "\n  ", f);
    json_str(f, key);
    fputs(": {\n    \"title\": ", f);
    json_str(f, t->title);
    fputs(",\n    \"columns\": [", f);
    int *lvl = calloc(t->ncols ? (size_t)t->ncols : 1, sizeof *lvl);
    if (lvl)
        indent_cols(t, lvl);
    for (int c = 0; c < t->ncols; c++) {
        fputs(c ? ", {\"key\": " : "{\"key\": ", f);
        json_str(f, t->cols[c].key);
        fputs(", \"title\": ", f);
        json_str(f, t->cols[c].title);
        fprintf(f, ", \"type\": \"%s\"}", type_name(t->cols[c].type));
    }
    fputs("],\n    \"rows\": [", f);
    char buf[128];
    for (int r = 0; r < t->nrows; r++) {
        fputs(r ? ",\n      {" : "\n      {", f);
        for (int c = 0; c < t->ncols; c++) {
            const tl_cell *cell = ccell_at(t, r, c);
            if (c)
                fputs(", ", f);
            json_str(f, t->cols[c].key);
            fputs(": ", f);
            if (!cell->set) {
                fputs("null", f);
            } else if (t->cols[c].type == TL_COL_STR) {
                json_str(f, cell->s);
            } else {
                fmt_number_cell(buf, sizeof buf, cell, t->cols[c].type);
                fputs(buf, f);
            }
            if (lvl && lvl[c]) {
                char lk[256];
                snprintf(lk, sizeof lk, "%s_level", t->cols[c].key);
                fputs(", ", f);
                json_str(f, lk);
                fprintf(f, ": %d", cell->indent);
            }
        }
        fputc('}', f);
    }
    fputs(t->nrows ? "\n    ],\n    \"notes\": [" : "],\n    \"notes\": [", f);
    for (int i = 0; i < t->nnotes; i++) {
        if (i)
            fputs(", ", f);
        json_str(f, t->notes[i]);
    }
    fputs("]\n  }", f);
    free(lvl);
}

/* ---- the output sequence ----------------------------------------------------------------- */

void tl_out_begin(tl_out *o, FILE *f, tl_format fmt, tl_unit unit)
{
    memset(o, 0, sizeof *o);
    o->f = f;
    o->fmt = fmt;
    o->unit = unit;
    o->priv = calloc(1, sizeof *o->priv);
    if (fmt == TL_FMT_JSON)
        fputc('{', f);
}

void tl_out_table(tl_out *o, const tl_table *t)
{
    if (!o || !t || !o->f)
        return;
    switch (o->fmt) {
    case TL_FMT_CSV:
        csv_table(o, t);
        break;
    case TL_FMT_JSON:
        json_table(o, t);
        break;
    default:
        text_table(o, t);
        break;
    }
    o->ntables++;
}

void tl_out_json(tl_out *o, const char *key, const char *json)
{
    if (!o || !o->f || o->fmt != TL_FMT_JSON || !key || !json)
        return;
    fputs(json_member(o) ? ",\n  " : "\n  ", o->f);
    json_str(o->f, key);
    fputs(": ", o->f);
    fputs(json, o->f);
}

void tl_out_text(tl_out *o, const char *fmt, ...)
{
    if (!o || !o->f || o->fmt == TL_FMT_CSV)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    if (!s)
        return;
    if (o->fmt == TL_FMT_TEXT) {
        size_t n = strlen(s);
        fputs(s, o->f);
        if (n == 0 || s[n - 1] != '\n')
            fputc('\n', o->f);
        free(s);
        return;
    }
    struct tl_out_priv *pv = o->priv;
    char **nm = pv ? realloc(pv->msgs, (size_t)(pv->nmsgs + 1) * sizeof *nm) : NULL;
    if (!nm) {
        free(s);
        return;
    }
    /* Messages are lines; a trailing newline is not part of the message. */
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '\n')
        s[--n] = '\0';
    pv->msgs = nm;
    pv->msgs[pv->nmsgs++] = s;
}

void tl_out_abort(tl_out *o)
{
    if (!o)
        return;
    FILE *f = o->f;
    o->f = NULL; /* tl_out_end writes nothing without a file, and frees the state */
    tl_out_end(o);
    if (f)
        fflush(f);
    o->f = f;
}

void tl_out_end(tl_out *o)
{
    if (!o)
        return;
    struct tl_out_priv *pv = o->priv;
    if (o->fmt == TL_FMT_CSV && o->f)
        csv_write(o);
    if (o->fmt == TL_FMT_JSON && o->f) {
        int any = pv ? pv->nmembers > 0 : o->ntables > 0;
        if (pv && pv->nmsgs > 0) {
            fputs(json_member(o) ? ",\n  \"messages\": [" : "\n  \"messages\": [", o->f);
            for (int i = 0; i < pv->nmsgs; i++) {
                if (i)
                    fputs(", ", o->f);
                json_str(o->f, pv->msgs[i]);
            }
            fputc(']', o->f);
        }
        fputs(any || (pv && pv->nmsgs > 0) ? "\n}\n" : "}\n", o->f);
    }
    if (pv) {
        for (int i = 0; i < pv->ncsv; i++)
            free(pv->csv[i].view);
        free(pv->csv);
        for (int i = 0; i < pv->nu; i++)
            free(pv->ukeys[i]);
        free(pv->ukeys);
        if (pv->spool)
            fclose(pv->spool);
        free(pv->mem);
        for (int i = 0; i < pv->nmsgs; i++)
            free(pv->msgs[i]);
        free(pv->msgs);
        for (int i = 0; i < pv->nkeys; i++)
            free(pv->keys[i]);
        free(pv->keys);
        free(pv);
    }
    o->priv = NULL;
    if (o->f)
        fflush(o->f);
}
