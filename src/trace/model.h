/*
 * model.h — the one in-memory trace model that every reader fills and every view reads.
 *
 * A trace is a set of tracks (a host thread, or a device stream) and one array of events.
 * Events are fixed-size and hold only numbers: names and argument strings are ids into the
 * trace's string table, so that a 4-million-event Kineto trace takes ~250 MB of JSON on disk but
 * ~60 bytes per event here. Times are int64 nanoseconds on one clock per trace; the readers keep
 * every start and end within +-TL_TIME_MAX (trace/checked.h), so differences of times fit.
 *
 * Readers append events in any order and call tl_trace_finish(), which sorts them by
 * (track, start, longer first) and computes what every view needs: nesting (parent, depth) of
 * spans on each host track, and the links from runtime calls to device work by correlation id.
 */
#ifndef TALLY_TRACE_MODEL_H
#define TALLY_TRACE_MODEL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* What an event is. The views key on this, never on names. */
typedef enum tl_cat {
    TL_CAT_USER = 0,   /* user annotation / record_function / tally range (TALLY_USER) */
    TL_CAT_DATALOADER, /* the tally_category values come first, in the same order */
    TL_CAT_FORWARD,
    TL_CAT_BACKWARD,
    TL_CAT_OPTIMIZER,
    TL_CAT_COMMUNICATION,  /* host-side communication range */
    TL_CAT_OPERATOR,       /* cpu_op / aten op / Paddle Operator */
    TL_CAT_STEP,           /* ProfilerStep#N / ProfileStep#N */
    TL_CAT_OPERATOR_INNER, /* Paddle OperatorInner (infer_shape, compute) */
    TL_CAT_PYTHON,         /* python_function */
    TL_CAT_RUNTIME,        /* cuda_runtime / hip runtime call on a host thread */
    TL_CAT_DRIVER,         /* cuda_driver call */
    TL_CAT_KERNEL,         /* device: kernel */
    TL_CAT_MEMCPY,         /* device: copy; memcpy_kind says which */
    TL_CAT_MEMSET,         /* device: memset */
    TL_CAT_GPU_USER,       /* device: gpu_user_annotation */
    TL_CAT_SYNC,           /* cuda_sync */
    TL_CAT_OVERHEAD,       /* profiler overhead */
    TL_CAT_INSTANT,        /* instant mark */
    TL_CAT_COUNTER,        /* counter sample: value = the sample */
    TL_CAT_MEMORY,         /* [memory] allocation event: value = bytes (negative = free) */
    TL_CAT_OTHER,          /* anything else a reader keeps */
    TL_CAT_COUNT
} tl_cat;

/* Names of categories as the text views print them ("Operator", "Kernel", ...). */
const char *tl_cat_name(tl_cat c);
/* Non-zero for categories whose events live on device tracks (inline: the views and the finish
 * ask it of every event). */
static inline int tl_cat_is_device(tl_cat c)
{
    return c == TL_CAT_KERNEL || c == TL_CAT_MEMCPY || c == TL_CAT_MEMSET || c == TL_CAT_GPU_USER;
}

typedef enum tl_memcpy_kind {
    TL_COPY_UNKNOWN = 0,
    TL_COPY_HTOD,
    TL_COPY_DTOH,
    TL_COPY_DTOD,
    TL_COPY_HTOH,
    TL_COPY_PTOP,
} tl_memcpy_kind;

const char *tl_memcpy_kind_name(tl_memcpy_kind k); /* "HtoD", ... */

struct tl_event;
/* The name PyTorch gives a copy or memset (by kind and host memory): "Memcpy HtoD (Pageable ->
 * Device)", "Memset (Device)"; what an unnamed one is called in the views and the export. */
const char *tl_copy_default_name(const struct tl_event *e);

/* What a block of memory holds (the tally_mem_category values of tally.h, in the same order). */
typedef enum tl_mem_cat {
    TL_MEM_OTHER = 0, /* unknown */
    TL_MEM_PARAMETER,
    TL_MEM_GRADIENT,
    TL_MEM_OPTIMIZER_STATE,
    TL_MEM_ACTIVATION,
    TL_MEM_INPUT,
    TL_MEM_TEMPORARY,
    TL_MEM_CAT_COUNT
} tl_mem_cat;

/* "parameter", "gradient", "optimizer_state", "activation", "input", "temporary", "other". */
const char *tl_mem_cat_name(tl_mem_cat c);

/* One allocation, free or label of memory, in the trace's memory table (t->mem). */
enum {
    TL_MEM_LABEL = 1u << 0,     /* classifies the block at addr (bytes: its size, 0 = unknown): it
                                   changes no total */
    TL_MEM_LIVE = 1u << 1,      /* a block already allocated when recording began (bytes > 0) */
    TL_MEM_UNMATCHED = 1u << 2, /* a free of an address with no live allocation (counted) */
    TL_MEM_REUSED = 1u << 3,    /* an allocation at an address still live (counted) */
    TL_MEM_RESERVE = 1u << 4    /* the allocator reserved or released memory (Paddle's
                                   ReservedAllocate/ReservedFree): changes reserved, not
                                   allocated */
};

typedef struct tl_memev {
    int64_t ts;              /* ns */
    int64_t bytes;           /* > 0 allocated, < 0 freed; a label's: the block's size or 0 */
    uint64_t addr;           /* 0: unknown */
    int64_t total_allocated; /* the allocator's totals after the event, on its device; -1 unknown */
    int64_t total_reserved;
    int32_t device;    /* -1: host memory */
    uint16_t category; /* tl_mem_cat */
    uint16_t flags;    /* TL_MEM_* */
    uint32_t name;     /* string id of a dotted path ("blocks.0.mixer.Wqkv.weight"), 0 = none */
    uint32_t track;    /* the host thread that made it (a stream for CUPTI's records) */
    uint32_t corr;     /* CUPTI's correlation id of the API call that made it; 0 = none */
} tl_memev;

/* Event flags. */
enum {
    TL_EV_INSTANT = 1u << 0,   /* dur is 0 by nature (mark, memory, counter) */
    TL_EV_UNCLOSED = 1u << 1,  /* range still open at the end of recording; closed there */
    TL_EV_ASYNC = 1u << 2,     /* begin/end range: excluded from per-thread nesting */
    TL_EV_SYNC_COPY = 1u << 3, /* synchronous copy (cudaMemcpy, not Async) */
    TL_EV_PAGEABLE = 1u << 4,  /* copy from/to pageable host memory */
    TL_EV_MEM_DEVICE = 1u << 5 /* TL_CAT_MEMORY: device memory (else host) */
};

#define TL_NONE (-1) /* "no event" in index fields */

/* What tl_trace_memo keeps per trace. */
enum { TL_MEMO_MEMORY, TL_MEMO_PHASES, TL_MEMO_COUNT };

typedef struct tl_event {
    int64_t ts;     /* start, ns */
    int64_t dur;    /* duration, ns (0 for instants) */
    int64_t corr;   /* correlation id linking runtime call <-> device work; 0 = none */
    int64_t value;  /* bytes for copies/memsets/memory events, the counter's value for counters
                       (a double's bits: tl_counter_value; a learning rate of 3e-4 is kept as
                       read), the step number for TL_CAT_STEP; else 0 */
    uint32_t name;  /* string id */
    uint32_t args;  /* string id of an argument string (input shapes, ...); 0 = none */
    uint32_t track; /* index into trace->tracks */
    int32_t parent; /* enclosing span on the same host track (after finish), or TL_NONE */
    int32_t link;   /* runtime call: first device event it launched; device event: the runtime
                       call that launched it (after finish); TL_NONE otherwise */
    uint16_t cat;   /* tl_cat */
    uint16_t flags; /* TL_EV_* */
    uint8_t copy;   /* tl_memcpy_kind for TL_CAT_MEMCPY */
    uint8_t depth;  /* nesting depth on its host track (0 = top), saturates at 255 */
    uint16_t site;  /* its call site: t->sites[site - 1]; 0 = none (.tally traces only) */
    uint32_t raw;   /* the event as read (a tl_raw id; TL_RAW_ELSEWHERE: written with another
                       event), kept only when the trace was loaded with keep_raw; 0 = none. It
                       sits in what was padding: an event is 64 bytes either way */
} tl_event;
_Static_assert(sizeof(tl_event) == 64, "an event is 64 bytes: keep_raw costs the reports nothing");

/* A counter event's value (TL_CAT_COUNTER), as read: a double kept in the value's 8 bytes. */
static inline double tl_counter_value(const tl_event *e)
{
    double d;
    memcpy(&d, &e->value, sizeof d);
    return d;
}
static inline void tl_counter_set(tl_event *e, double v)
{
    memcpy(&e->value, &v, sizeof v);
}

/* ---- raw text -------------------------------------------------------------------------------
 * What a reader read, kept as JSON text for a lossless export (`tally export`): each element of
 * traceEvents, and each top-level member other than traceEvents ("deviceProperties": [...]).
 * Kept only when the caller sets keep_raw on the trace before loading; the reports never need
 * it. Texts are appended to one growing buffer, with whitespace outside strings dropped. */
typedef struct tl_raw {
    char *buf; /* the texts, one after another */
    size_t len, cap;
    size_t *end; /* text id i (1-based) is buf[end[i - 2] (0 for i = 1), end[i - 1]) */
    /* mark[2 (i - 1)], mark[2 (i - 1) + 1]: where in text i the part the reader marked is (an
     * event's args object), as offset and length in the kept text; length 0: none marked;
     * offset TL_RAW_UNMARKED: too far in to say, look for it */
    uint32_t *mark;
    uint32_t n, cap_n;
} tl_raw;

#define TL_RAW_UNMARKED UINT32_MAX

#define TL_RAW_ELSEWHERE                                                                           \
    UINT32_MAX /* tl_event.raw of an event whose text another carries (a                           \
                  counter event's second value) */

/* Append text (n bytes of JSON, compacted) with the part text[mark_b, mark_b + mark_n) marked
 * (mark_n 0: none; the part must begin and end outside strings); returns its id (>= 1), or 0
 * when out of memory. */
uint32_t tl_raw_add(tl_raw *r, const char *text, size_t n, size_t mark_b, size_t mark_n);
/* The text of id (1 <= id <= r->n), not NUL-terminated, and its length. */
static inline const char *tl_raw_text(const tl_raw *r, uint32_t id, size_t *len)
{
    size_t b = id >= 2 ? r->end[id - 2] : 0;
    *len = r->end[id - 1] - b;
    return r->buf + b;
}
/* The marked part of text id: 1 with it in *p, *n; 0 when none was marked; -1 when it was
 * too far into the text to say (look for it in the text). */
static inline int tl_raw_marked(const tl_raw *r, uint32_t id, const char **p, size_t *n)
{
    uint32_t off = r->mark[2 * (size_t)(id - 1)], len = r->mark[2 * (size_t)(id - 1) + 1];
    if (off == TL_RAW_UNMARKED)
        return -1;
    if (!len)
        return 0;
    *p = r->buf + (id >= 2 ? r->end[id - 2] : 0) + off;
    *n = len;
    return 1;
}

typedef enum tl_track_kind {
    TL_TRACK_THREAD = 0, /* a host thread */
    TL_TRACK_STREAM = 1  /* a device stream (kernels, copies) */
} tl_track_kind;

typedef struct tl_track {
    uint8_t kind;   /* tl_track_kind */
    int64_t pid;    /* process id (host) */
    int64_t tid;    /* OS thread id (host) / stream id (device) */
    int32_t device; /* device index (device tracks), -1 for host */
    uint32_t name;  /* string id of the thread or stream name; 0 = unnamed */
} tl_track;

/* Interned strings: id 0 is "". */
typedef struct tl_strtab {
    char **str;    /* id -> NUL-terminated string (owned) */
    uint32_t *len; /* id -> length */
    uint32_t count;
    uint32_t cap;
    uint32_t *slots; /* open-addressing hash: id+1, 0 = empty */
    uint8_t *tags;   /* per slot, 8 more bits of the hash: most probes of other strings stop
                        there, without reading the string (1M distinct names: 0.63 -> 0.50 s) */
    uint32_t nslots;
    /* strings are carved from blocks (mapped each, not a malloc a string), blocks[cur_block] now */
    char *block;
    size_t block_used, block_cap;
    char **blocks;
    size_t nblocks, cap_blocks, cur_block;
} tl_strtab;

void tl_strtab_init(tl_strtab *t);
void tl_strtab_free(tl_strtab *t);
/* Empty again (only "" in it, id 0), keeping its blocks of strings and its hash table for what
 * comes next: a parallel read's part is emptied for every window (a block of 1 MB made and
 * given back each time was most of test_parallel_read's time under ASan). */
void tl_strtab_reset(tl_strtab *t);
/* Bytes the table holds: its blocks of strings, the id arrays and the hash table. */
size_t tl_strtab_bytes(const tl_strtab *t);
uint32_t tl_intern(tl_strtab *t, const char *s, size_t len);
/* The same, with h = tl_hash_bytes(s, len) already known; and a hint that the string of hash h
 * will be interned soon (its slot's cache lines fetched meanwhile): a merge of many strings
 * hides the misses of a table bigger than the caches. */
uint32_t tl_intern_hashed(tl_strtab *t, const char *s, size_t len, uint64_t h);
static inline void tl_strtab_prefetch(const tl_strtab *t, uint64_t h)
{
    if (t->nslots) {
        __builtin_prefetch(&t->slots[h & (t->nslots - 1)]);
        __builtin_prefetch(&t->tags[h & (t->nslots - 1)]);
    }
}
static inline const char *tl_str(const tl_strtab *t, uint32_t id)
{
    return id < t->count ? t->str[id] : "";
}

typedef struct tl_device {
    int32_t id;
    uint32_t name;    /* "NVIDIA H100 80GB HBM3" */
    int64_t memory;   /* totalGlobalMem, bytes; 0 = unknown */
    int32_t sm_count; /* 0 = unknown */
    int32_t cc_major, cc_minor;
} tl_device;

typedef enum tl_source {
    TL_SRC_UNKNOWN = 0,
    TL_SRC_TALLY,        /* tally's own .tally file */
    TL_SRC_KINETO,       /* PyTorch profiler (Kineto) JSON */
    TL_SRC_TORCH_LEGACY, /* PyTorch's older exporter without Kineto */
    TL_SRC_PADDLE,       /* Paddle profiler JSON */
    TL_SRC_CHROME        /* a plain Chrome trace */
} tl_source;

typedef struct tl_trace {
    tl_strtab strings;
    tl_event *ev;
    size_t nev, cap_ev;
    tl_track *tracks;
    uint32_t ntracks, cap_tracks;
    tl_device *devices;
    uint32_t ndevices, cap_devices;

    tl_source source;
    const char *path;    /* where it was read from (borrowed) */
    int64_t wall_offset; /* add to ts to get Unix-epoch ns; 0 = unknown */
    int32_t rank;        /* distributed rank, -1 = unknown */
    int32_t world_size;  /* 0 = unknown */
    /* The job's communication library as Kineto's distributedInfo names it ("nccl", "gloo")
     * and NCCL's version ("2.18.1"); "" = unknown (longer values are cut) */
    char backend[16], nccl_version[24];
    int64_t pid; /* main process id, 0 = unknown */
    /* What the trace calls its accelerators, as the views name them ("GPU 0", "MTIA 9"): "GPU"
     * unless the trace says otherwise (Kineto's mtia_* categories: "MTIA"). Static text. */
    const char *accel;

    /* Where the trace was recorded (.tally traces: META HOST and PROGRAM; string ids, 0 =
     * unknown). */
    uint32_t host, program;

    /* Losses and warnings carried by the trace (recorder counts). */
    uint64_t dropped; /* records dropped at the memory cap */
    uint64_t bad_pops, bad_ends, calls_outside, unclosed;
    uint32_t samples_unit; /* string id of the unit of step samples ("samples", "tokens") */
    /* Found by the reader (a killed program writes no counts): ranges still open at the end,
     * flagged TL_EV_UNCLOSED (steps aside; the warning shows the larger of this and unclosed),
     * and the parts of a .tally file that could not be read in full. An offset of 0 (the file
     * header) means none. */
    uint64_t open_ranges;
    uint64_t unmatched_ends; /* JSON 'E' events with no open 'B' on their thread: ignored */
    uint64_t negative_durs;  /* JSON 'X' events with a negative dur: read as lasting 0 */
    uint64_t clamped_times;  /* JSON events whose ts or end passed +-TL_TIME_MAX: clamped */
    uint64_t cut_at;         /* the file ends inside the chunk at this offset */
    uint64_t unwritten;      /* chunks the program never wrote in full (zeros where records go) */
    uint64_t unwritten_at;   /* offset of the first of them */
    /* Records the program recorded but could not write (a full disk, a file-size limit), the
     * system error that stopped it, and the threads that dropped or lost records, worst first
     * (.tally traces; from the STATS and LOSSES chunks). */
    uint64_t lost;
    int32_t io_errno;
    struct tl_thread_loss {
        int64_t tid;
        uint64_t dropped, lost;
    } * thread_losses;
    uint32_t nthread_losses;

    /* Memory: every allocation, free and label, in time order after tl_trace_finish (the events
     * of category TL_CAT_MEMORY in ev stay, for the ops table's columns); mem_addr_known: the
     * trace's records carry addresses (a timeline can be followed block by block);
     * mem_totals_known: they carry the allocator's totals (Kineto's "Total Allocated"). Counts
     * of bad records: frees of unknown addresses, allocations at live addresses. */
    tl_memev *mem;
    size_t nmem, cap_mem;
    int mem_addr_known, mem_totals_known;
    uint64_t mem_unmatched_frees, mem_reused, mem_bad_sizes;

    /* Call sites of .tally traces (tally.h's tally_srcloc), which tl_event.site names; only the
     * first 65535 of a file are named by its events. */
    struct tl_site {
        uint32_t file, func; /* string ids, 0 = none */
        uint32_t line;
    } * sites;
    uint32_t nsites;

    /* Steps closed by tally_step with their sample counts, in order (tally traces). */
    int64_t *step_samples;
    size_t nsteps_samples;

    int finished; /* tl_trace_finish ran */

    /* Lossless export. keep_raw: set by the caller before loading (`tally export` does; the
     * reports do not) to have the JSON reader keep what it reads as text in raw: each event's
     * text in its tl_event.raw, the elements of traceEvents that are no event of the model
     * (metadata, flows, E ends, async and global events, what it skips) in raw_other in file
     * order, and the top-level members but traceEvents in raw_members. raw_kept: the reader
     * did (a JSON input read with keep_raw); the Chrome writer then writes those texts. */
    int keep_raw, raw_kept;
    /* Threads the JSON reader parses a plain (not gzip) file with: 0 = TALLY_THREADS, else the
     * available cores; 1 = one. Set by the caller before loading; the model is the same for any
     * count. (A gzip file is inflated in a thread of its own and parsed in the caller's.) */
    int read_threads;
    /* What the parallel read did (zero after a read in one pass): windows parsed, parts dropped
     * for a start that was no element's, units the driving thread parsed itself (an element
     * longer than a window, bad input), whether it went on in one pass from some point (ids a
     * part cannot carry), seconds in the parts and in the merges. TALLY_READ_STATS prints them.
     * threads: the threads that parsed (1: one pass; fewer than read_threads for a small file);
     * flows, flow_bytes: the flow events read and the bytes the read held for them;
     * flows_again: those kept as their elements' offsets and read again at the end (the trace
     * needs its flows; those met before the first event that showed it).
     * A .tally file decoded in parts: windows, the parts; threads, the threads that decoded
     * them (both 0 when decoded in order).
     * The finish's order (any reader): merged, the events of tracks whose runs, laid out
     * together, it merged in place; permuted, the events of an array it permuted instead. */
    struct {
        uint64_t windows, dropped, driver_units, one_pass;
        double parse_s, merge_s;
        int threads;
        uint64_t flows, flow_bytes, flows_again;
        uint64_t merged, permuted;
    } read_stats;
    tl_raw raw;
    uint32_t *raw_other, *raw_members;
    size_t nraw_other, cap_raw_other;
    uint32_t nraw_members, cap_raw_members;

    /* private: track lookup hash (index + 1, 0 = empty) */
    uint32_t *track_slots_;
    uint32_t ntrack_slots_;
    /* private: results shared by the views (tl_trace_memo) */
    struct {
        void *p;
        void (*drop)(void *);
        int state; /* 0 none, 1 being made, 2 made */
    } memo_[TL_MEMO_COUNT];
    /* Known from tl_trace_finish until the trace changes (see tl_trace_memo): the span of the
     * events and where the step spans are, which every view asks for */
    int finish_known_;
    int64_t span0_, span1_;
    uint32_t *step_at_; /* the step spans' indices, in order */
    size_t nstep_at_;
    /* the runs of events of one track, in order, with the categories each holds (tl_cat_walk);
     * NULL: not known */
    struct tl_cat_run {
        uint32_t first; /* its first event */
        uint32_t cats;  /* TL_CATBIT of each category among its events (all bits: one >= 32) */
    } * runs_;
    size_t nruns_;
} tl_trace;

/* What a file another program truncates or rewrites while it is read makes the reader say after
 * "<file>: " (the tally command's SIGBUS handler, for mapped pages past the new end, and the JSON
 * reader, for a text that ends early or reads as zeros there). */
#define TL_CUT_SHORT_TEXT                                                                          \
    "the file was cut short while it was read (another program truncated or rewrote it); read a "  \
    "copy that nothing writes to"

/* ---- large arrays ---------------------------------------------------------------------------
 * The event array, the sort keys and the views' per-event scratch are tens to hundreds of MB.
 * On the VMs tally runs on, touching a fresh 4 KB page costs ~10 us (200 MB: 0.5 s), about what
 * a 2 MB transparent huge page costs, so these ask the kernel for huge pages
 * (madvise(MADV_HUGEPAGE); a no-op where THP is off). Free the memory with free(). */
void *tl_big_alloc(size_t n);
void *tl_big_calloc(size_t n, size_t size); /* zeroed */
void *tl_big_realloc(void *p, size_t n);
/* Give back the whole pages inside [p, p + n): memory whose contents are no longer needed
 * (heap memory reads as zeros when touched again), or pages of a private file mapping never
 * written (they read from the file again). */
void tl_discard_pages(void *p, size_t n);
/* The pages of [p, p + n) advised huge (madvise(MADV_HUGEPAGE)), for a block of 4 MB and more
 * (tl_big_alloc's blocks, the JSON reader's windows); a no-op else, or without THP. */
void tl_advise_huge(void *p, size_t n);

/* For a process that reads one trace and exits (the tally command, the benchmarks): while the
 * trace is read, blocks of 1 MB and more are mapped apart, so that an array that grows is moved
 * by the kernel (mremap), leaving no hole behind, and goes back to the system when freed; every
 * thread allocates from one arena (per-thread arenas each keep their own free memory: the peak
 * grew with the threads). A no-op without glibc. Not for a library inside someone else's process
 * (the Python module does not call it). */
void tl_malloc_for_one_trace(void);

/* Once the trace is read, in such a process (else a no-op): memory freed is kept for the next use
 * rather than given back, so that a view's scratch is mostly pages an earlier view left, not
 * fresh ones: blocks under 32 MB come from the heap, and up to 16 MB free at its top stay. A fresh
 * page costs a fault and its zeroing (on these VMs several us): giving back every block of 1 MB
 * and more made the default report of a 1 GB trace take 107 k faults, now 57 k (4.4 s -> 3.3 s
 * on one thread; docs/PERFORMANCE.md, "Memory kept for the views"). 64 MB kept at the top took a
 * little less time and 22 MB more at the peak of a file of 1M distinct names (its views' tables
 * are of other sizes than the memory kept). Not during the read: arrays grown in the heap are
 * copied and leave holes (that file peaked 20 MB higher). For t of 1M events and more, the heap
 * is also kept in huge pages (tl_malloc_advise), and keeps up to 64 MB free at its top. */
void tl_malloc_for_views(const tl_trace *t);
/* After tl_malloc_for_views, for a trace of 1M events and more, the views' heap in huge pages
 * (madvise(MADV_HUGEPAGE) of the heap the process has now: the views call it as each begins,
 * the heap having grown meanwhile). On these VMs a 4 KB page's first touch costs ~2 us, a 2 MB
 * page's far less for the same bytes: the default report of a 1 GB trace took 32 k page faults,
 * 13 k advised, and one thread 2.9 -> 2.2 s (glibc's own glibc.malloc.hugetlb=1 tunable, set
 * from outside, gave the same; docs/PERFORMANCE.md, "The views' heap in huge pages"). The heap
 * then grows in steps of 64 MB at least (M_TOP_PAD), 64 MB of it as the views begin: a page
 * never touched costs nothing. Smaller traces gain nothing measurable and would hold a few MB
 * more (a 92 MB trace: +1.5-3 MB, 0.30x -> 0.33x its size at -j 2). A no-op where
 * tl_malloc_for_views does nothing, or without THP. */
void tl_malloc_advise(void);

/* A thread that makes the pages of a big array ahead of its writer: the kernel zeroes a fresh
 * page in the thread that first touches it (on these VMs 0.4-2 ms per MB, most of reading a
 * .tally file), so a writer filling an array front to back on one core can have another core
 * take those faults. It populates (madvise(MADV_POPULATE_WRITE): contents untouched, so it never
 * races the writer) up to lead bytes past what the writer says it reached, in 2 MB steps, and
 * sleeps when that far ahead. Where the call is not supported, or no thread can be made, it does
 * nothing. */
typedef struct tl_prefault {
    char *base;
    size_t len, lead;
    _Atomic size_t reached; /* bytes from base the writer has written up to */
    _Atomic int stop;
    size_t populated; /* bytes made (the thread's own) */
    int running;
    pthread_t th;
} tl_prefault;

/* Start populating [base, base + len) on another thread, lead bytes ahead of the writer, when
 * cores > 1 and len is worth it (else the writer goes on alone). */
void tl_prefault_start(tl_prefault *pf, void *base, size_t len, size_t lead, int cores);
/* The writer has written up to byte reached (cheap: call it often) */
static inline void tl_prefault_reached(tl_prefault *pf, size_t reached)
{
    atomic_store_explicit(&pf->reached, reached, memory_order_relaxed);
}
/* Stop the thread and wait for it. */
void tl_prefault_stop(tl_prefault *pf);

/* pthread_create(th, NULL, fn, arg) with every signal but the faults (SIGBUS, SIGSEGV, SIGFPE,
 * SIGILL) blocked in the new thread: tally's threads can run inside a profiled program, whose
 * signals are its own threads'. */
int tl_thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

/* Run fn on each of the n items (size bytes apart from items): items 1.. in threads of their
 * own (tl_thread_start's), item 0 in the caller; an item whose thread cannot be made
 * runs in the caller, after. Returns when all are done. */
void tl_run_each(void *(*fn)(void *), void *items, size_t size, int n);

/* The same in two halves, for work the caller does meanwhile: tl_run_start starts items
 * [first, n) each in a thread of its own (at most 64), tl_run_wait joins them and runs in the
 * caller any whose thread could not be made (and those past 64). */
typedef struct tl_pool tl_pool;
typedef struct tl_runner {
    void *(*fn)(void *);
    char *items;
    size_t size;
    int first, n;
    tl_pool *pool;
    pthread_t th[64];
    unsigned char started[64];
    unsigned char slot[64]; /* with a pool: the worker given item k, + 1; 0 none */
} tl_runner;
void tl_run_start(tl_runner *r, void *(*fn)(void *), void *items, size_t size, int first, int n);

/* Threads kept for work handed out again and again (a read's windows: a thread a part and a
 * window started 50 k threads in test_parallel_read, most of its time under the sanitizers). A
 * worker is started when an item finds every other one busy (at most 64), runs an item, waits
 * for the next; tl_pool_free joins them all, once every item given is waited for. NULL when
 * there is no memory for it: tl_run_start_in and the shares then start threads as tl_run_start
 * does. */
tl_pool *tl_pool_new(void);
void tl_pool_free(tl_pool *p);
/* tl_run_start with the pool's workers instead of threads of their own; an item no worker can
 * take (64 busy, or one cannot be started) runs in the caller at the wait, as with threads. */
void tl_run_start_in(tl_runner *r, tl_pool *pool, void *(*fn)(void *), void *items, size_t size,
                     int first, int n);
/* One item: in a thread of its own when apart (and a thread can be had), else in the caller at
 * tl_run_wait. */
void tl_run_apart(tl_runner *r, void *(*fn)(void *), void *item, int apart);
void tl_run_wait(tl_runner *r);

/* Items shared out: n items that up to `workers` threads of the pool take one after another
 * until none is left, the caller among them at tl_share_wait. For items of uneven cost and
 * more items than threads: a thread done early takes the next item rather than wait (a read's
 * parts: with a thread a part, the parts' ends waited on one another and 2 cores were 1.45
 * busy). tl_share_start hands workers - 1 threads the items (the caller being the last);
 * tl_share_wait takes items in the caller until none is left, then waits for the threads. */
typedef struct tl_share {
    void *(*fn)(void *);
    char *items;
    size_t size;
    int n;
    _Atomic int next; /* the next item to take */
    tl_runner r;
} tl_share;
void tl_share_start(tl_share *s, tl_pool *pool, void *(*fn)(void *), void *items, size_t size,
                    int n, int workers);
void tl_share_wait(tl_share *s);
/* Both at once: the items shared out, the caller among the workers, done on return. */
void tl_share_each(tl_pool *pool, void *(*fn)(void *), void *items, size_t size, int n,
                   int workers);

/* Threads to use where a caller says 0: TALLY_THREADS when set to a number > 0, else the
 * available cores; at most 64. */
int tl_default_threads(void);
/* The threads a trace's own passes use: those its load used (t->read_threads: -j,
 * TALLY_THREADS), else tl_default_threads(). */
int tl_trace_threads(const tl_trace *t);

/* Permute ev[0, n) so that position i receives the event at index perm[i] (perm, a permutation
 * of 0..n-1, is consumed), in place (tl_trace_finish orders the events with it; public for its
 * tests). segments: 1 in segments walked in turn, whose cache misses overlap (for big arrays),
 * 0 one cycle after another, -1 by n. threads: the segments' moves are split among this many
 * threads (at most 16). 0; -1 if n is over INT32_MAX. */
int tl_permute_events(tl_event *ev, uint32_t *perm, size_t n, int segments, int threads);

void tl_trace_init(tl_trace *t);
/* The string table's hash of len bytes at s (FNV-1a on 8-byte words, mixed), for other tables
 * keyed by names. */
uint64_t tl_hash_bytes(const char *s, size_t len);
/* What the trace calls its accelerators: t->accel, else "GPU". */
const char *tl_accel_name(const tl_trace *t);
void tl_trace_free(tl_trace *t);
/* Empty t for another use, keeping the memory of its events, memory rows and tracks (the
 * parallel JSON reader's parts, once per window): no events, memory rows, tracks or strings,
 * and what the JSON reader counts or notes per event (open ranges, unmatched ends, the
 * accelerator's name, what the memory rows carry) back to none. */
void tl_trace_clear(tl_trace *t);

/* Append an event (zeroed, parent/link = TL_NONE); returns it, or NULL when out of memory.
 * The pointer is valid until the next append. */
tl_event *tl_trace_add(tl_trace *t);
/* Make room for n events in all, when a reader can estimate them (from the file's size): an
 * array that grows by realloc moves, and a move maps its huge pages back as 4 KB pages. An
 * estimate that is too high costs address space only; one too low, the moves. Returns 0, or -1
 * when the room could not be had (nothing changes: the array grows as it fills). */
int tl_trace_reserve(tl_trace *t, size_t n);
/* Find or add the track (kind, pid, tid, device); returns its index. */
uint32_t tl_trace_track(tl_trace *t, tl_track_kind kind, int64_t pid, int64_t tid, int32_t device);
/* The same track if it exists (UINT32_MAX if not), changing nothing: threads may look up at once.
 */
uint32_t tl_trace_find_track(const tl_trace *t, tl_track_kind kind, int64_t pid, int64_t tid,
                             int32_t device);
/* In a finished trace (events in track order): the index past the events of ev[i]'s track that
 * start at i, by a galloping search (a pass that needs only some tracks' events skips the others
 * in a few steps each, not event by event). i < t->nev. */
size_t tl_trace_track_end(const tl_trace *t, size_t i);

/* A category as a bit of a mask of categories, and whether category c is in the mask cats. */
#define TL_CATBIT(c) (1u << (c))
static inline int tl_cat_in(uint32_t cats, unsigned c)
{
    return c < 32 && (cats >> c & 1);
}
/* Device work that counts as GPU time: kernels, copies, memsets (not gpu_user_annotation spans,
 * which only mirror host ranges). */
#define TL_DEVICE_WORK                                                                             \
    (TL_CATBIT(TL_CAT_KERNEL) | TL_CATBIT(TL_CAT_MEMCPY) | TL_CATBIT(TL_CAT_MEMSET))
static inline int tl_cat_is_device_work(unsigned c)
{
    return tl_cat_in(TL_DEVICE_WORK, c);
}

/* A pass over the events of some categories only: the runs of events (in a finished trace, a
 * track's events) that hold none of them are skipped whole. The device work of a Kineto trace is
 * under a tenth of its events, on a few stream tracks; a view's pass for it over all of a 1 GB
 * trace's events read 155 MB.
 *     tl_cat_walk w;
 *     for (size_t i = tl_cat_walk_begin(&w, t, TL_DEVICE_WORK); i < t->nev;
 *          i = tl_cat_walk_step(&w, i))
 *         ...   (the runs hold events of other categories too: test each event's)
 * The events come in index order. Where the runs are not known (a trace not finished, or
 * changed since, or no memory for them), the walk is every event. Safe from threads that only
 * read t. */
typedef struct tl_cat_walk {
    const struct tl_cat_run *run; /* NULL: every event */
    size_t nrun, k;               /* the runs; the next to look at */
    size_t end, nev;              /* the end of the run the walk is in; the trace's events */
    uint32_t cats;
} tl_cat_walk;
/* The first event of the walk's first run (t->nev when there is none). */
size_t tl_cat_walk_begin(tl_cat_walk *w, const tl_trace *t, uint32_t cats);
/* The start of the next run holding one of the walk's categories, or nev. */
size_t tl_cat_walk_skip(tl_cat_walk *w);
/* The event after i (the one the walk is at). */
static inline size_t tl_cat_walk_step(tl_cat_walk *w, size_t i)
{
    return ++i < w->end ? i : tl_cat_walk_skip(w);
}
/* Whether the trace holds an event of a category in cats. */
int tl_trace_has_cats(const tl_trace *t, uint32_t cats);

/* Keep only the tracks with keep[k] != 0 (k < n; tracks from n on are dropped), in their order,
 * renumbering the events' tracks. For readers that create tracks from metadata (a thread's
 * name) or from events they then skip: a track nothing ran on is not a thread of the trace.
 * Every event must be on a kept track. Call before tl_trace_finish. Returns 0, or -1 when out
 * of memory (nothing changes). */
int tl_trace_keep_tracks(tl_trace *t, const uint8_t *keep, uint32_t n);
/* Append a memory event to t->mem (zeroed but for totals -1); NULL when out of memory. Readers
 * append in any order; tl_trace_finish sorts them by time. */
tl_memev *tl_trace_add_mem(tl_trace *t);

/* Give each step span (TL_CAT_STEP) its sample count from the (step number, samples) pairs
 * samples[n] (sorted here), into t->step_samples: one per step span in step-number order, 0 for
 * a step without a pair (the .tally reader and the JSON reader of tally's export). Returns 0,
 * or -1 when out of memory. */
int tl_trace_step_samples(tl_trace *t, int64_t (*samples)[2], size_t n);

/* Find or add a device by id; returns it. */
tl_device *tl_trace_device(tl_trace *t, int32_t id);

/* The order tl_trace_finish puts events in: track, start ascending, longer first, a step
 * before any other event of the same start and length (oa, ob: non-zero for a step, so that a
 * step is the outermost of equal spans whatever order a file lists them in), then the order
 * they were added (ia, ib). The streaming export decides flows by the same rule. */
static inline int tl_sorts_before(uint32_t ta, int64_t tsa, int64_t da, int oa, uint64_t ia,
                                  uint32_t tb, int64_t tsb, int64_t db, int ob, uint64_t ib)
{
    if (ta != tb)
        return ta < tb;
    if (tsa != tsb)
        return tsa < tsb;
    if (da != db)
        return da > db;
    if (!oa != !ob)
        return oa != 0;
    return ia < ib;
}

/* Sort events and compute parent/depth/link. Call once after the last tl_trace_add. */
int tl_trace_finish(tl_trace *t);
/* A result computed from the finished trace t that several readers share (the memory replay,
 * which the memory view and findings both need): made by make(t) once, by the first caller
 * while any others calling for it wait, kept until the trace changes (tl_trace_finish,
 * tl_trace_keep_tracks, tl_trace_relink, tl_trace_clear) or is freed, then released with drop.
 * Safe from threads that only read t. NULL when make failed (the next call tries again). */
void *tl_trace_memo(const tl_trace *t, int key, void *(*make)(const tl_trace *t),
                    void (*drop)(void *p));
/* Release what tl_trace_memo kept: the trace is about to change. */
void tl_trace_memo_drop(tl_trace *t);
/* Release the result kept for key now that no reader needs it (made again if asked for). Not
 * while anyone may still read it. */
void tl_trace_memo_release(const tl_trace *t, int key);

/* Recompute runtime<->device links after correlation ids changed (finished traces only). */
int tl_trace_relink(tl_trace *t);

/* Time covered by the trace: [t0, t1) over all events but counters (0, 0 when none). Known
 * without a pass over the events once the trace is finished. */
void tl_trace_span(const tl_trace *t, int64_t *t0, int64_t *t1);
/* The indices of the step spans (TL_CAT_STEP) in order, *n of them, when tl_trace_finish has
 * listed them and nothing changed since; NULL otherwise (look at the events). */
const uint32_t *tl_trace_step_spans(const tl_trace *t, size_t *n);

/* ---------------------------------------------------------------------------------------------
 * Loading any supported file.
 */

/* What kind of failure an error is, decided where it is raised and carried to the top, where
 * the command line turns it into the exit status once (usage: 2, every other kind: 1). */
typedef enum tl_errcode {
    TL_ERR_INPUT = 0, /* the input is not a trace tally can read (the default) */
    TL_ERR_USAGE,     /* the caller asked for what does not exist: a view, a sort key, a metric */
    TL_ERR_NOMEM,     /* out of memory */
    TL_ERR_IO         /* a file cannot be opened, read or written (the system error is in msg) */
} tl_errcode;

/* One-line error: "FILE:LINE:COL: expected ..." or "FILE: offset N: ...", and its kind.
 * `tl_error err = {{0}};` is an empty error of kind TL_ERR_INPUT: the fields sit in an anonymous
 * struct, code first, so that this initializer (used everywhere) is the universal zero
 * initializer of that struct and draws no -Wmissing-field-initializers or -Wmissing-braces. */
typedef struct tl_error {
    struct {
        tl_errcode code;
        char msg[512];
    };
} tl_error;

/* Fill e (NULL: ignored): tl_error_set with the kind TL_ERR_INPUT, tl_error_setc with code. */
void tl_error_set(tl_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tl_error_setc(tl_error *e, tl_errcode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A message that begins with the path tmp (a file written under a temporary name, then renamed)
 * begins with out instead: the user named out. */
void tl_error_for_path(tl_error *e, const char *tmp, const char *out);

/* Read a trace of any supported format (.tally, Chrome/Kineto/Paddle JSON, .json.gz), choosing
 * the reader by content. path "-" is standard input; a pipe, a FIFO or a process substitution
 * (/dev/fd/N) is read too (copied into an unlinked temporary file first: the readers read
 * their input again, to tell its kind and to say where an error is). Returns 0, or -1 with err
 * filled (a JSON document without trace events is an error). progress: print a progress line to
 * stderr for long reads. */
int tl_load(tl_trace *t, const char *path, int progress, tl_error *err);

/* Individual readers (used by tl_load; exposed for tests and fuzzers). */
int tl_read_tally(tl_trace *t, const char *path, tl_error *err);
int tl_read_tally_mem(tl_trace *t, const void *data, size_t len, const char *name, tl_error *err);
int tl_read_json(tl_trace *t, const char *path, int progress, tl_error *err);
int tl_read_json_mem(tl_trace *t, const char *data, size_t len, const char *name, tl_error *err);
/* The same on an open regular file fd (not closed; read from offset 0), name for messages. */
int tl_read_tally_fd(tl_trace *t, int fd, const char *name, tl_error *err);
int tl_read_json_fd(tl_trace *t, int fd, const char *name, int progress, tl_error *err);

/* Chrome trace JSON writer (PyTorch conventions); gzip when path ends in ".gz".
 * Returns 0, or -1 with err filled. */
int tl_write_chrome(const tl_trace *t, const char *path, tl_error *err);
int tl_write_chrome_file(const tl_trace *t, FILE *out, tl_error *err);

#endif
