/*
 * capi.h — what the core extension (tally._tally, C) hands to the PyTorch shim (tally._torch,
 * C++) through a PyCapsule: the recorder's entry points the shim calls from PyTorch's
 * RecordFunction and memory-reporting hooks. The shim imports the capsule at its own import and
 * refuses to load when the version or the size does not match (one line, ImportError).
 *
 * One recorder per process: the shim records into the core extension's session, never into a
 * copy of its own.
 */
#ifndef TALLY_PYTHON_CAPI_H
#define TALLY_PYTHON_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include <tally.h>

#define TALLY_CAPI_CAPSULE "tally._tally._C_API"
#define TALLY_CAPI_VERSION 1

typedef struct tally_capi {
    uint32_t version; /* TALLY_CAPI_VERSION */
    uint32_t size;    /* sizeof(tally_capi) */
    /* the hot-path gate (tally__recording): 1 while recording, so that a hook can return at
     * once outside the active window */
    volatile int *gate;
    /* a range whose call site lives as long as the process (operator names from PyTorch's
     * schemas are), with or without an argument string (input shapes; copied) */
    void (*push)(const tally_srcloc *loc);
    void (*push_arg)(const tally_srcloc *loc, const char *arg);
    /* a range whose name is copied (names that do not outlive the call) */
    void (*push_copy)(const char *name, size_t len, uint32_t category, const char *arg,
                      size_t arg_len);
    void (*pop)(void);
    /* an allocation (bytes > 0) or free (bytes < 0) on the calling thread; device -1 = host;
     * category 0 = unknown; totals -1 when unknown */
    void (*memory)(uint64_t ptr, int64_t bytes, int32_t device, uint32_t category,
                   int64_t total_allocated, int64_t total_reserved);
    /* name the calling thread in the trace (copied) */
    void (*thread_name)(const char *name);
    /* arguments named by the caller's own key (a hash of what the string would say, so that it
     * is built only once per file): push_argref(loc, key) records the push with a reference and
     * returns 1 when this thread already wrote that argument into the open window's file (or
     * nothing is to be recorded); it returns 0, recording nothing, when the file does not hold
     * it yet, and push_argkey(loc, key, string, length) then records the push and defines key
     * (recorder.h: tally__push_argref, tally__push_argkey) */
    int (*push_argref)(const tally_srcloc *loc, uint64_t key);
    void (*push_argkey)(const tally_srcloc *loc, uint64_t key, const char *arg, size_t len);
} tally_capi;

#endif
