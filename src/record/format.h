/*
 * format.h — the .tally trace file: byte layout shared by the recorder (writer) and the reader
 * (src/trace/tally_reader.c). docs/FORMAT.md describes the same thing in prose and tables.
 *
 * A file is a 16-byte header followed by chunks. Each chunk is a 16-byte header (type, flags,
 * payload length) and a payload. Everything is little-endian. Readers skip chunk types they do
 * not know, so new kinds of data are added as new chunk types (minor version bump); a change of
 * an existing layout bumps the major version, which readers refuse.
 *
 * Host events are stored as the raw contents of a thread's buffer: 16-byte records whose first
 * word packs the record type (top 8 bits) with a 56-bit timestamp in clock ticks (TSC or ns, see
 * the CLOCK metadata), and whose second word is a payload (a call-site id, a handle, a step
 * number). A few record types are followed by payload slots (strings, device and API events);
 * tally__rec_slots() says how many 16-byte slots a record takes in all.
 */
#ifndef TALLY_RECORD_FORMAT_H
#define TALLY_RECORD_FORMAT_H

#include <stdint.h>
#include <string.h>

#define TALLY__MAGIC        "TALLYTRC" /* 8 bytes, no NUL */
#define TALLY__FORMAT_MAJOR 1
#define TALLY__FORMAT_MINOR 2 /* 1.1: ARGREF records and keyed argument strings; 1.2: MEMORY */

/* File header (16 bytes). */
typedef struct tally__file_header {
    char magic[8];
    uint16_t major, minor;
    uint32_t header_size; /* 16; a reader skips to this offset for the first chunk */
} tally__file_header;

/* Chunk header (16 bytes), followed by len bytes of payload. */
typedef struct tally__chunk_header {
    uint32_t type;  /* TALLY__CHUNK_* */
    uint32_t flags; /* 0 */
    uint64_t len;   /* payload bytes */
} tally__chunk_header;

enum {
    TALLY__CHUNK_META = 1,    /* key/length/value entries (TALLY__META_*) */
    TALLY__CHUNK_STRINGS = 2, /* call sites: id -> name, file, function, line, category */
    TALLY__CHUNK_THREADS = 3, /* thread names */
    TALLY__CHUNK_EVENTS = 4,  /* a run of one thread's buffer: header + records */
    TALLY__CHUNK_DEVICES = 5, /* device properties */
    TALLY__CHUNK_STATS = 6,   /* counts of what was recorded and lost (last one wins) */
    TALLY__CHUNK_LOSSES = 7   /* per thread: records dropped at the cap or lost to I/O errors */
};

/* Categories: 0..6 are tally_category, the rest are equal to tl_cat (the reader asserts it). */
enum {
    TALLY__CAT_STEP = 7,
    TALLY__CAT_RUNTIME = 10,
    TALLY__CAT_DRIVER = 11,
    TALLY__CAT_KERNEL = 12,
    TALLY__CAT_MEMCPY = 13,
    TALLY__CAT_MEMSET = 14,
    TALLY__CAT_GPU_USER = 15,
    TALLY__CAT_SYNC = 16,
    TALLY__CAT_OVERHEAD = 17,
    TALLY__CAT_INSTANT = 18,
    TALLY__CAT_COUNTER = 19,
    TALLY__CAT_MEMORY = 20,
    TALLY__CAT_OTHER = 21
};

/* Kinds of copies (DEVICE records of TALLY__CAT_MEMCPY) and device-event flags; equal to the
 * trace model's tl_memcpy_kind and TL_EV_* (src/trace/load.c asserts it). */
enum {
    TALLY__COPY_UNKNOWN = 0,
    TALLY__COPY_HTOD = 1,
    TALLY__COPY_DTOH = 2,
    TALLY__COPY_DTOD = 3,
    TALLY__COPY_HTOH = 4,
    TALLY__COPY_PTOP = 5
};
enum {
    TALLY__DEV_INSTANT = 1u << 0,   /* no duration by nature (memory events) */
    TALLY__DEV_SYNC_COPY = 1u << 3, /* synchronous copy or memset */
    TALLY__DEV_PAGEABLE = 1u << 4,  /* copy from/to pageable host memory */
    TALLY__DEV_MEM_DEVICE = 1u << 5 /* memory event on device memory (else host) */
};

/* META entries: u32 key, u32 len, value (len bytes, padded to 8). Later values win. */
enum {
    TALLY__META_CLOCK = 1,        /* tally__meta_clock */
    TALLY__META_WALL_OFFSET = 2,  /* i64: add to a ns timestamp to get Unix-epoch ns */
    TALLY__META_PID = 3,          /* i64 */
    TALLY__META_HOST = 4,         /* string */
    TALLY__META_RANK = 5,         /* i32, -1 unknown */
    TALLY__META_WORLD_SIZE = 6,   /* i32, 0 unknown */
    TALLY__META_SAMPLES_UNIT = 7, /* string: unit of step sample counts */
    TALLY__META_WINDOW = 8,       /* tally__meta_window */
    TALLY__META_START_NS = 9,     /* i64: when recording of this window began (ns) */
    TALLY__META_END_NS = 10,      /* i64: when it ended (ns); ranges still open close here */
    TALLY__META_PROGRAM = 11      /* string: program name */
};

typedef struct tally__meta_clock {
    uint32_t kind; /* 0: ticks are ns of CLOCK_MONOTONIC; 1: ticks are TSC cycles */
    uint32_t pad;
    uint64_t tsc0;   /* tick value at ns0 */
    int64_t ns0;     /* CLOCK_MONOTONIC ns at tsc0 */
    double tsc_hz;   /* ticks per second (kind 1) */
} tally__meta_clock; /* ns = ns0 + (ticks - tsc0) * 1e9 / tsc_hz */

typedef struct tally__meta_window {
    int32_t index; /* 0 for the first active window of the session */
    int32_t pad;
    int64_t first_step; /* first step recorded in the window */
} tally__meta_window;

/* STRINGS entry (24 bytes + name + file + function, padded to 8). */
typedef struct tally__string_entry {
    uint64_t id; /* the call site's id (its address in the recording process) */
    uint32_t line, category;
    uint32_t name_len, file_len, func_len, pad;
} tally__string_entry;

/* THREADS entry (16 bytes + name, padded to 8). */
typedef struct tally__thread_entry {
    uint32_t slot; /* recorder thread slot (1..), 0 = named by OS tid only */
    uint32_t name_len;
    int64_t tid; /* OS thread id */
} tally__thread_entry;

/* DEVICES entry (32 bytes + name, padded to 8). */
typedef struct tally__device_entry {
    int32_t id, sm_count;
    int64_t memory;
    int32_t cc_major, cc_minor;
    uint32_t name_len, pad;
} tally__device_entry;

/* EVENTS chunk: this header, then (len - 32) / 16 records. */
typedef struct tally__events_header {
    uint32_t slot; /* recorder thread slot: the thread part of begin/end handles */
    uint32_t pad;
    int64_t tid;              /* OS thread id */
    uint64_t seq;             /* order of this run among the thread's runs (0, 1, ...) */
    uint64_t first_begin_seq; /* handle sequence number of the run's first BEGIN record */
} tally__events_header;

/* LOSSES entry (32 bytes), one per thread that lost records in the window. */
typedef struct tally__loss_entry {
    uint32_t slot; /* recorder thread slot */
    uint32_t pad;
    int64_t tid;      /* OS thread id */
    uint64_t dropped; /* records dropped at the memory cap */
    uint64_t lost;    /* records recorded but not written (I/O error) */
} tally__loss_entry;

/* STATS chunk payload. */
typedef struct tally__stats_chunk {
    uint64_t records;       /* records written to this file */
    uint64_t dropped;       /* records dropped at the memory cap while this window was open */
    uint64_t bad_pops;      /* pops with no open range (this window) */
    uint64_t bad_ends;      /* ends with a foreign, stale or zero handle (this window) */
    uint64_t calls_outside; /* calls before start / after stop (whole session so far) */
    uint64_t unclosed;      /* push ranges open when the window closed */
    uint64_t steps;         /* steps closed in the window */
    uint64_t buffers;       /* events chunks written */
    uint64_t lost;          /* records recorded but not written: the file could not be written
                               (ENOSPC, EFBIG, EIO); absent (0) in files of format 1.0 */
    int32_t io_errno;       /* the system error that stopped writing, 0 = none */
    int32_t pad;
    uint64_t bad_frees;     /* (1.2) tally_free of an address not allocated (this window) */
    uint64_t reused_allocs; /* (1.2) tally_alloc at an address still allocated (this window) */
    uint64_t bad_sizes;     /* (1.2) tally_alloc of more than INT64_MAX bytes, not recorded */
} tally__stats_chunk;

/* ---- records --------------------------------------------------------------------------------- */

typedef struct tally__rec {
    uint64_t w0; /* type << 56 | 56-bit field (ticks, or a record-specific value) */
    uint64_t w1; /* payload */
} tally__rec;

_Static_assert(sizeof(tally__rec) == 16, "a record is 16 bytes");

#define TALLY__TS_MASK          ((UINT64_C(1) << 56) - 1)
#define TALLY__REC_TYPE(r)      ((unsigned)((r)->w0 >> 56))
#define TALLY__REC(type, field) (((uint64_t)(type) << 56) | ((uint64_t)(field)&TALLY__TS_MASK))

enum {
    TALLY__R_PUSH = 1,       /* ticks; w1 = call-site id (0: name from the preceding STR) */
    TALLY__R_POP = 2,        /* ticks; w1 = 1: a pop made when the buffer was full, written late */
    TALLY__R_BEGIN = 3,      /* ticks; w1 = call-site id (0: from STR); the n-th BEGIN of a run
                                has handle sequence number first_begin_seq + n */
    TALLY__R_END = 4,        /* ticks; w1 = handle = slot << 40 | sequence number */
    TALLY__R_MARK = 5,       /* ticks; w1 = call-site id (0: from STR) */
    TALLY__R_COUNTER = 6,    /* ticks; w1 = call-site id (0: from STR); value from VALUE */
    TALLY__R_STEP_BEGIN = 7, /* ticks; w1 = step number */
    TALLY__R_STEP_END = 8,   /* ticks; w1 = step number; samples from a preceding VALUE */
    TALLY__R_STR = 9,        /* field = role << 48 | category << 40; w1 = length in bytes;
                                followed by ceil(length / 16) slots of bytes */
    TALLY__R_VALUE = 10,     /* w1 = a value for the next record (double bits for counters,
                                sample count for STEP_END) */
    TALLY__R_DEVICE = 11,    /* field = payload slots; tally__fmt_device + name + args */
    TALLY__R_API = 12,       /* field = payload slots; tally__fmt_api + name */
    TALLY__R_STEP_STOP = 13, /* ticks; w1 = step number: the open step, closed by stop */
    TALLY__R_ARGREF = 14,    /* w1 = key: the argument string of the next PUSH is the one a
                                keyed STR ARG defined earlier in the file (any thread) */
    TALLY__R_MEMORY = 15,    /* ticks; w1 = bytes allocated (negative: freed); then two slots
                                of tally__fmt_memory */
    TALLY__R_MEMORY_SHORT = 16 /* the same without the allocator's totals (unknown): one slot,
                                  the first 16 bytes of tally__fmt_memory (tally_alloc's) */
};

/* Roles of a STR record: what the string is for. */
enum {
    TALLY__STR_NAME = 1,  /* name of the next PUSH/BEGIN/MARK/COUNTER with id 0; category in the
                             STR record */
    TALLY__STR_ARG = 2,   /* argument string of the next PUSH/BEGIN; when a VALUE record comes
                             right before it, its w1 is the string's key for later ARGREFs */
    TALLY__STR_THREAD = 3 /* the thread's name from now on */
};

#define TALLY__STR_ROLE(r) ((unsigned)(((r)->w0 >> 48) & 0xff))
#define TALLY__STR_CAT(r)  ((unsigned)(((r)->w0 >> 40) & 0xff))
#define TALLY__STR_MAX     32768 /* longer strings are cut (C++ kernel names exceed 4 KiB) */

/* Payload of a DEVICE record (ns timestamps on tally's clock, not ticks). */
typedef struct tally__fmt_device {
    int64_t start, end, corr, bytes, stream;
    int32_t device;
    uint32_t cat;
    uint16_t flags;
    uint8_t copy_kind;
    uint8_t pad[5];
    uint32_t name_len, args_len; /* name then args follow */
} tally__fmt_device;

/* Payload of an API record (ns timestamps). */
typedef struct tally__fmt_api {
    int64_t start, end, corr, tid;
    uint32_t cat, name_len; /* name follows */
} tally__fmt_api;

/* Payload of a MEMORY record: an allocation or a free on the recording thread. Its name, when it
 * has one (a dotted path), is a STR NAME record right before it. */
enum {
    TALLY__MEM_CAT_MASK = 0xff, /* tally_mem_category */
    TALLY__MEM_LABEL = 1u << 8, /* classifies the block at ptr (bytes: its size, 0 = unknown);
                                   changes no total */
    TALLY__MEM_LIVE = 1u << 9,  /* allocated before the window began (written when it opened) */
    TALLY__MEM_NS = 1u << 10    /* the record's 56-bit field is ns on tally's clock, not ticks
                                   (CUPTI's memory activity) */
};
typedef struct tally__fmt_memory {
    uint64_t ptr;            /* the address */
    int32_t device;          /* -1: host memory; else the device index */
    uint32_t category;       /* tally_mem_category | TALLY__MEM_* flags */
    int64_t total_allocated; /* the allocator's totals after this event (-1: unknown) */
    int64_t total_reserved;
} tally__fmt_memory;

_Static_assert(sizeof(tally__fmt_memory) == 32, "memory payload: two slots");
_Static_assert(sizeof(tally__fmt_device) == 64, "device payload");
_Static_assert(sizeof(tally__fmt_api) == 40, "api payload");

/* Slots taken by the record at r (1 + its payload slots). */
static inline uint64_t tally__rec_slots(const tally__rec *r)
{
    unsigned t = TALLY__REC_TYPE(r);
    if (t == TALLY__R_STR)
        return 1 + (r->w1 + 15) / 16;
    if (t == TALLY__R_DEVICE || t == TALLY__R_API)
        return 1 + (r->w0 & 0xffffffffu);
    if (t == TALLY__R_MEMORY)
        return 3;
    if (t == TALLY__R_MEMORY_SHORT)
        return 2;
    return 1;
}

static inline uint64_t tally__pad8(uint64_t n)
{
    return (n + 7) & ~(uint64_t)7;
}

#endif
