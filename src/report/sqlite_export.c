/*
 * sqlite_export.c — a trace as a SQLite database (docs/sqlite.md).
 *
 * The model's events go to one table per kind, by category: kernels, copies and memsets to
 * their tables, counter samples to counters, the memory table (t->mem) to memory, and every
 * other event — ranges, operators, runtime and driver calls, python frames, marks, GPU
 * annotations — to ranges. Times stay integer ns on the trace's clock (meta holds the offset to
 * Unix time); names are ids into one strings table shared by the traces of the database.
 *
 * What SQL cannot derive cheaply is computed here, once, with the analysis' own definitions:
 * a device event's in_window (tl_gpu_scope_counts: what the Kernel view counts) and, for the ops
 * table, each event's row (op: its name, "ProfilerStep*" for the steps; NULL for events
 * PyTorch's table leaves out), self CPU, self CUDA and CUDA total: the ops view's own per-event
 * terms (analysis/ops_events.h). The views then only sum.
 *
 * Speed: one transaction for the whole database, prepared statements of 16 rows each, journal
 * and syncs off (a failed export is deleted, never half-read: it is written under a temporary
 * name), no secondary index, views made once at close.
 */
#include "report/sqlite_export.h"
#include "trace/now.h"

#include "analysis/attrib.h"
#include "analysis/ops_events.h"
#include "analysis/steps.h"
#include "report/summary.h"
#include "tally.h"
#include "trace/checked.h"
#include "trace/chrome_json.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The tables. Every one has rank; events have ids unique in the database (ranges, kernels,
 * memcpy, memset and counters share one numbering: parent and launch name ids of ranges). */
static const char schema[] =
    "CREATE TABLE meta(rank INTEGER NOT NULL, key TEXT NOT NULL, value);"
    "CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE processes(rank INTEGER NOT NULL, pid INTEGER NOT NULL,"
    " PRIMARY KEY(rank, pid));"
    "CREATE TABLE threads(rank INTEGER NOT NULL, track INTEGER NOT NULL, pid INTEGER,"
    " tid INTEGER, name INTEGER, PRIMARY KEY(rank, track));"
    "CREATE TABLE devices(rank INTEGER NOT NULL, device INTEGER NOT NULL, name INTEGER,"
    " memory INTEGER, sm_count INTEGER, cc_major INTEGER, cc_minor INTEGER,"
    " PRIMARY KEY(rank, device));"
    "CREATE TABLE streams(rank INTEGER NOT NULL, track INTEGER NOT NULL, device INTEGER,"
    " stream INTEGER, name INTEGER, PRIMARY KEY(rank, track));"
    "CREATE TABLE steps(rank INTEGER NOT NULL, number INTEGER, name INTEGER, start INTEGER,"
    " end INTEGER, duration INTEGER, samples INTEGER, range INTEGER);"
    "CREATE TABLE ranges(id INTEGER PRIMARY KEY, rank INTEGER NOT NULL, track INTEGER,"
    " category TEXT, name INTEGER, start INTEGER, end INTEGER, duration INTEGER,"
    " parent INTEGER, depth INTEGER, correlation INTEGER, flags INTEGER, args TEXT,"
    " op INTEGER, op_device INTEGER, op_annotation INTEGER, self_cpu INTEGER,"
    " self_cuda INTEGER, cuda_total INTEGER);"
    "CREATE TABLE kernels(id INTEGER PRIMARY KEY, rank INTEGER NOT NULL, track INTEGER,"
    " device INTEGER, stream INTEGER, name INTEGER, start INTEGER, end INTEGER,"
    " duration INTEGER, correlation INTEGER, launch INTEGER, in_window INTEGER, grid TEXT,"
    " block TEXT, registers INTEGER, shared_memory INTEGER, occupancy REAL, args TEXT);"
    "CREATE TABLE memcpy(id INTEGER PRIMARY KEY, rank INTEGER NOT NULL, track INTEGER,"
    " device INTEGER, stream INTEGER, name INTEGER, start INTEGER, end INTEGER,"
    " duration INTEGER, correlation INTEGER, launch INTEGER, in_window INTEGER, kind TEXT,"
    " bytes INTEGER, pageable INTEGER, sync INTEGER, args TEXT);"
    "CREATE TABLE memset(id INTEGER PRIMARY KEY, rank INTEGER NOT NULL, track INTEGER,"
    " device INTEGER, stream INTEGER, name INTEGER, start INTEGER, end INTEGER,"
    " duration INTEGER, correlation INTEGER, launch INTEGER, in_window INTEGER,"
    " bytes INTEGER, args TEXT);"
    "CREATE TABLE memory(rank INTEGER NOT NULL, ts INTEGER, track INTEGER, device INTEGER,"
    " address INTEGER, bytes INTEGER, total_allocated INTEGER, total_reserved INTEGER,"
    " category TEXT, name INTEGER, flags INTEGER, correlation INTEGER);"
    "CREATE TABLE counters(id INTEGER PRIMARY KEY, rank INTEGER NOT NULL, track INTEGER,"
    " name INTEGER, ts INTEGER, value REAL, args TEXT);";

/* No secondary index: the views and the documented queries join on ids and string ids, the
 * primary keys; an index costs as much as the inserts of its table (SQLite sorts every row
 * again), so the ones a query of one's own needs are a CREATE INDEX away (docs/sqlite.md). */

/* The report's main tables. Times in ns; the reports print us. */
static const char views[] =
    /* tally report --views kernel: kernels counted as the Kernel view counts them (in_window);
     * Ratio is of the rank's kernel time (a sum over streams) */
    "CREATE VIEW kernel_summary AS SELECT k.rank AS rank, s.value AS name, count(*) AS calls,"
    " sum(k.duration) AS total_ns, (sum(k.duration) + count(*) / 2) / count(*) AS avg_ns,"
    " max(k.duration) AS max_ns, min(k.duration) AS min_ns,"
    " 100.0 * sum(k.duration) / sum(sum(k.duration)) OVER (PARTITION BY k.rank) AS ratio_pct"
    " FROM kernels k JOIN strings s ON s.id = k.name WHERE k.in_window"
    " GROUP BY k.rank, k.name;"
    /* tally ops: a row per (name, device or host, annotation or not); device work counts
     * its duration as self and total CUDA time */
    "CREATE VIEW ops_summary AS WITH ev(rank, op, device, annotation, cpu, self_cpu, self_cuda,"
    " cuda) AS (SELECT rank, op, op_device, op_annotation,"
    " CASE WHEN op_device THEN 0 ELSE duration END, self_cpu, self_cuda, cuda_total"
    " FROM ranges WHERE op IS NOT NULL"
    " UNION ALL SELECT rank, name, 1, 0, 0, 0, duration, duration FROM kernels"
    " UNION ALL SELECT rank, name, 1, 0, 0, 0, duration, duration FROM memcpy"
    " UNION ALL SELECT rank, name, 1, 0, 0, 0, duration, duration FROM memset)"
    " SELECT ev.rank AS rank, s.value AS name, device, annotation, count(*) AS calls,"
    " sum(self_cpu) AS self_cpu_ns,"
    " 100.0 * sum(self_cpu) / sum(sum(self_cpu)) OVER w AS self_cpu_pct,"
    " sum(cpu) AS cpu_total_ns, 100.0 * sum(cpu) / sum(sum(self_cpu)) OVER w AS cpu_total_pct,"
    " (sum(cpu) + count(*) / 2) / count(*) AS cpu_avg_ns, sum(self_cuda) AS self_cuda_ns,"
    " 100.0 * sum(self_cuda) / sum(CASE WHEN device AND NOT annotation THEN sum(self_cuda) END)"
    " OVER w AS self_cuda_pct, sum(cuda) AS cuda_total_ns,"
    " (sum(cuda) + count(*) / 2) / count(*) AS cuda_avg_ns"
    " FROM ev JOIN strings s ON s.id = ev.op GROUP BY ev.rank, device, annotation, ev.op"
    " WINDOW w AS (PARTITION BY ev.rank);"
    "CREATE VIEW step_times AS SELECT st.rank AS rank, st.number AS number, s.value AS name,"
    " st.start AS start, st.end AS end, st.duration AS duration_ns, st.samples AS samples,"
    " 100.0 * st.duration / avg(st.duration) OVER (PARTITION BY st.rank) AS of_avg_pct"
    " FROM steps st JOIN strings s ON s.id = st.name;";

/* The args column: the event's original args object (keep_raw), else the model's argument
 * string as {"args": TEXT}, else NULL. ?A is the object, ?B the string. (A CASE, not
 * coalesce(?A, nullif(json_object('args', ?B), ...)): that calls json_object for every row
 * without args, 20 % more CPU on a trace without them.) */
#define ARGS_SQL(A, B)                                                                             \
    "CASE WHEN ?" #A " IS NOT NULL THEN ?" #A " WHEN ?" #B " IS NOT NULL"                          \
    " THEN json_object('args', ?" #B ") END"

enum {
    S_STRING,
    S_META,
    S_PROCESS,
    S_THREAD,
    S_DEVICE,
    S_STREAM,
    S_STEP,
    S_RANGE,
    S_KERNEL,
    S_MEMCPY,
    S_MEMSET,
    S_MEMORY,
    S_COUNTER,
    S_COUNT
};

static const char *const stmt_sql[S_COUNT] = {
    [S_STRING] = "INSERT INTO strings VALUES(?1, ?2)",
    [S_META] = "INSERT INTO meta VALUES(?1, ?2, ?3)",
    [S_PROCESS] = "INSERT OR IGNORE INTO processes VALUES(?1, ?2)",
    [S_THREAD] = "INSERT INTO threads VALUES(?1, ?2, ?3, ?4, ?5)",
    [S_DEVICE] = "INSERT OR REPLACE INTO devices VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [S_STREAM] = "INSERT INTO streams VALUES(?1, ?2, ?3, ?4, ?5)",
    [S_STEP] = "INSERT INTO steps VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [S_RANGE] =
        "INSERT INTO ranges VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, " ARGS_SQL(
            13, 14) ", ?15, ?16, ?17, ?18, ?19, ?20)",
    /* a kernel's launch parameters are in its original args (Kineto's names), when kept (one
     * parse: json_extract caches it) */
    [S_KERNEL] = "INSERT INTO kernels VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,"
                 " json_extract(?13, '$.grid'), json_extract(?13, '$.block'),"
                 " json_extract(?13, '$.\"registers per thread\"'),"
                 " json_extract(?13, '$.\"shared memory\"'),"
                 " json_extract(?13, '$.\"est. achieved occupancy %\"'), " ARGS_SQL(13, 14) ")",
    [S_MEMCPY] = "INSERT INTO memcpy VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,"
                 " ?13, ?14, ?15, ?16, " ARGS_SQL(17, 18) ")",
    [S_MEMSET] = "INSERT INTO memset VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,"
                 " ?13, " ARGS_SQL(14, 15) ")",
    [S_MEMORY] = "INSERT INTO memory VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    [S_COUNTER] = "INSERT INTO counters VALUES(?1, ?2, ?3, ?4, ?5, ?6, " ARGS_SQL(7, 8) ")",
};

/* The tables of events are written BATCH rows a statement (INSERT ... VALUES (...), (...)):
 * one sqlite3_step, reset and statement start for 16 rows instead of one each (bench_sqlite:
 * CPU of the write -17 % on hta_df_index_resolver, -32 % on the generated trace; more rows
 * gain nothing more, and the prepare of a statement of N rows grows as N squared: 3 ms at 16
 * rows, 13 ms at 64, 50 ms at 128). A trace's rows of a table go through the
 * batched statement while a whole batch is left, the rest through the one-row statement; in event
 * order either way, so ids only grow and every insert appends to its B-tree. */
enum { BATCH = 16, S_FIRST_BATCHED = S_RANGE };

/* What a parameter holds: bindings stay across sqlite3_reset, so a value equal to the one bound
 * before (the rank, a category, a NULL, a depth) is not bound again. */
enum { P_UNKNOWN = 0, P_INT, P_NULL, P_TEXT };
typedef struct param {
    int64_t v; /* P_INT: the value; P_TEXT: the length */
    const char *p;
    int kind;
} param;

typedef struct batch {
    sqlite3_stmt *many; /* BATCH rows: the parameters of row r are the one-row ones + r*stride */
    int stride;         /* the largest parameter number of the one-row statement */
    int at;             /* rows bound in many */
    size_t bulk;        /* rows of this trace still to go through many */
    param *pm, *p1;     /* what many's and the one-row statement's parameters hold */
} batch;

/* A row being bound: its statement, the offset of its parameters, what they hold. */
typedef struct row {
    sqlite3_stmt *s;
    int o;
    param *c; /* c[p]: parameter o + p */
} row;

struct tl_sqlite {
    sqlite3 *db;
    sqlite3_stmt *st[S_COUNT];
    batch b[S_COUNT]; /* the tables of events (from S_FIRST_BATCHED) */
    char *path, *tmp; /* the file asked for, and the name it is written under until close */
    tl_strtab strs;   /* every string of the database: id -> strings.id */
    int64_t next_id;  /* the id of the next event */
    int progress;
    int failed; /* an add failed: close discards the file */
    tl_error why;
};

static int db_fail(tl_sqlite *db, tl_error *err, const char *what)
{
    tl_error_setc(err, TL_ERR_IO, "%s: %s: %s", db->path, what, sqlite3_errmsg(db->db));
    return -1;
}

static int exec(tl_sqlite *db, const char *sql, tl_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db->db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    tl_error_setc(err, TL_ERR_IO, "%s: %s", db->path, msg ? msg : "sqlite error");
    sqlite3_free(msg);
    return -1;
}

static void db_free(tl_sqlite *db)
{
    for (int i = 0; i < S_COUNT; i++) {
        sqlite3_finalize(db->st[i]);
        sqlite3_finalize(db->b[i].many);
        free(db->b[i].pm);
        free(db->b[i].p1);
    }
    sqlite3_close(db->db);
    tl_strtab_free(&db->strs);
    free(db->path);
    free(db->tmp);
    free(db);
}

/* The statement of BATCH rows for the one-row INSERT ... VALUES(...) sql, whose parameters go
 * up to ?stride: each row its copy of the values, the parameters renumbered. NULL when out of
 * memory. */
static char *batch_sql(const char *sql, int stride)
{
    const char *vals = strstr(sql, "VALUES(") + 6;
    size_t head = (size_t)(vals - sql), row = strlen(vals);
    size_t cap = head + BATCH * (row * 2 + 2) + 1; /* a renumbered ?N at most doubles */
    char *out = malloc(cap), *w = out;
    if (!out)
        return NULL;
    memcpy(w, sql, head);
    w += head;
    for (int r = 0; r < BATCH; r++) {
        if (r)
            *w++ = ',';
        for (const char *p = vals; *p;) {
            if (*p != '?') {
                *w++ = *p++;
                continue;
            }
            char *end;
            long n = strtol(p + 1, &end, 10);
            w += sprintf(w, "?%ld", n + (long)r * stride);
            p = end;
        }
    }
    *w = 0;
    return out;
}

/* The largest parameter number of sql. */
static int max_param(const char *sql)
{
    int m = 0;
    for (const char *p = strchr(sql, '?'); p; p = strchr(p + 1, '?')) {
        int n = atoi(p + 1);
        m = n > m ? n : m;
    }
    return m;
}

tl_sqlite *tl_sqlite_open(const char *path, tl_error *err)
{
    tl_sqlite *db = calloc(1, sizeof *db);
    size_t n = strlen(path) + 32;
    if (!db || !(db->path = strdup(path)) || !(db->tmp = malloc(n))) {
        if (db)
            free(db->path);
        free(db);
        tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", path);
        return NULL;
    }
    tl_strtab_init(&db->strs);
    db->next_id = 1;
    snprintf(db->tmp, n, "%s.tmp-%ld", path, (long)getpid());
    /* created here, not by SQLite, for the system's own word on why a path cannot be written */
    int fd = open(db->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        tl_error_setc(err, TL_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        db_free(db);
        return NULL;
    }
    close(fd);
    /* one thread uses the connection: no mutex per call (6 % of the export's time) */
    if (sqlite3_open_v2(db->tmp, &db->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        db_fail(db, err, "cannot open");
        goto fail;
    }
    /* a database nobody reads until it is complete: no journal, no syncs, one writer */
    if (exec(db,
             "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
             "PRAGMA temp_store=MEMORY; PRAGMA cache_size=-262144; PRAGMA page_size=65536;"
             "BEGIN;",
             err) != 0 ||
        exec(db, schema, err) != 0 || exec(db, "INSERT INTO strings VALUES(0, '')", err) != 0)
        goto fail;
    for (int i = 0; i < S_COUNT; i++)
        if (sqlite3_prepare_v3(db->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &db->st[i],
                               NULL) != SQLITE_OK) {
            db_fail(db, err, "cannot prepare");
            goto fail;
        }
    for (int i = S_FIRST_BATCHED; i < S_COUNT; i++) {
        batch *b = &db->b[i];
        b->stride = max_param(stmt_sql[i]);
        char *sql = batch_sql(stmt_sql[i], b->stride);
        int rc =
            sql ? sqlite3_prepare_v3(db->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &b->many, NULL)
                : SQLITE_NOMEM;
        free(sql);
        if (rc != SQLITE_OK) {
            db_fail(db, err, "cannot prepare");
            goto fail;
        }
        b->pm = calloc((size_t)(BATCH * b->stride + 1), sizeof *b->pm);
        b->p1 = calloc((size_t)(b->stride + 1), sizeof *b->p1);
        if (!b->pm || !b->p1) {
            tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", path);
            goto fail;
        }
    }
    return db;
fail:
    unlink(db->tmp);
    db_free(db);
    return NULL;
}

void tl_sqlite_progress(tl_sqlite *db, int on)
{
    if (db)
        db->progress = on;
}

int64_t tl_sqlite_trace_rank(const tl_trace *t)
{
    return t->rank >= 0 ? t->rank : 0;
}

/* ---- binding ---------------------------------------------------------------------------- */

static void bind_int(sqlite3_stmt *s, int i, int64_t v)
{
    sqlite3_bind_int64(s, i, v);
}

/* v, or NULL when v is none */
static void bind_opt(sqlite3_stmt *s, int i, int64_t v, int64_t none)
{
    if (v == none)
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_int64(s, i, v);
}

static void bind_text(sqlite3_stmt *s, int i, const char *p, size_t n)
{
    if (p)
        sqlite3_bind_text(s, i, p, (int)n, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static int step(tl_sqlite *db, sqlite3_stmt *s, tl_error *err)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return db_fail(db, err, "cannot insert");
    return 0;
}

/* The row to bind the next row of table k into: parameter p of the one-row statement is
 * o + p of the statement. */
static row row_start(tl_sqlite *db, int k)
{
    batch *b = &db->b[k];
    if (!b->bulk)
        return (row){db->st[k], 0, b->p1};
    int o = b->at * b->stride;
    return (row){b->many, o, b->pm + o};
}

static void r_int(row *r, int p, int64_t v)
{
    param *c = &r->c[p];
    if (c->kind == P_INT && c->v == v)
        return;
    c->kind = P_INT;
    c->v = v;
    sqlite3_bind_int64(r->s, r->o + p, v);
}

static void r_null(row *r, int p)
{
    param *c = &r->c[p];
    if (c->kind == P_NULL)
        return;
    c->kind = P_NULL;
    sqlite3_bind_null(r->s, r->o + p);
}

/* v, or NULL when v is none */
static void r_opt(row *r, int p, int64_t v, int64_t none)
{
    if (v == none)
        r_null(r, p);
    else
        r_int(r, p, v);
}

/* text that stays put until the row is written (SQLITE_STATIC); NULL: NULL */
static void r_text(row *r, int p, const char *s, size_t n)
{
    param *c = &r->c[p];
    if (!s) {
        r_null(r, p);
        return;
    }
    if (c->kind == P_TEXT && c->p == s && c->v == (int64_t)n)
        return;
    c->kind = P_TEXT;
    c->p = s;
    c->v = (int64_t)n;
    sqlite3_bind_text(r->s, r->o + p, s, (int)n, SQLITE_STATIC);
}

static void r_double(row *r, int p, double v)
{
    r->c[p].kind = P_UNKNOWN;
    sqlite3_bind_double(r->s, r->o + p, v);
}

/* The row of table k is bound: write it, or its batch when full. */
static int row_done(tl_sqlite *db, int k, tl_error *err)
{
    batch *b = &db->b[k];
    if (!b->bulk)
        return step(db, db->st[k], err);
    if (++b->at < BATCH)
        return 0;
    b->at = 0;
    b->bulk -= BATCH;
    return step(db, b->many, err);
}

/* Rows of table k that this trace will write: all but the last n % BATCH go in batches. What
 * the parameters hold is forgotten: text bound from an earlier trace may be gone. */
static void rows_ahead(tl_sqlite *db, int k, size_t n)
{
    batch *b = &db->b[k];
    b->at = 0;
    b->bulk = n - n % BATCH;
    memset(b->pm, 0, (size_t)(BATCH * b->stride + 1) * sizeof *b->pm);
    memset(b->p1, 0, (size_t)(b->stride + 1) * sizeof *b->p1);
}

/* ---- the original args of an event (keep_raw) -------------------------------------------- */

/* Index past the JSON string starting at s[i] (a quote); > n when it does not end. Quotes are
 * found with memchr: names (kernels' templates) are most of an event's text, and this scan was
 * a quarter of the export's time when it went a character at a time. */
static size_t skip_string(const char *s, size_t n, size_t i)
{
    size_t open = i;
    for (i++; i < n;) {
        const char *q = memchr(s + i, '"', n - i);
        if (!q)
            return n + 1;
        i = (size_t)(q - s);
        size_t bs = 0; /* an odd run of backslashes before it escapes it */
        while (i - bs - 1 > open && s[i - bs - 1] == '\\')
            bs++;
        if (bs % 2 == 0)
            return i + 1;
        i++;
    }
    return n + 1;
}

/* The value of the top-level member "args" of the compact JSON object s[0, n) when it is an
 * object: its text in *v, *vn. Returns 1 when found. */
/* The index of the next quote or bracket at or after s[i], n when none: the characters the scan
 * of an event's text stops at, found by a table (the scan is most of bind_args' time). */
static size_t next_mark(const char *s, size_t n, size_t i)
{
    static const uint8_t mark[256] = {['"'] = 1, ['{'] = 1, ['}'] = 1, ['['] = 1, [']'] = 1};
    while (i < n && !mark[(uint8_t)s[i]])
        i++;
    return i;
}

static int raw_args(const char *s, size_t n, const char **v, size_t *vn)
{
    int depth = 0;
    for (size_t i = next_mark(s, n, 0); i < n; i = next_mark(s, n, i)) {
        char c = s[i];
        if (c == '"') {
            size_t b = i;
            i = skip_string(s, n, i);
            if (depth != 1 || i >= n || s[i] != ':' || i - b != 6 || memcmp(s + b, "\"args\"", 6))
                continue;
            size_t vb = ++i;
            if (i >= n || s[i] != '{')
                return 0;
            for (int d = 0; i < n; i = next_mark(s, n, i)) {
                if (s[i] == '"') {
                    i = skip_string(s, n, i);
                    continue;
                }
                if (s[i] == '{' || s[i] == '[')
                    d++;
                else if (--d == 0) { /* } or ] */
                    *v = s + vb;
                    *vn = i + 1 - vb;
                    return 1;
                }
                i++;
            }
            return 0;
        }
        if (c == '{' || c == '[')
            depth++;
        else
            depth--;
        i++;
    }
    return 0;
}

/* Bind the args parameters (raw object at i, the model's string at i + 1). */
static void bind_args(row *r, int i, const tl_trace *t, const tl_event *e)
{
    const char *v = NULL;
    size_t vn = 0;
    if (t->raw_kept && e->raw && e->raw != TL_RAW_ELSEWHERE && e->raw <= t->raw.n) {
        /* the reader marked where the args object is; found in the text only when it could
         * not say (a text of over 4 GB) */
        int m = tl_raw_marked(&t->raw, e->raw, &v, &vn);
        if (m < 0) {
            size_t len;
            const char *text = tl_raw_text(&t->raw, e->raw, &len);
            if (!raw_args(text, len, &v, &vn))
                v = NULL;
        } else if (m == 0) {
            v = NULL;
        }
    }
    r_text(r, i, v, vn);
    if (e->args && e->args < t->strings.count)
        r_text(r, i + 1, t->strings.str[e->args], t->strings.len[e->args]);
    else
        r_null(r, i + 1);
}

/* ---- the ops table's columns, per event ------------------------------------------------
 * The ops view's own per-event terms (analysis/ops_events.h), summed here per event instead
 * of per row. */

typedef struct op_cols {
    tl_ops_event *in;
    int64_t *self_cpu, *self_cuda, *cuda;
} op_cols;

static void op_cols_free(op_cols *c)
{
    free(c->in);
    free(c->self_cpu);
    free(c->self_cuda);
    free(c->cuda);
}

static void add_to_event(void *ctx, int32_t ev, tl_ops_term term, int64_t ns)
{
    op_cols *c = ctx;
    switch (term) {
    case TL_OPS_SELF_CPU:
        c->self_cpu[ev] = tl_add_sat(c->self_cpu[ev], ns);
        break;
    case TL_OPS_CHILD_CPU:
        c->self_cpu[ev] = tl_sub_sat(c->self_cpu[ev], ns);
        break;
    case TL_OPS_SELF_CUDA:
        c->self_cuda[ev] = tl_add_sat(c->self_cuda[ev], ns);
        break;
    case TL_OPS_CUDA:
        c->cuda[ev] = tl_add_sat(c->cuda[ev], ns);
        break;
    }
}

static int op_cols_compute(const tl_trace *t, op_cols *c)
{
    size_t n = t->nev ? t->nev : 1;
    c->in = tl_big_alloc(n * sizeof *c->in);
    c->self_cpu = tl_big_calloc(n, sizeof *c->self_cpu);
    c->self_cuda = tl_big_calloc(n, sizeof *c->self_cuda);
    c->cuda = tl_big_calloc(n, sizeof *c->cuda);
    if (!c->in || !c->self_cpu || !c->self_cuda || !c->cuda || tl_ops_tree(t, c->in) != 0)
        return -1;
    return tl_ops_times(t, c->in, add_to_event, c);
}

/* ---- adding a trace ------------------------------------------------------------------------ */

/* Global string ids for t's strings (new ones inserted); gid[t->strings.count]. */
static uint32_t *map_strings(tl_sqlite *db, const tl_trace *t, tl_error *err)
{
    uint32_t *gid = malloc((t->strings.count + 1) * sizeof *gid);
    if (!gid) {
        tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", db->path);
        return NULL;
    }
    sqlite3_stmt *s = db->st[S_STRING];
    for (uint32_t i = 0; i <= t->strings.count; i++) {
        /* the last one is a name of the ops table's own: its row for every step */
        const char *str = i < t->strings.count ? t->strings.str[i] : "ProfilerStep*";
        size_t len = i < t->strings.count ? t->strings.len[i] : strlen(str);
        uint32_t before = db->strs.count;
        uint32_t g = tl_intern(&db->strs, str, len);
        if (g == 0 && len) { /* only "" has id 0: out of memory */
            free(gid);
            tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", db->path);
            return NULL;
        }
        gid[i] = g;
        if (db->strs.count != before) {
            bind_int(s, 1, g);
            bind_text(s, 2, str, len);
            if (step(db, s, err) != 0) {
                free(gid);
                return NULL;
            }
        }
    }
    return gid;
}

static int add_meta(tl_sqlite *db, int64_t rank, const char *key, const char *text, int64_t num,
                    tl_error *err)
{
    sqlite3_stmt *s = db->st[S_META];
    bind_int(s, 1, rank);
    bind_text(s, 2, key, strlen(key));
    if (text)
        bind_text(s, 3, text, strlen(text));
    else
        bind_int(s, 3, num);
    return step(db, s, err);
}

static int add_header(tl_sqlite *db, const tl_trace *t, int64_t rank, const uint32_t *gid,
                      tl_error *err)
{
    char *json = tl_trace_meta_json(t);
    char version[32];
    snprintf(version, sizeof version, "%d.%d.%d", TALLY_VERSION_MAJOR, TALLY_VERSION_MINOR,
             TALLY_VERSION_PATCH);
    /* each add_meta returns 0 or -1: the first failure stops the chain */
    int rc =
        (json && add_meta(db, rank, "trace", json, 0, err)) ||
                add_meta(db, rank, "tally_version", version, 0, err) ||
                add_meta(db, rank, "path", t->path ? t->path : "", 0, err) ||
                add_meta(db, rank, "rank", NULL, rank, err) ||
                add_meta(db, rank, "time_unit", "ns", 0, err) ||
                (t->world_size > 0 && add_meta(db, rank, "world_size", NULL, t->world_size, err)) ||
                (t->wall_offset &&
                 add_meta(db, rank, "unix_offset_ns", NULL, t->wall_offset, err)) ||
                (t->pid && add_meta(db, rank, "pid", NULL, t->pid, err)) ||
                (t->host && add_meta(db, rank, "host", tl_str(&t->strings, t->host), 0, err)) ||
                (t->program &&
                 add_meta(db, rank, "program", tl_str(&t->strings, t->program), 0, err)) ||
                ((t->ndevices || tl_trace_has_cats(t, TL_DEVICE_WORK)) && /* none: CPU only */
                 add_meta(db, rank, "accelerator", tl_accel_name(t), 0, err))
            ? -1
            : 0;
    free(json);
    /* the source as the reports name it, from the trace's metadata */
    if (rc == 0 &&
        exec(db,
             "INSERT INTO meta SELECT rank, 'source', json_extract(value, '$.source') FROM meta"
             " WHERE key = 'trace' AND rank NOT IN (SELECT rank FROM meta WHERE key = 'source')",
             err) != 0)
        rc = -1;
    for (uint32_t k = 0; rc == 0 && k < t->ntracks; k++) {
        const tl_track *tr = &t->tracks[k];
        sqlite3_stmt *s = db->st[tr->kind == TL_TRACK_STREAM ? S_STREAM : S_THREAD];
        bind_int(s, 1, rank);
        bind_int(s, 2, k);
        bind_int(s, 3, tr->kind == TL_TRACK_STREAM ? tr->device : tr->pid);
        bind_int(s, 4, tr->tid);
        bind_opt(s, 5, tr->name < t->strings.count ? gid[tr->name] : 0, 0);
        rc = step(db, s, err);
        if (rc == 0 && tr->kind == TL_TRACK_THREAD) {
            s = db->st[S_PROCESS];
            bind_int(s, 1, rank);
            bind_int(s, 2, tr->pid);
            rc = step(db, s, err);
        }
    }
    for (uint32_t k = 0; rc == 0 && k < t->ndevices; k++) {
        const tl_device *d = &t->devices[k];
        sqlite3_stmt *s = db->st[S_DEVICE];
        bind_int(s, 1, rank);
        bind_int(s, 2, d->id);
        bind_opt(s, 3, d->name < t->strings.count ? gid[d->name] : 0, 0);
        bind_opt(s, 4, d->memory, 0);
        bind_opt(s, 5, d->sm_count, 0);
        bind_opt(s, 6, d->cc_major, 0); /* 0.x: known with its major, which is never 0 */
        bind_opt(s, 7, d->cc_major ? d->cc_minor : -1, -1);
        rc = step(db, s, err);
    }
    return rc;
}

static int add_steps(tl_sqlite *db, const tl_trace *t, int64_t rank, const uint32_t *gid,
                     tl_error *err)
{
    tl_steps st;
    if (tl_steps_load(t, &st) != 0) {
        tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", db->path);
        return -1;
    }
    int rc = 0;
    for (int k = 0; rc == 0 && !st.pseudo && k < st.n; k++) {
        const tl_step *p = &st.v[k];
        sqlite3_stmt *s = db->st[S_STEP];
        bind_int(s, 1, rank);
        bind_int(s, 2, p->number);
        bind_int(s, 3, p->name < t->strings.count ? gid[p->name] : 0);
        bind_int(s, 4, p->s);
        bind_int(s, 5, p->e);
        bind_int(s, 6, p->e - p->s);
        bind_opt(s, 7, p->samples, 0);
        bind_opt(s, 8, p->ev == TL_NONE ? -1 : db->next_id + p->ev, -1);
        rc = step(db, s, err);
    }
    tl_steps_free(&st);
    return rc;
}

static int add_memory(tl_sqlite *db, const tl_trace *t, int64_t rank, const uint32_t *gid,
                      tl_error *err)
{
    rows_ahead(db, S_MEMORY, t->nmem);
    for (size_t i = 0; i < t->nmem; i++) {
        const tl_memev *m = &t->mem[i];
        row r = row_start(db, S_MEMORY);
        r_int(&r, 1, rank);
        r_int(&r, 2, m->ts);
        r_int(&r, 3, m->track);
        r_int(&r, 4, m->device);
        r_opt(&r, 5, (int64_t)m->addr, 0);
        r_int(&r, 6, m->bytes);
        r_opt(&r, 7, m->total_allocated, -1);
        r_opt(&r, 8, m->total_reserved, -1);
        const char *cat = tl_mem_cat_name(m->category < TL_MEM_CAT_COUNT ? m->category : 0);
        r_text(&r, 9, cat, strlen(cat));
        r_opt(&r, 10, m->name < t->strings.count ? gid[m->name] : 0, 0);
        r_int(&r, 11, m->flags);
        r_opt(&r, 12, m->corr, 0);
        if (row_done(db, S_MEMORY, err) != 0)
            return -1;
    }
    return 0;
}

/* The events, each into its table. */
/* The table of an event (S_RANGE ... S_COUNTER), S_COUNT for none. */
static int event_table(const tl_trace *t, const tl_event *e)
{
    if (tl_is_memory_record_event(t, e))
        return S_COUNT; /* its row of the memory table holds the same and more */
    switch ((tl_cat)e->cat) {
    case TL_CAT_COUNTER:
        return S_COUNTER;
    case TL_CAT_KERNEL:
        return S_KERNEL;
    case TL_CAT_MEMCPY:
        return S_MEMCPY;
    case TL_CAT_MEMSET:
        return S_MEMSET;
    default:
        return S_RANGE;
    }
}

static int add_events(tl_sqlite *db, const tl_trace *t, int64_t rank, const uint32_t *gid,
                      const op_cols *oc, uint32_t step_gid, tl_error *err)
{
    tl_gpu_scope sc;
    if (tl_gpu_scope_init(t, NULL, &sc) != 0) {
        tl_error_setc(err, TL_ERR_NOMEM, "%s: out of memory", db->path);
        return -1;
    }
    /* the rows each table will get, for the batches */
    size_t rows[S_COUNT + 1] = {0};
    for (size_t i = 0; i < t->nev; i++)
        rows[event_table(t, &t->ev[i])]++;
    for (int k = S_FIRST_BATCHED; k < S_COUNT; k++)
        rows_ahead(db, k, rows[k]);
    int rc = 0;
    double t0 = tl_now_s(), shown = t0;
    int width = 0; /* of the progress line, cleared at the end however long the path made it */
    for (size_t i = 0; rc == 0 && i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        int k = event_table(t, e);
        if (k == S_COUNT)
            continue;
        if (db->progress && (i & 0xffff) == 0) {
            double now = tl_now_s();
            if (now - t0 >= 1.0 && now - shown >= 0.5) {
                shown = now;
                int n = fprintf(stderr, "\rwriting %s: %zu of %zu events", db->path, i, t->nev);
                if (n - 1 > width)
                    width = n - 1;
                fflush(stderr);
            }
        }
        const tl_track *tr = e->track < t->ntracks ? &t->tracks[e->track] : NULL;
        uint32_t name = e->name < t->strings.count ? gid[e->name] : 0;
        int64_t id = db->next_id + (int64_t)i;
        row r;
        if (k == S_COUNTER) {
            r = row_start(db, S_COUNTER);
            r_int(&r, 1, id);
            r_int(&r, 2, rank);
            r_int(&r, 3, e->track);
            r_int(&r, 4, name);
            r_int(&r, 5, e->ts);
            r_double(&r, 6, tl_counter_value(e));
            bind_args(&r, 7, t, e);
            rc = row_done(db, S_COUNTER, err);
            continue;
        }
        if (k != S_RANGE) { /* kernels, memcpy, memset */
            r = row_start(db, k);
            r_int(&r, 1, id);
            r_int(&r, 2, rank);
            r_int(&r, 3, e->track);
            r_opt(&r, 4, tr ? tr->device : -1, -1);
            r_opt(&r, 5, tr ? tr->tid : -1, -1);
            r_int(&r, 6, name);
            r_int(&r, 7, e->ts);
            r_int(&r, 8, e->ts + e->dur);
            r_int(&r, 9, e->dur);
            r_opt(&r, 10, e->corr, 0);
            r_opt(&r, 11, e->link == TL_NONE ? -1 : db->next_id + e->link, -1);
            r_int(&r, 12, tl_gpu_scope_counts(t, &sc, e));
            if (k == S_KERNEL) {
                bind_args(&r, 13, t, e);
            } else if (k == S_MEMCPY) {
                const char *kind = tl_memcpy_kind_name((tl_memcpy_kind)e->copy);
                r_text(&r, 13, kind, strlen(kind));
                r_int(&r, 14, e->value);
                r_int(&r, 15, (e->flags & TL_EV_PAGEABLE) != 0);
                r_int(&r, 16, (e->flags & TL_EV_SYNC_COPY) != 0);
                bind_args(&r, 17, t, e);
            } else {
                r_int(&r, 13, e->value);
                bind_args(&r, 14, t, e);
            }
            rc = row_done(db, k, err);
            continue;
        }
        r = row_start(db, S_RANGE);
        r_int(&r, 1, id);
        r_int(&r, 2, rank);
        r_int(&r, 3, e->track);
        const char *cat = tl_cat_name((tl_cat)e->cat);
        r_text(&r, 4, cat, strlen(cat));
        r_int(&r, 5, name);
        r_int(&r, 6, e->ts);
        r_int(&r, 7, e->ts + e->dur);
        r_int(&r, 8, e->dur);
        r_opt(&r, 9, e->parent == TL_NONE ? -1 : db->next_id + e->parent, -1);
        r_int(&r, 10, e->depth);
        r_opt(&r, 11, e->corr, 0);
        r_int(&r, 12, e->flags);
        bind_args(&r, 13, t, e);
        const tl_ops_event *x = &oc->in[i];
        if (x->kind == TL_OPS_NONE) {
            for (int p = 15; p <= 20; p++)
                r_null(&r, p);
        } else {
            r_int(&r, 15, x->step ? step_gid : name);
            r_int(&r, 16, x->kind == TL_OPS_DEVICE);
            r_int(&r, 17, x->annot);
            r_int(&r, 18, oc->self_cpu[i]);
            r_int(&r, 19, oc->self_cuda[i]);
            r_int(&r, 20, oc->cuda[i]);
        }
        rc = row_done(db, S_RANGE, err);
    }
    if (width > 0)
        fprintf(stderr, "\r%*s\r", width, "");
    tl_gpu_scope_free(&sc);
    return rc;
}

int tl_sqlite_add_trace(tl_sqlite *db, const tl_trace *t, int64_t rank, tl_error *err)
{
    if (db->failed) {
        if (err)
            *err = db->why;
        return -1;
    }
    tl_error e2 = {{0}};
    tl_error *er = err ? err : &e2;
    op_cols oc = {0};
    uint32_t *gid = map_strings(db, t, er);
    int rc = -1;
    if (!gid)
        goto done;
    if (op_cols_compute(t, &oc) != 0) {
        tl_error_setc(er, TL_ERR_NOMEM, "%s: out of memory", db->path);
        goto done;
    }
    if (add_header(db, t, rank, gid, er) != 0 || add_steps(db, t, rank, gid, er) != 0 ||
        add_memory(db, t, rank, gid, er) != 0 ||
        add_events(db, t, rank, gid, &oc, gid[t->strings.count], er) != 0)
        goto done;
    db->next_id += (int64_t)t->nev;
    rc = 0;
done:
    if (rc != 0) {
        db->failed = 1;
        db->why = *er;
    }
    op_cols_free(&oc);
    free(gid);
    return rc;
}

int tl_sqlite_close(tl_sqlite *db, tl_error *err)
{
    if (!db)
        return 0;
    tl_error e2 = {{0}};
    tl_error *er = err ? err : &e2;
    int rc = -1;
    if (db->failed)
        *er = db->why;
    else if (exec(db, views, er) == 0 && exec(db, "COMMIT", er) == 0) {
        for (int i = 0; i < S_COUNT; i++) {
            sqlite3_finalize(db->st[i]);
            sqlite3_finalize(db->b[i].many);
            db->st[i] = db->b[i].many = NULL;
        }
        if (sqlite3_close(db->db) != SQLITE_OK)
            db_fail(db, er, "cannot close");
        else if (db->db = NULL, rename(db->tmp, db->path) != 0)
            tl_error_setc(er, TL_ERR_IO, "%s: cannot write: %s", db->path, strerror(errno));
        else
            rc = 0;
    }
    if (rc != 0)
        unlink(db->tmp);
    db_free(db);
    return rc;
}
