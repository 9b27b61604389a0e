/*
 * sqlite_export.h — a trace as a SQLite database to query (`tally export FILE -o OUT.sqlite`),
 * in the spirit of Nsight Systems' SQLite export: one table per kind of thing (ranges, kernels,
 * copies, memsets, memory, counters, threads, streams, steps, strings, meta) with integer ns
 * times on the trace's clock, and views that give the report's main tables (kernel_summary,
 * ops_summary, step_times). The schema is docs/sqlite.md.
 *
 * One database may hold several traces, one per rank of a job: every table has a rank column,
 * ids of events are unique across the database, and names are one string table for all.
 */
#ifndef TALLY_REPORT_SQLITE_EXPORT_H
#define TALLY_REPORT_SQLITE_EXPORT_H

#include "trace/model.h"

#include <stdint.h>

typedef struct tl_sqlite tl_sqlite;

/* Start a database at path (an existing file is replaced when the database is closed: until
 * then it is written under a temporary name beside path, so that a reader never sees half a
 * database). Returns the handle, or NULL with err filled (TL_ERR_IO: path cannot be written). */
tl_sqlite *tl_sqlite_open(const char *path, tl_error *err);

/* Print progress lines to stderr while adding large traces (off by default). */
void tl_sqlite_progress(tl_sqlite *db, int on);

/* Add a finished trace under rank (tl_sqlite_trace_rank gives a single file's). Traces loaded
 * with keep_raw give each event's original args object in the args columns. Returns 0, or -1
 * with err filled; after a failure the database is discarded at close. */
int tl_sqlite_add_trace(tl_sqlite *db, const tl_trace *t, int64_t rank, tl_error *err);

/* The rank a trace says it is (distributedInfo), else 0. */
int64_t tl_sqlite_trace_rank(const tl_trace *t);

/* Create the indexes and views, commit and move the file into place; frees db (NULL: nothing).
 * Returns 0, or -1 with err filled (nothing is left at path's temporary name then; an earlier
 * failure of tl_sqlite_add_trace returns -1 with its error again). */
int tl_sqlite_close(tl_sqlite *db, tl_error *err);

#endif
