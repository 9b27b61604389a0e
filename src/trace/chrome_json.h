/*
 * chrome_json.h — Chrome trace JSON as tally writes it (PyTorch's conventions, see
 * chrome_writer.c), one piece at a time, so that the model's writer (chrome_writer.c) and the
 * streaming .tally export (tally_export.c) write the same events the same way. A file is: the
 * header, then events, flows and track names in any order, then the close.
 */
#ifndef TALLY_TRACE_CHROME_JSON_H
#define TALLY_TRACE_CHROME_JSON_H

#include "trace/model.h"

#include <stdio.h>

/* A host thread's event made from an allocation or a free: the readers add it as an instant of
 * category MEMORY beside the row of the memory table that holds the same and more, so an export
 * writes the row instead. A range that merely has the category (a damaged file, a push with
 * that category) is written as what it is. */
static inline int tl_is_memory_record_event(const tl_trace *t, const tl_event *e)
{
    return e->cat == TL_CAT_MEMORY && (e->flags & TL_EV_INSTANT) && e->track < t->ntracks &&
           t->tracks[e->track].kind == TL_TRACK_THREAD;
}

typedef struct tl_json tl_json;

/* Start writing to path (gzip-compressed when it ends in ".gz"), or to f when path is NULL.
 * Returns the writer, or NULL with err filled. */
tl_json *tl_json_open(const char *path, FILE *f, tl_error *err);
/* The header (t's devices and distributed info) and the base time: every ts written after it is
 * relative to base (ns), which baseTimeNanoseconds gives (plus t's wall-clock offset). */
void tl_json_header(tl_json *w, const tl_trace *t, int64_t base);
/* What an event carries beyond the model's tl_event, written as args that the JSON reader
 * (json_reader.c) reads back: a step's sample count ("tally samples"; -1: none) and the call
 * site of a range, mark or counter ("tally file", "tally function", "tally line"; file and func
 * NULL: none). */
typedef struct tl_json_extra {
    int64_t samples;
    const char *file, *func;
    size_t file_len, func_len;
    uint32_t line;
} tl_json_extra;

/* Event e of track tr, its name and args as text (name_len 0: a copy, memset or memory event
 * gets the name PyTorch gives it; args_len 0: none), x what else it carries (NULL: nothing). */
void tl_json_event(tl_json *w, const tl_track *tr, const tl_event *e, const char *name,
                   size_t name_len, const char *args, size_t args_len, const tl_json_extra *x);
/* A row of the memory table of t (its name an id in t's strings), on track tr, as Kineto's
 * [memory] instant: Addr, Bytes, Total Allocated, Total Reserved (when known), Device Id,
 * Device Type, and tally's own "tally mem category", "tally mem name" and "tally mem flags"
 * (TL_MEM_*). The reader makes it an event of the model too, as for Kineto's, unless it is a
 * label or a block live at the start (TL_MEM_LABEL, TL_MEM_LIVE), which are rows only. */
void tl_json_memory(tl_json *w, const tl_trace *t, const tl_track *tr, const tl_memev *m);
/* One end of the flow id from a runtime call to the device work it launched: its start at the
 * call (finish 0) or its end at the device work (finish 1), on track tr at ts (ns). */
void tl_json_flow(tl_json *w, int finish, const tl_track *tr, int64_t id, int64_t ts);
/* Process and thread names and sort indexes of t's tracks. */
void tl_json_tracks(tl_json *w, const tl_trace *t);
/* The end: a global "Record Window End" instant at t1 (ns), the top-level member "tally" with
 * what t holds beyond its events (t NULL: none; host, program, pid, the unit of step samples,
 * the recorder's loss counts, the parts of the file that could not be read), the trace's name,
 * and the file closed (flushed when it is the caller's). Frees w. Returns 0, or -1 with err
 * filled when something could not be written. */
int tl_json_close(tl_json *w, int64_t t1, const char *trace_name, const tl_trace *t, tl_error *err);

#endif
