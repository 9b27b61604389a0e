/*
 * table.h — every view's result is a table of typed cells; this file renders it as aligned
 * text, CSV or JSON. Views never printf: they fill a tl_table and hand it to a tl_out.
 *
 * Cell types carry their unit, so the text renderer can scale times like PyTorch ("1.234ms")
 * while CSV and JSON carry plain numbers whose unit is in the column key ("total_us").
 */
#ifndef TALLY_REPORT_TABLE_H
#define TALLY_REPORT_TABLE_H

#include <stdint.h>
#include <stdio.h>

typedef enum tl_coltype {
    TL_COL_STR = 0, /* text */
    TL_COL_INT,     /* integer count */
    TL_COL_TIME,    /* int64 ns; text: auto-scaled us/ms/s; csv/json: microseconds (key "..._us") */
    TL_COL_PCT,     /* double percent (0..100); text "12.34%"; csv/json: number */
    TL_COL_BYTES,   /* int64 bytes; text "1.50 MB"; csv/json: integer bytes */
    TL_COL_FLOAT,   /* double; printed with %.3f */
    TL_COL_RATE     /* double GB/s or steps/s etc; %.2f */
} tl_coltype;

typedef struct tl_col {
    const char *title; /* text header, e.g. "CPU Total" */
    const char *key;   /* csv/json field, e.g. "cpu_total_us" */
    tl_coltype type;
    int left; /* left-align in text (names); numbers are right-aligned */
} tl_col;

/* 16 bytes: a view with a row per distinct name (a million of them) holds millions of cells.
 * i, d and s share their bytes: which one a cell holds is its column's type (i: INT, TIME,
 * BYTES; d: PCT, FLOAT, RATE; s: STR). */
typedef struct tl_cell {
    union {
        int64_t i; /* INT, TIME, BYTES */
        double d;  /* PCT, FLOAT, RATE */
        char *s;   /* STR: owned, or borrowed when .borrowed is set */
    };
    int32_t indent;   /* STR: leading indent level in text (2 spaces each) */
    uint8_t set;      /* 0 = empty cell ("-" in text, empty in csv, null in json) */
    uint8_t borrowed; /* STR: s is not the table's (tl_table_str_ref): never freed */
} tl_cell;

typedef struct tl_table {
    char *title; /* "Overview", "Kernel Summary" */
    char *key;   /* json key: "overview" */
    tl_col *cols;
    int ncols;
    tl_cell *cells; /* row-major */
    int nrows, cap_rows;
    char **notes; /* footer lines (text only; json: "notes" array) */
    int nnotes;
    int why_empty; /* 1 + the index of the note that says why the table holds nothing to read
                      ("no memory events", "no input shapes"); 0: none. csv has no notes: the
                      command line says it on stderr */
    struct tl_table *next; /* a view may return several tables as a chain; tl_table_free frees
                              the whole chain, tl_out_table writes one table */
    struct tl_rows *rows;  /* a table of rows made when read (tl_table_new_rows), else NULL */
} tl_table;

tl_table *tl_table_new(const char *title, const char *key, const tl_col *cols, int ncols);
void tl_table_free(tl_table *t);
/* A table whose rows are made as they are read instead of held as cells: a view with a row
 * per distinct name (a million of them) keeps its rows in its own compact form and fill makes
 * one row when a renderer or a sort asks for it, writing it with the setters below into row 0
 * of `one` (a table of the same columns, its row emptied before each call). fill must give the
 * same cells each time it is called for a row. The table owns ctx (ctx_free frees it, may be
 * NULL). Its cells are read only through tl_table_cell (renderers and sorts do); rows cannot be
 * added or set, and t->cells is NULL. tl_table_sort and tl_table_truncate order and cut it as
 * any other (an index of its rows, 4 bytes a row). NULL when out of memory (ctx is then freed
 * too). */
typedef void (*tl_row_fill)(const void *ctx, int row, struct tl_table *one);
tl_table *tl_table_new_rows(const char *title, const char *key, const tl_col *cols, int ncols,
                            int nrows, tl_row_fill fill, void *ctx, void (*ctx_free)(void *));
/* Cell (row, col) of any table; for a table of made rows, valid until the next call on the
 * table. */
const tl_cell *tl_table_cell(const tl_table *t, int row, int col);

/* Append an empty row, return its index. */
int tl_table_add_row(tl_table *t);
/* Make room for nrows rows in all (a view that knows its row count: no doubling, no slack);
 * 0, or -1 when out of memory (the table is unchanged). */
int tl_table_reserve(tl_table *t, int nrows);
void tl_table_str(tl_table *t, int row, int col, const char *s);
/* A string the table borrows instead of copying: a name from the trace's string table
 * (tl_str) or a literal. The string must outlive the table: free a table holding one before
 * the trace it came from. A view with a row per distinct name saves a malloc'ed copy a row. */
void tl_table_str_ref(tl_table *t, int row, int col, const char *s);
void tl_table_strf(tl_table *t, int row, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void tl_table_indent(tl_table *t, int row, int col, int indent);
void tl_table_int(tl_table *t, int row, int col, int64_t v);
void tl_table_time(tl_table *t, int row, int col, int64_t ns);
void tl_table_pct(tl_table *t, int row, int col, double pct);
void tl_table_bytes(tl_table *t, int row, int col, int64_t bytes);
void tl_table_float(tl_table *t, int row, int col, double v);
void tl_table_note(tl_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The note just added is why the table holds nothing to read (tl_table.why_empty). */
void tl_table_note_is_why_empty(tl_table *t);
/* Name the accelerator as the trace does (tl_accel_name: "MTIA"): in the titles, column titles
 * and notes of every table of the chain, the words GPU and CUDA become accel; keys, and the rows
 * (names from the trace), are left as they are. Nothing changes for "GPU" (CUDA and ROCm traces)
 * or NULL. Returns 0, or -1 when out of memory (a text not renamed stays as it was). */
int tl_table_name_accel(tl_table *t, const char *accel);
/* Stable sort of rows [from, nrows) by column col; desc != 0 for descending. Empty cells last. */
void tl_table_sort(tl_table *t, int col, int desc, int from);
/* Column index by key or by title (case-insensitive), -1 if none. */
int tl_table_find_col(const tl_table *t, const char *name);
/* Keep at most n rows (after sorting). */
void tl_table_truncate(tl_table *t, int n);

typedef enum tl_format { TL_FMT_TEXT = 0, TL_FMT_CSV, TL_FMT_JSON } tl_format;
typedef enum tl_unit { TL_UNIT_AUTO = 0, TL_UNIT_NS, TL_UNIT_US, TL_UNIT_MS, TL_UNIT_S } tl_unit;

/* Parse "text|csv|json" and "auto|ns|us|ms|s"; -1 on an unknown word. */
int tl_format_parse(const char *s);
int tl_unit_parse(const char *s);

/* An output: a sequence of tables written in one format. JSON output is one object whose keys
 * are the tables' keys (and those given to tl_out_json). CSV output is one plain table with one
 * header row: a single table as it is; several as one table with a first column "view" (each
 * row's table key) under the union of their columns, written at tl_out_end. */
typedef struct tl_out {
    FILE *f;
    tl_format fmt;
    tl_unit unit;             /* text only: force one unit for times */
    int wide;                 /* text only: never cut names (set after tl_out_begin) */
    int ntables;              /* written so far */
    struct tl_out_priv *priv; /* renderer state (json messages, keys used); table.c owns it */
} tl_out;

void tl_out_begin(tl_out *o, FILE *f, tl_format fmt, tl_unit unit);
void tl_out_table(tl_out *o, const tl_table *t);
/* JSON only: a top-level member "key": json, json being a complete JSON value (the trace's
 * metadata); ignored in text and csv. */
void tl_out_json(tl_out *o, const char *key, const char *json);
/* Write s as a JSON string (quoted, escaped; invalid UTF-8 replaced) to f. */
void tl_json_str(FILE *f, const char *s);
/* A free-form paragraph: text only (ignored in csv; json: under "messages"). */
void tl_out_text(tl_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tl_out_end(tl_out *o);
/* Stop an output without finishing it (a report whose view failed): what was written stays,
 * nothing more is (JSON is left unclosed, so that no parser takes it for a whole report; CSV
 * tables held for tl_out_end are dropped); frees the renderer state. */
void tl_out_abort(tl_out *o);

/* Helpers shared by renderers and views. */
void tl_fmt_time(char *buf, size_t n, int64_t ns, tl_unit unit); /* "1.234ms" */
void tl_fmt_bytes(char *buf, size_t n, int64_t bytes);           /* "1.50 MB" */

#endif
