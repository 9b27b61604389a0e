/*
 * cupti.h — the CUPTI collector's record conversion, separated from the CUPTI plumbing so that
 * tests feed it synthetic records built from CUDA 13's structs (tests/unit/test_cupti_*.c).
 *
 * tally__cupti_convert() reads one activity record (any CUpti_Activity* the collector enables)
 * and makes the matching recorder calls through a sink. It does not call CUPTI: names of API
 * calls and demangled kernel names come through the conv's callbacks.
 */
#ifndef TALLY_COLLECT_CUPTI_H
#define TALLY_COLLECT_CUPTI_H

#include <stdint.h>

#include "record/recorder.h"

/* Where converted records go: the recorder in production, arrays in tests. */
typedef struct tally__cupti_sink {
    void (*device)(const tally__device_event *e, void *user);
    void (*api)(const tally__api_event *e, void *user);
    void (*props)(int32_t id, const char *name, int64_t memory, int32_t sm_count, int32_t cc_major,
                  int32_t cc_minor, void *user);
    void *user;
} tally__cupti_sink;

#define TALLY__CUPTI_MAX_CTX 256

typedef struct tally__cupti_conv {
    tally__cupti_sink sink;
    /* Added to every CUPTI timestamp: 0 when CUPTI runs on tally's clock (timestamp callback
     * registered), else (tally clock - CUPTI clock) sampled at start. */
    int64_t offset_ns;
    /* API name for (domain: 4 = driver / 5 = runtime activity kind, cbid), without the "_vNNNN"
     * suffix; NULL = unknown (the conversion then writes "cuda_runtime#cbid"). */
    const char *(*api_name)(int kind, uint32_t cbid, void *user);
    /* Demangled kernel name for a mangled one; NULL = keep the mangled name. */
    const char *(*demangle)(const char *mangled, void *user);
    void *user;
    /* Keep every driver API record; by default only the driver calls that launch, copy, set,
     * allocate, free or synchronize are kept (as Kineto does): libraries make thousands of
     * attribute queries that would bury them. Runtime calls that only query state
     * (cudaGetDevice, cudaGetLastError, ...) are dropped unless this is set. */
    int all_api;
    /* contextId -> deviceId + 1 (0 = unknown), learned from kernel, copy and context records. */
    uint32_t ctx_device[TALLY__CUPTI_MAX_CTX];
    /* Counters. */
    uint64_t converted; /* records turned into recorder calls */
    uint64_t skipped;   /* records without timestamps (incomplete) */
    uint64_t ignored;   /* kinds we do not convert */
    uint64_t filtered;  /* API records dropped as noise (see all_api) */
} tally__cupti_conv;

/* Convert one record (const CUpti_Activity *). Returns 1 when something was recorded, 0 when
 * the record was skipped or ignored. Thread-compatible: one conv per calling thread, or a lock. */
int tally__cupti_convert(tally__cupti_conv *c, const void *record);

/* Copy-kind / memory-kind names as Kineto writes them ("HtoD", "Pageable"). */
const char *tally__cupti_copy_kind_name(unsigned cupti_copy_kind);
const char *tally__cupti_memory_kind_name(unsigned cupti_memory_kind);

/* Non-zero when an API call of that name is kept by default (kind: 4 driver, 5 runtime). */
int tally__cupti_api_kept(int kind, const char *name);

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (length of the name without the suffix). */
size_t tally__cupti_strip_version(const char *name);

#endif
