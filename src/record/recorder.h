/*
 * recorder.h — the recorder's internal interface for the collectors (src/collect/: NVTX
 * injection, CUPTI) and for the library's own glue. Not public.
 *
 * Everything here follows the hot-path rules of tally.h: no lock, no allocation, no system call
 * per event on the recording path; never blocks; keeps errno. Strings passed by pointer+length
 * are copied (collectors' messages are temporary).
 */
#ifndef TALLY_RECORD_RECORDER_H
#define TALLY_RECORD_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include <tally.h>

/* Current time on tally's clock, in ns (the clock of every timestamp in a .tally file). */
int64_t tally__now_ns(void);

/* Non-zero while events are being recorded (inside an active window of a running session). */
int tally__is_recording(void);

/* Start a session from inside the library (injection): like tally_start, but marks the session
 * as owned by the injected collector. Returns 0 or a tally_err code. */
int tally__start_injected(void);

/* Host ranges with names copied (NVTX messages). cat is a tally_category or one of the
 * TALLY__CAT_* values of format.h. */
void tally__push_copy(const char *name, size_t len, uint32_t cat, const char *arg, size_t arg_len);
void tally__pop(void);
/* A push whose argument a caller identifies by its own 64-bit key (a hash of what the string
 * would say, so that it is built once): tally__push_argref records the push with a reference to
 * the argument when this thread already wrote it into the open window's file, and returns 1
 * (also when nothing is to be recorded); it returns 0, recording nothing, when the file does not
 * hold it yet: then tally__push_argkey with the string records the push and defines key. */
int tally__push_argref(const tally_srcloc *loc, uint64_t key);
void tally__push_argkey(const tally_srcloc *loc, uint64_t key, const char *arg, size_t len);
tally_range tally__begin_copy(const char *name, size_t len, uint32_t cat);
void tally__mark_copy(const char *name, size_t len);
/* An NVTX step range (TALLY_STEP_RANGE) begins: the session's first step, whose begin waited
 * for it, begins here (so step 0 holds no start-up time before the program's first step). */
void tally__step_range_begin(void);
/* Name an OS thread by tid (NVTX's nameOsThread). */
void tally__name_thread(int64_t tid, const char *name);

/* Work on a device, from CUPTI's activity buffers (any thread, any order). */
typedef struct tally__device_event {
    int64_t start, end; /* ns, tally's clock */
    int64_t corr;       /* correlation id of the API call that launched it; 0 = none */
    int64_t bytes;      /* copies and memsets */
    int64_t stream;
    int32_t device;
    uint32_t cat;      /* TALLY__CAT_KERNEL, _MEMCPY, _MEMSET, ... (format.h) */
    uint8_t copy_kind; /* for copies: same numbering as tl_memcpy_kind */
    uint16_t flags;    /* TL_EV_* flags meaning (sync copy, pageable) */
    const char *name;  /* copied */
    const char *args;  /* optional "grid [..] block [..] regs .." string, copied; may be NULL */
} tally__device_event;
void tally__record_device(const tally__device_event *e);

/* A runtime or driver API call (CUPTI), on the OS thread tid. */
typedef struct tally__api_event {
    int64_t start, end;
    int64_t corr;
    int64_t tid;
    uint32_t cat;     /* TALLY__CAT_RUNTIME or TALLY__CAT_DRIVER */
    const char *name; /* copied */
} tally__api_event;
void tally__record_api(const tally__api_event *e);

/* An allocation (bytes > 0) or a free (bytes < 0) of memory on the calling thread, as an
 * allocator reports it (PyTorch's caching allocators through c10's memory-reporting hook):
 * device -1 for host memory; totals after the event, -1 when unknown. */
void tally__record_memory(uint64_t ptr, int64_t bytes, int32_t device, uint32_t category,
                          int64_t total_allocated, int64_t total_reserved);

/* The same with a name (a dotted path; copied) and category flags (TALLY__MEM_LABEL ...). */
void tally__record_memory_named(uint64_t ptr, int64_t bytes, int32_t device, uint32_t category,
                                const char *name, size_t name_len);

/* A device's properties, once per device. */
void tally__record_device_props(int32_t id, const char *name, int64_t memory, int32_t sm_count,
                                int32_t cc_major, int32_t cc_minor);

/* Flush every thread's buffer to the file now (collectors call it at exit). */
void tally__flush_all(void);

/* The other direction: the two calls the session makes into the collectors (defined in
 * src/collect/inject.c). tally_start of a program's own session calls tally__collect_start
 * (NVTX of other libraries reaches us, TALLY_GPU=1 starts CUPTI); tally_stop and every window
 * close call tally__collect_stop first, so that device work recorded so far is in the window. */
void tally__collect_start(void);
void tally__collect_stop(void);

#endif
