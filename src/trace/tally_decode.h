/*
 * tally_decode.h — the .tally decoder (src/record/format.h, docs/FORMAT.md) that the trace model
 * reader (tally_reader.c) and the streaming Chrome export (tally_export.c) both run.
 *
 * tl_tally_open indexes the file: it checks every chunk header, reads the metadata into a
 * tl_trace (clock, call sites, thread names, devices, loss counters) and lists the EVENTS chunks.
 * tl_tally_decode then decodes those chunks thread by thread in their seq order and hands each
 * event to a sink as soon as it exists: complete (a mark, a counter, device work, a runtime call)
 * or still open (a push, a begin, a step: duration -1), which the decoder ends later through the
 * sink's close when it meets the pop, the end (of any thread) or the step's end. What is never
 * ended is the sink's to close at tl_tally_end(). The decoder holds only the open ranges'
 * references, never the events: the model reader appends them to the trace, the export writes
 * them out. It can run more than once over the same index (the export makes two passes).
 *
 * The file is read in place when it is in memory, or with pread into one reused buffer (the
 * largest chunk), so that decoding a file does not map it whole.
 */
#ifndef TALLY_TRACE_TALLY_DECODE_H
#define TALLY_TRACE_TALLY_DECODE_H

#include "record/format.h"
#include "trace/model.h"
#include "trace/u64map.h"

/* In tl_tally_ev: the name or args is the text given beside the event, not a string id. */
#define TL_TALLY_TEXT UINT32_MAX

/* An event as the decoder hands it over: e.name and e.args are string ids in the trace, or
 * TL_TALLY_TEXT with the bytes in name/args (valid during the call only: copy what you keep).
 * e.dur is -1 for a range still open. */
typedef struct tl_tally_ev {
    tl_event e;
    const char *name, *args;
    uint32_t name_len, args_len;
    /* the call site of a range, mark or counter recorded with one (tally.h's tally_srcloc):
     * file and function as string ids in the trace, 0 = none, and the line */
    uint32_t site_file, site_func, site_line;
    uint32_t site; /* the call site's index in the decoder's sites + 1; 0 = none */
} tl_tally_ev;

typedef struct tl_tally_sink {
    void *ctx;
    /* A new event, in decoding order. Returns a reference (>= 0) by which close() names it when
     * it is a range still open, or -1 when out of memory. */
    int64_t (*open)(void *ctx, const tl_tally_ev *ev);
    /* The open range ref ends at end (ns); flags are added to its own (TL_EV_UNCLOSED for the
     * step ended by tally_stop). Called at most once per range. Returns 0, or -1. */
    int (*close)(void *ctx, int64_t ref, int64_t end, uint16_t flags);
    /* Step step was closed with samples samples (STEP_END); NULL: not wanted. Returns 0, or -1. */
    int (*samples)(void *ctx, int64_t step, int64_t samples);
    /* A memory record (an allocation, free, label or block live at the start), its name an id
     * in the decoder's string table; NULL: not wanted. Returns 0, or -1. */
    int (*memory)(void *ctx, const tl_memev *m);
} tl_tally_sink;

typedef struct tl_tally_site {
    uint32_t name;       /* string id */
    uint32_t file, func; /* string ids, 0 = none */
    uint32_t line;
    uint16_t cat; /* tl_cat */
} tl_tally_site;

/* An EVENTS chunk of the index. */
typedef struct tl_tally_run {
    size_t off;  /* of the chunk header */
    size_t nrec; /* whole record slots in the file (fewer than the header says when cut) */
    int cut;     /* the file ends inside this chunk */
    tally__events_header h;
} tl_tally_run;

/* What a walk through the events changes as it goes: the decoding in order has one (d->walk);
 * each part of a decoding in parts (below) its own. */
typedef struct tl_tally_walk {
    struct tl_tally_part *part; /* NULL: the decoding in order, straight into the trace */
    tl_error *err;
    int64_t *stack; /* the decoded thread's open pushes (references) */
    size_t nstack, cap_stack;
    int64_t max_ns;   /* the last timestamp met */
    int any_step_end; /* a STEP_END: the file has steps (else step spans are not steps) */
    uint64_t unwritten, unwritten_at; /* runs never written in full */
    char step_name[48];
} tl_tally_walk;

typedef struct tl_tally_dec {
    tl_trace *t; /* metadata, tracks and strings go here */
    const char *name;
    tl_error *err;

    /* the file: in memory, or read with pread from fd into buf */
    const unsigned char *mem;
    int fd;
    size_t len;
    unsigned char *buf;
    size_t cap_buf;

    tally__meta_clock clk;
    double ns_per_tick;
    int64_t end_ns; /* META END_NS */
    int have_end;

    tl_tally_site *sites;
    size_t nsites, cap_sites;
    tl_u64map site_map; /* call-site id -> index in sites */

    tl_tally_run *runs; /* sorted by thread slot, seq and offset */
    size_t nruns, cap_runs;
    uint64_t unwritten, unwritten_at; /* chunk headers of zeros the index met */

    /* Decoding state, reset by each tl_tally_decode (and tl_tally_merge): */
    tl_tally_walk walk;
    tl_u64map begins;   /* handle -> reference of a BEGIN not ended yet */
    tl_u64map ends;     /* handle -> ns of an END whose BEGIN was not met yet */
    tl_u64map arg_keys; /* key of a keyed argument string (VALUE + STR ARG) -> its string id */
} tl_tally_dec;

/* Index the file: data[len] in memory, or (data NULL) the file open on fd, len bytes long.
 * Fills t's metadata (source, pid, rank, devices, thread names, loss counters, cut_at) and
 * d. name is used in errors ("NAME: offset N: ..."). Returns 0, or -1 with err filled; call
 * tl_tally_close either way. */
int tl_tally_open(tl_tally_dec *d, tl_trace *t, const void *data, int fd, size_t len,
                  const char *name, tl_error *err);
/* How many events the decoding will hand over on each track, without making them, for each of
 * the nparts parts (parts NULL: one, every run): count[p * *ncount + track] (malloc'ed; *ncount:
 * the trace's tracks, which it makes as the decoding would, in the same order) is exact for a
 * file the decoding accepts. Returns 0, or -1 with err filled. */
int tl_tally_count(tl_tally_dec *d, const struct tl_tally_part *parts, size_t nparts,
                   size_t **count, size_t *ncount);
/* Decode every event into sink, in order. Returns 0, or -1 with err filled. */
int tl_tally_decode(tl_tally_dec *d, const tl_tally_sink *sink);

/* ---- decoding in parts (the model reader's, on several cores) --------------------------------
 * The runs split into parts of whole threads, consecutive in the decoding's order, which decode
 * at the same time, each into a sink of its own (its events into rooms of their own: the sink's
 * to arrange, from tl_tally_count's counts by part). What is shared across threads in the order of
 * the decoding is kept aside by each part and settled by tl_tally_merge, parts in order, so that
 * the trace comes out as the decoding in order makes it, string ids included: the texts a part
 * meets go in a table of its own (ids tagged TL_TALLY_LOCAL, in the order met, given trace ids
 * at the merge in that order), the BEGIN/END handles are replayed, keyed argument definitions
 * applied, an argument named by a key that the part did not define is looked up then
 * (TL_TALLY_DEFERRED), and thread names set. A part that meets what only the decoding in order
 * can take (a track the count did not make, a damaged record) fails; the caller decodes in order
 * instead, which says what is wrong if anything is. */
#define TL_TALLY_LOCAL    0x80000000u /* a string id in the part's own table */
#define TL_TALLY_DEFERRED 0x40000000u /* with LOCAL: an argument of a key defined elsewhere */

typedef struct tl_tally_handle_op {
    uint64_t h;
    int64_t v; /* a BEGIN's reference, an END's ns */
    int end;
} tl_tally_handle_op;

/* A keyed argument a part defined (id: its local id), or named without defining it (deferred;
 * id: how many strings the part had made when it did). */
typedef struct tl_tally_def {
    uint64_t key;
    uint32_t id;
} tl_tally_def;

/* A thread's name a part met (a local string id). */
typedef struct tl_tally_name {
    uint32_t track, id;
} tl_tally_name;

typedef struct tl_tally_part {
    /* its runs, whole threads: d->runs[first_run, end_run) (parts sit side by side and change
     * as they decode: each on cache lines of its own) */
    _Alignas(64) size_t first_run, end_run;
    size_t nrec; /* their record slots */
    tl_tally_walk walk;
    tl_error err;
    tl_strtab strings;  /* the texts it met, in that order (id 0: "") */
    tl_u64map arg_keys; /* key -> local id, of its own definitions */
    tl_tally_def *defs, *deferred;
    size_t ndefs, cap_defs, ndeferred, cap_deferred;
    tl_u64map deferred_keys; /* key -> index in deferred + 1 */
    tl_tally_handle_op *ops; /* its BEGINs and ENDs in order */
    size_t nops, cap_ops;
    tl_tally_name *names; /* thread names, in order */
    size_t nnames, cap_names;
    uint32_t *remap, *dremap; /* after the merge: local id / deferred index -> trace string id */
} tl_tally_part;

/* Split the runs into at most max parts (d's runs in order, whole threads, about as many record
 * slots each); parts[0, returned) are initialized (tl_tally_part_free each). */
size_t tl_tally_split(const tl_tally_dec *d, tl_tally_part *parts, size_t max);
/* Decode part pt into sink (another thread's part may decode at the same time; sink's open sees
 * names and arguments as ids only, some tagged). Returns 0, or -1 with pt->err filled. */
int tl_tally_decode_part(tl_tally_dec *d, tl_tally_part *pt, const tl_tally_sink *sink);
/* Settle parts[0, n), each decoded, in order (see above); sink's close ends ranges. After it,
 * tl_tally_part_id gives an event's trace string ids. Returns 0, or -1 with err filled. */
int tl_tally_merge(tl_tally_dec *d, tl_tally_part *parts, size_t n, const tl_tally_sink *sink);
static inline uint32_t tl_tally_part_id(const tl_tally_part *pt, uint32_t id)
{
    if (!(id & TL_TALLY_LOCAL))
        return id;
    if (id & TL_TALLY_DEFERRED)
        return pt->dremap[id & ~(TL_TALLY_LOCAL | TL_TALLY_DEFERRED)];
    return pt->remap[id & ~TL_TALLY_LOCAL];
}
void tl_tally_part_free(tl_tally_part *pt);
/* Where ranges never ended end: END_NS, or the last timestamp in the file when later. */
int64_t tl_tally_end(const tl_tally_dec *d);
/* Whether a step span is kept: only when the file has a STEP_END, and only when it was ended
 * (by STEP_END, or by tally_stop: flagged unclosed). */
static inline int tl_tally_keep_step(const tl_tally_dec *d, int64_t dur)
{
    return d->walk.any_step_end && dur >= 0;
}
void tl_tally_close(tl_tally_dec *d);

/* The duration of a range from ts to end: 0 when end is not later, and never so long that
 * ts + duration leaves int64 (any 64-bit timestamps can be in a damaged file). */
static inline int64_t tl_tally_dur(int64_t ts, int64_t end)
{
    if (end <= ts)
        return 0;
    uint64_t d = (uint64_t)end - (uint64_t)ts;
    return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

#endif
