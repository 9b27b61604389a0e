/*
 * tally_export.h — a .tally file to Chrome trace JSON in bounded memory (tally_export.c): what
 * `tally export FILE.tally` runs, and so what a profiled program that asks for JSON gets.
 */
#ifndef TALLY_TRACE_TALLY_EXPORT_H
#define TALLY_TRACE_TALLY_EXPORT_H

#include "trace/model.h"

#include <stdio.h>

/* Non-zero when the file at path starts with the .tally magic. */
int tl_is_tally_file(const char *path);

/* Write the .tally file in as Chrome trace JSON meaning what tl_read_tally + tl_write_chrome
 * write (the same events, flows, names and times), without building the trace model: memory
 * stays bounded whatever the number of events. out: a path (gzip-compressed when it ends in
 * ".gz"; written under a temporary name and renamed, so that no reader sees half a file), or
 * "-" for standard output. *nev (when nev is not NULL): the events written that the model also
 * holds (labels and blocks live at the start, written as [memory] instants too, are memory rows
 * only there). Returns 0, or -1 with err filled. */
int tl_tally_export(const char *in, const char *out, size_t *nev, tl_error *err);
/* The same for the file data[len] in memory (tests, fuzzers), to out; name is used in errors. */
int tl_tally_export_mem(const void *data, size_t len, const char *name, FILE *out, size_t *nev,
                        tl_error *err);

#endif
