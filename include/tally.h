/*
 * tally.h — the public API of tally, a low-overhead profiler for deep-learning workloads.
 *
 * One header, C11, usable from C++. Everything not declared here is private.
 *
 *   tally_start(NULL);                          settings from TALLY_* environment variables
 *   for (int i = 0; i < steps; i++) {
 *       TALLY_SCOPE("forward", TALLY_FORWARD) { ... }
 *       tally_step(batch_size);
 *   }
 *   tally_stop();                               closes the trace, prints a short summary to stderr
 *
 * Rules of ranges:
 *   - push/pop (and the scoped forms built on them) nest on the calling thread: pop ends the
 *     innermost open range of that thread.
 *   - begin/end go through a handle: end it exactly once, from any thread.
 *   - A range call site names a `static const tally_srcloc`; the hot path stores its address,
 *     never copies the string. Names must live as long as the program (string literals do).
 *
 * Threading: every function may be called from any thread. None blocks, allocates on the hot
 * path, aborts, or writes to stdout. errno is preserved by every call.
 *
 * With TALLY_DISABLE defined before including this header, every macro expands to nothing and
 * the inline functions do nothing.
 */
#ifndef TALLY_H
#define TALLY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TALLY_VERSION_MAJOR 0
#define TALLY_VERSION_MINOR 1
#define TALLY_VERSION_PATCH 0
#define TALLY_VERSION_HEX                                                                          \
    ((TALLY_VERSION_MAJOR << 16) | (TALLY_VERSION_MINOR << 8) | TALLY_VERSION_PATCH)

#if defined(_WIN32)
#define TALLY_API
#else
#define TALLY_API __attribute__((visibility("default")))
#endif

/* Version of the library actually linked, as TALLY_VERSION_HEX and as "0.1.0". */
TALLY_API unsigned tally_version(void);
TALLY_API const char *tally_version_string(void);

/* ---------------------------------------------------------------------------------------------
 * Errors: functions return 0 or one of these negative codes.
 */
#define TALLY_ERRNO_MAP(XX)                                                                        \
    XX(EINVAL, -1, "invalid argument")                                                             \
    XX(ESTATE, -2, "not allowed in the current session state")                                     \
    XX(ENOMEM, -3, "out of memory")                                                                \
    XX(EIO, -4, "could not write the trace file")                                                  \
    XX(ECONFIG, -5, "bad TALLY_* setting")                                                         \
    XX(ENOTSUP, -6, "not supported on this machine")

typedef enum tally_err {
#define TALLY__ERR_ENUM(name, value, text) TALLY_##name = value,
    TALLY_ERRNO_MAP(TALLY__ERR_ENUM)
#undef TALLY__ERR_ENUM
} tally_err;

/* A static string describing code (never NULL). */
TALLY_API const char *tally_strerror(int code);
/* The error name, as "TALLY_EINVAL" (never NULL). */
TALLY_API const char *tally_err_name(int code);

/* ---------------------------------------------------------------------------------------------
 * Categories. The Model and Distributed views key on them.
 */
typedef enum tally_category {
    TALLY_USER = 0,      /* user-defined (the default) */
    TALLY_DATALOADER,    /* reading and preparing a batch */
    TALLY_FORWARD,       /* forward pass */
    TALLY_BACKWARD,      /* backward pass */
    TALLY_OPTIMIZER,     /* optimizer step */
    TALLY_COMMUNICATION, /* collective or point-to-point communication */
    TALLY_OPERATOR,      /* one operator (matmul, rmsnorm, ...) */
    TALLY_CATEGORY_COUNT
} tally_category;

/* A range's call site. Declare it `static const` so that its address identifies it. */
typedef struct tally_srcloc {
    const char *name;     /* what the range is called; lives as long as the program */
    const char *file;     /* __FILE__ */
    const char *function; /* __func__, or NULL */
    uint32_t line;        /* __LINE__ */
    uint32_t category;    /* a tally_category */
} tally_srcloc;

/* ---------------------------------------------------------------------------------------------
 * Sessions.
 */

/* What the default trace-ready handler makes of a finished window (bit set). */
enum {
    TALLY_WRITE_TALLY = 1u << 0,   /* the native .tally file (always written while recording) */
    TALLY_WRITE_JSON = 1u << 1,    /* Chrome trace JSON, PyTorch conventions: converted by a
                                      separate `tally export` process, never inside the program */
    TALLY_WRITE_JSON_GZ = 1u << 2, /* the same, gzip-compressed */
    TALLY_WRITE_SUMMARY = 1u << 3  /* a short summary on stderr (steps, batch and reader cost,
                                      throughput, losses) and the command for the full report */
};

/* A finished active window, handed to the trace-ready callback. Valid during the call only. */
typedef struct tally_window {
    int index;             /* 0 for the first active window of the session */
    int64_t first_step;    /* first step recorded in it (-1 when no step was ever closed) */
    int64_t last_step;     /* last step recorded in it */
    const char *path;      /* the window's complete, closed .tally file */
    const char *base_path; /* path without extension: default outputs are base_path + ".json" ... */
    uint64_t records;      /* records written */
    uint64_t dropped;      /* records dropped at the memory cap */
    unsigned write;        /* the TALLY_WRITE_* set of the session */
    uint64_t lost;         /* records recorded but not written: the file could not be written */
    int io_errno;          /* the system error that stopped writing (ENOSPC, EFBIG...), 0 = none */
} tally_window;

typedef void (*tally_trace_ready_fn)(const tally_window *window, void *user);

/* The handler used when the config names none: prints the window's summary on stderr and, when
 * window->write asks for JSON, starts `tally export` in the background to write it beside the
 * .tally file. Cheap: it never reads the trace back. Callable from a custom handler. */
TALLY_API int tally_default_trace_ready(const tally_window *window, void *user);

/*
 * Session settings. Zero means "default" for every field, so `tally_config c = {0};` is valid.
 * Every field is also read from an environment variable, which wins over the struct so that a
 * program's settings change without recompiling (names beside each field).
 *
 * Schedule, with torch.profiler's meaning (Paddle's names in brackets):
 *   steps < skip_first are not recorded; then cycles of wait [closed] steps not recorded,
 *   warmup [ready] steps armed but not recorded, active [record] steps recorded; repeat cycles
 *   (0 = forever). All zero (the default) records every step from start to stop.
 *   TALLY_SCHEDULE="skip_first=1,wait=1,warmup=1,active=3,repeat=2" (closed/ready/record accepted)
 *   or Paddle's half-open range form TALLY_SCHEDULE="3:10" (= steps 3..9 recorded).
 *
 * Files are never overwritten: when <name>.tally exists, <name>-1.tally, <name>-2.tally ... are
 * used. A child made by fork records into a file of its own (its name is expanded again with
 * its pid) and holds none of its parent's records.
 */
typedef struct tally_config {
    const char *output_dir; /* TALLY_OUTPUT_DIR; default "." */
    const char *name;       /* TALLY_NAME; file name pattern, default "tally-{host}-{pid}";
                               {host} {pid} {rank} {time} are replaced */
    unsigned write;         /* TALLY_WRITE="tally,json.gz,summary"; default tally|summary */
    int skip_first;         /* TALLY_SCHEDULE, see above */
    int wait;               /* [closed] */
    int warmup;             /* [ready] */
    int active;             /* [record]; 0 with everything else 0 = record all */
    int repeat;             /* 0 = cycle forever */
    tally_trace_ready_fn on_trace_ready; /* NULL = tally_default_trace_ready */
    void *user;                          /* passed to on_trace_ready */
    size_t memory_cap;  /* TALLY_MEMORY_CAP="256M"; bytes of buffers in flight; default 256 MiB */
    size_t buffer_size; /* TALLY_BUFFER_SIZE; bytes per thread buffer; default 1 MiB */
    int timer_only;     /* TALLY_TIMER_ONLY=1: no tracing, only the benchmark summary */
    int quiet;          /* TALLY_QUIET=1: print nothing, not even the summary */
    const char *samples_unit; /* TALLY_SAMPLES_UNIT; unit of tally_step's count: "samples" */
    int flush_ms;             /* TALLY_FLUSH_MS; how often what every thread recorded goes to the
                                 file (the most a crash or kill -9 can lose); default 50, 1..60000 */
} tally_config;

/* Start the session. cfg may be NULL. Returns 0, or TALLY_ESTATE if one is running,
 * TALLY_ECONFIG on a malformed TALLY_* variable (the message is on stderr), TALLY_EIO when the
 * output directory cannot be written. Also starts the collectors: NVTX ranges of the program's
 * libraries are recorded, and CUDA activity when TALLY_GPU=1. */
TALLY_API int tally_start(const tally_config *cfg);

/* Stop the session: closes the open step and active window (the trace file is complete when it
 * returns), runs the trace-ready callback. Also runs at exit if the program did not call it.
 * Returns 0, or TALLY_EIO when a trace file could not be written whole (disk full, file-size
 * limit): one line on stderr names the file and the system error; the program goes on. */
TALLY_API int tally_stop(void);

/* Non-zero while a session runs (started and not stopped). */
TALLY_API int tally_running(void);

/* Close the current step (and open the next). samples: items processed in the step (batch
 * size, tokens) for the throughput figure; 0 when unknown (throughput then in steps/s). */
TALLY_API void tally_step(uint64_t samples);

/* Settings as parsed from the environment on top of cfg (or defaults); for tools and tests. */
TALLY_API int tally_config_from_env(tally_config *cfg);

/* Paddle's (start, end) form: record steps start..end-1. */
TALLY_API void tally_schedule_range(tally_config *cfg, int start, int end);

/* ---------------------------------------------------------------------------------------------
 * Ranges, marks, counters. The hot path.
 */

/* Opaque handle of a begin/end range. 0 is never a valid handle. */
typedef uint64_t tally_range;

TALLY_API void tally_push(const tally_srcloc *loc);
/* push with an argument string (input shapes, sizes); arg is copied. */
TALLY_API void tally_push_arg(const tally_srcloc *loc, const char *arg);
TALLY_API void tally_pop(void);
TALLY_API tally_range tally_begin(const tally_srcloc *loc);
TALLY_API void tally_end(tally_range r);
/* A range whose name is built at run time (copied). For bindings and collectors. */
TALLY_API void tally_push_dynamic(const char *name, uint32_t category, const char *arg);
/* Instant mark; loc->name is the mark's name. */
TALLY_API void tally_mark(const tally_srcloc *loc);
/* Counter sample: loc->name is the counter's name. */
TALLY_API void tally_counter(const tally_srcloc *loc, double value);
/* Name the calling thread in the trace (copied). */
TALLY_API void tally_thread_name(const char *name);

/* Internal: the hot path's gate, exported so that macros stay inline-cheap:
 * 0 no session, 1 recording, 2 session running with the active window closed, 3 timer-only. */
TALLY_API extern volatile int tally__recording;

/* ---------------------------------------------------------------------------------------------
 * Macros. TALLY_SCOPE: block form; TALLY_ZONE: scoped (until the end of the enclosing block).
 */
#define TALLY__CAT2(a, b) a##b
#define TALLY__CAT(a, b)  TALLY__CAT2(a, b)
#define TALLY__LOC(var, name_, cat_)                                                               \
    static const tally_srcloc var = {(name_), __FILE__, __func__, (uint32_t)__LINE__,              \
                                     (uint32_t)(cat_)}

#ifndef TALLY_DISABLE

/* Push/pop a named range around the following statement or block:
 *   TALLY_SCOPE("forward", TALLY_FORWARD) { ... }
 * Do not leave the block with break, goto or return: the range would stay open. */
#define TALLY_SCOPE(name, cat)                                                                     \
    for (int TALLY__CAT(tally__once_, __LINE__) = (tally_push(({                                   \
                                                       TALLY__LOC(tally__loc, name, cat);          \
                                                       &tally__loc;                                \
                                                   })),                                            \
                                                   1);                                             \
         TALLY__CAT(tally__once_, __LINE__); TALLY__CAT(tally__once_, __LINE__) = 0, tally_pop())

/* A range from here to the end of the enclosing block (needs GCC or Clang cleanup). */
#define TALLY_ZONE(name, cat)                                                                      \
    TALLY__LOC(TALLY__CAT(tally__loc_, __LINE__), name, cat);                                      \
    __attribute__((cleanup(tally__zone_end), unused)) int TALLY__CAT(tally__zone_, __LINE__) =     \
        (tally_push(&TALLY__CAT(tally__loc_, __LINE__)), 0)

#define TALLY_PUSH(name, cat)                                                                      \
    do {                                                                                           \
        TALLY__LOC(tally__loc, name, cat);                                                         \
        tally_push(&tally__loc);                                                                   \
    } while (0)
#define TALLY_PUSH_ARG(name, cat, arg)                                                             \
    do {                                                                                           \
        TALLY__LOC(tally__loc, name, cat);                                                         \
        tally_push_arg(&tally__loc, (arg));                                                        \
    } while (0)
#define TALLY_POP() tally_pop()
/* tally_range r = TALLY_BEGIN("load", TALLY_DATALOADER); ... tally_end(r); */
#define TALLY_BEGIN(name, cat)                                                                     \
    ({                                                                                             \
        TALLY__LOC(tally__loc, name, cat);                                                         \
        tally_begin(&tally__loc);                                                                  \
    })
#define TALLY_END(r) tally_end(r)
#define TALLY_MARK(name)                                                                           \
    do {                                                                                           \
        TALLY__LOC(tally__loc, name, TALLY_USER);                                                  \
        tally_mark(&tally__loc);                                                                   \
    } while (0)
#define TALLY_COUNTER(name, value)                                                                 \
    do {                                                                                           \
        TALLY__LOC(tally__loc, name, TALLY_USER);                                                  \
        tally_counter(&tally__loc, (double)(value));                                               \
    } while (0)
#define TALLY_STEP(samples)     tally_step(samples)
#define TALLY_THREAD_NAME(name) tally_thread_name(name)

static inline void tally__zone_end(int *unused)
{
    (void)unused;
    tally_pop();
}

#else /* TALLY_DISABLE: the same macros, expanding to nothing */

#define TALLY_SCOPE(name, cat)
#define TALLY_ZONE(name, cat)
#define TALLY_PUSH(name, cat)                                                                      \
    do {                                                                                           \
    } while (0)
#define TALLY_PUSH_ARG(name, cat, arg)                                                             \
    do {                                                                                           \
    } while (0)
#define TALLY_POP()                                                                                \
    do {                                                                                           \
    } while (0)
#define TALLY_BEGIN(name, cat) ((tally_range)0)
#define TALLY_END(r)           ((void)(r))
#define TALLY_MARK(name)                                                                           \
    do {                                                                                           \
    } while (0)
#define TALLY_COUNTER(name, value)                                                                 \
    do {                                                                                           \
    } while (0)
#define TALLY_STEP(samples)                                                                        \
    do {                                                                                           \
    } while (0)
#define TALLY_THREAD_NAME(name)                                                                    \
    do {                                                                                           \
    } while (0)

#endif /* TALLY_DISABLE */

/* ---------------------------------------------------------------------------------------------
 * Memory: allocations and frees, with what the memory holds and a dotted path naming it
 * ("blocks.0.mixer.Wqkv.weight"), from which `tally memory` builds the layout tree. Call them
 * where your program allocates (or from an allocator hook); PyTorch's allocators are recorded by
 * tally.profile(profile_memory=True) in Python.
 */
typedef enum tally_mem_category {
    TALLY_MEM_OTHER = 0, /* unknown */
    TALLY_MEM_PARAMETER,
    TALLY_MEM_GRADIENT,
    TALLY_MEM_OPTIMIZER_STATE,
    TALLY_MEM_ACTIVATION,
    TALLY_MEM_INPUT,
    TALLY_MEM_TEMPORARY,
    TALLY_MEM_CATEGORY_COUNT
} tally_mem_category;

/* bytes were allocated at ptr on device (-1: host memory), holding category; name (copied; NULL
 * for none) is a dotted path. An allocation at an address still allocated is counted (and
 * replaces it); one of more than INT64_MAX bytes (a negative size cast) is counted and ignored.
 * Costs about a range pair. */
TALLY_API void tally_alloc(const void *ptr, uint64_t bytes, int device, int category,
                           const char *name);
/* The allocation at ptr was freed (its size and device are the ones tally_alloc gave). A free
 * of an address tally_alloc never gave, or gave and saw freed, is counted, not recorded. */
TALLY_API void tally_free(const void *ptr);
/* Say what the block at ptr on device holds, from now until it is freed: a block tally_alloc
 * gave (its category and name change) or one another allocator made (PyTorch's tensors:
 * tally.memory.categorize labels parameters, gradients and optimizer state this way). bytes:
 * the block's size, so that a block allocated before recording began counts in its category
 * (0: unknown); name: a dotted path or NULL. Costs about a range pair. */
TALLY_API void tally_label_memory(const void *ptr, uint64_t bytes, int device, int category,
                                  const char *name);

/* ---------------------------------------------------------------------------------------------
 * Session statistics (for tests and tools): what was recorded and what was lost.
 */
typedef struct tally_stats {
    uint64_t records;         /* records stored in buffers */
    uint64_t dropped;         /* records dropped at the memory cap */
    uint64_t bad_pops;        /* pop with no open range on that thread */
    uint64_t bad_ends;        /* end with a foreign, stale or zero handle */
    uint64_t calls_outside;   /* calls before start or after stop */
    uint64_t unclosed;        /* ranges still open at stop (closed at stop time, flagged) */
    uint64_t steps;           /* steps closed */
    uint64_t buffers_written; /* buffers written to the .tally file */
    uint64_t lost;            /* records recorded but not written (the file could not be written) */
    uint64_t bad_frees;       /* tally_free of an address not allocated through tally_alloc */
    uint64_t reused_allocs;   /* tally_alloc at an address still allocated */
    uint64_t bad_sizes;       /* tally_alloc of more than INT64_MAX bytes (a negative size) */
} tally_stats;

TALLY_API void tally_get_stats(tally_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* TALLY_H */
