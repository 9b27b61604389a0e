/*
 * cupti_convert.c — CUPTI activity records to recorder calls. Pure: no CUPTI call, no global
 * state; everything it needs (clock offset, API names, demangler) comes in the conv.
 *
 * Records are read through the CUDA 13.0 structs (Kernel10, Memcpy6, MemcpyPtoP4, Memset4,
 * API, Memory4, Synchronization2, Overhead3, Device5, Context3). CUPTI writes its newest
 * layout and new versions only append fields, so reading through these typedefs is safe with a
 * newer libcupti; the fields we read exist since CUDA 12.x.
 *
 * Names follow Kineto's so that tally's traces and PyTorch's compare row by row: copies are
 * "Memcpy HtoD (Pageable -> Device)", memsets "Memset (Device)", syncs "Stream Sync", API calls
 * the CUPTI callback name without its "_vNNNN" suffix ("cudaLaunchKernel"), kernels demangled.
 * Kernel details go to args as Kineto's keys ("grid": [..], "block": [..], ...).
 */
#include "collect/cupti.h"

#include <stdio.h>
#include <string.h>

#include "record/format.h"

#ifdef TALLY_HAVE_CUPTI

#include <cupti.h>

static int64_t ts(const tally__cupti_conv *c, uint64_t t)
{
    return (int64_t)t + c->offset_ns;
}

static void learn_ctx(tally__cupti_conv *c, uint32_t ctx, uint32_t dev)
{
    if (ctx < TALLY__CUPTI_MAX_CTX)
        c->ctx_device[ctx] = dev + 1;
}

static int32_t ctx_dev(const tally__cupti_conv *c, uint32_t ctx)
{
    if (ctx < TALLY__CUPTI_MAX_CTX && c->ctx_device[ctx])
        return (int32_t)(c->ctx_device[ctx] - 1);
    return 0;
}

const char *tally__cupti_copy_kind_name(unsigned k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
        return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
        return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
        return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
        return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
        return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
        return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
        return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
        return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
        return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
        return "PtoP";
    default:
        return "Unknown";
    }
}

const char *tally__cupti_memory_kind_name(unsigned k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
        return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
        return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
        return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
        return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
        return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
        return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
        return "Managed Static";
    default:
        return "Unknown";
    }
}

static uint8_t copy_kind(unsigned k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
        return TALLY__COPY_HTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
        return TALLY__COPY_DTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
        return TALLY__COPY_DTOD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
        return TALLY__COPY_HTOH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
        return TALLY__COPY_PTOP;
    default:
        return TALLY__COPY_UNKNOWN;
    }
}

size_t tally__cupti_strip_version(const char *name)
{
    size_t n = strlen(name);
    /* trailing "_v" followed by digits only */
    size_t i = n;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    if (i < n && i >= 2 && name[i - 1] == 'v' && name[i - 2] == '_')
        return i - 2;
    return n;
}

static const char *sync_name(unsigned type)
{
    switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
        return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
        return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
        return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
        return "Context Sync";
    default:
        return "Unknown Sync";
    }
}

static const char *overhead_name(unsigned kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
        return "Driver Compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
        return "Buffer Flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
        return "Instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
        return "Resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
        return "Module Loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
        return "Lazy Function Loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
        return "Command Buffer Full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
        return "Activity Buffer Request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT:
        return "UVM Activity Init";
    default:
        return "Unknown Overhead";
    }
}

static uint32_t stream_or(uint32_t s, uint32_t dflt)
{
    return s == CUPTI_INVALID_STREAM_ID ? dflt : s;
}

static int conv_kernel(tally__cupti_conv *c, const CUpti_ActivityKernel10 *k)
{
    if (!k->start || !k->end || k->end < k->start) {
        c->skipped++;
        return 0;
    }
    learn_ctx(c, k->contextId, k->deviceId);
    char args[320];
    int n =
        snprintf(args, sizeof args,
                 "\"grid\": [%d, %d, %d], \"block\": [%d, %d, %d], "
                 "\"registers per thread\": %u, \"shared memory\": %d",
                 k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ,
                 (unsigned)k->registersPerThread, k->staticSharedMemory + k->dynamicSharedMemory);
    if (k->graphId && n > 0 && (size_t)n < sizeof args)
        snprintf(args + n, sizeof args - (size_t)n, ", \"graph id\": %u, \"graph node id\": %llu",
                 k->graphId, (unsigned long long)k->graphNodeId);
    const char *name = k->name ? k->name : "<unknown kernel>";
    if (k->name && c->demangle) {
        const char *d = c->demangle(k->name, c->user);
        if (d)
            name = d;
    }
    tally__device_event e = {
        .start = ts(c, k->start),
        .end = ts(c, k->end),
        .corr = k->correlationId,
        .stream = k->streamId,
        .device = (int32_t)k->deviceId,
        .cat = TALLY__CAT_KERNEL,
        .name = name,
        .args = args,
    };
    c->sink.device(&e, c->sink.user);
    return 1;
}

static int conv_memcpy(tally__cupti_conv *c, const CUpti_ActivityMemcpy6 *m)
{
    if (!m->start || m->end < m->start) {
        c->skipped++;
        return 0;
    }
    learn_ctx(c, m->contextId, m->deviceId);
    char name[96];
    snprintf(name, sizeof name, "Memcpy %s (%s -> %s)", tally__cupti_copy_kind_name(m->copyKind),
             tally__cupti_memory_kind_name(m->srcKind), tally__cupti_memory_kind_name(m->dstKind));
    uint16_t flags = 0;
    if (!(m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC))
        flags |= TALLY__DEV_SYNC_COPY;
    if (m->srcKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ||
        m->dstKind == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE)
        flags |= TALLY__DEV_PAGEABLE;
    tally__device_event e = {
        .start = ts(c, m->start),
        .end = ts(c, m->end),
        .corr = m->correlationId,
        .bytes = (int64_t)m->bytes,
        .stream = m->streamId,
        .device = (int32_t)m->deviceId,
        .cat = TALLY__CAT_MEMCPY,
        .copy_kind = copy_kind(m->copyKind),
        .flags = flags,
        .name = name,
    };
    c->sink.device(&e, c->sink.user);
    return 1;
}

static int conv_p2p(tally__cupti_conv *c, const CUpti_ActivityMemcpyPtoP4 *m)
{
    if (!m->start || m->end < m->start) {
        c->skipped++;
        return 0;
    }
    learn_ctx(c, m->contextId, m->deviceId);
    char name[96], args[96];
    snprintf(name, sizeof name, "Memcpy %s (%s -> %s)", tally__cupti_copy_kind_name(m->copyKind),
             tally__cupti_memory_kind_name(m->srcKind), tally__cupti_memory_kind_name(m->dstKind));
    snprintf(args, sizeof args, "\"src device\": %u, \"dst device\": %u", m->srcDeviceId,
             m->dstDeviceId);
    uint16_t flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 0 : TALLY__DEV_SYNC_COPY;
    tally__device_event e = {
        .start = ts(c, m->start),
        .end = ts(c, m->end),
        .corr = m->correlationId,
        .bytes = (int64_t)m->bytes,
        .stream = m->streamId,
        .device = (int32_t)m->deviceId,
        .cat = TALLY__CAT_MEMCPY,
        .copy_kind = TALLY__COPY_PTOP,
        .flags = flags,
        .name = name,
        .args = args,
    };
    c->sink.device(&e, c->sink.user);
    return 1;
}

static int conv_memset(tally__cupti_conv *c, const CUpti_ActivityMemset4 *m)
{
    if (!m->start || m->end < m->start) {
        c->skipped++;
        return 0;
    }
    learn_ctx(c, m->contextId, m->deviceId);
    char name[64];
    snprintf(name, sizeof name, "Memset (%s)", tally__cupti_memory_kind_name(m->memoryKind));
    tally__device_event e = {
        .start = ts(c, m->start),
        .end = ts(c, m->end),
        .corr = m->correlationId,
        .bytes = (int64_t)m->bytes,
        .stream = m->streamId,
        .device = (int32_t)m->deviceId,
        .cat = TALLY__CAT_MEMSET,
        .flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? 0 : TALLY__DEV_SYNC_COPY,
        .name = name,
    };
    c->sink.device(&e, c->sink.user);
    return 1;
}

int tally__cupti_api_kept(int kind, const char *name)
{
    static const char *const driver_keep[] = {"cuLaunch",
                                              "cuGraphLaunch",
                                              "cuMemcpy",
                                              "cuMemset",
                                              "cuMemAlloc",
                                              "cuMemFree",
                                              "cuMemCreate",
                                              "cuMemMap",
                                              "cuMemUnmap",
                                              "cuMemRelease",
                                              "cuStreamSynchronize",
                                              "cuCtxSynchronize",
                                              "cuEventSynchronize",
                                              "cuStreamWaitEvent",
                                              "cuMemPrefetch",
                                              "cuMemHostAlloc",
                                              "cuMemHostRegister",
                                              "cuMemcpyPeer"};
    static const char *const runtime_drop[] = {
        "cudaGetDevice",         "cudaSetDevice",           "cudaGetLastError",
        "cudaPeekAtLastError",   "cudaGetDeviceCount",      "cudaDeviceGetAttribute",
        "cudaStreamIsCapturing", "cudaGetDeviceProperties", "cudaPointerGetAttributes",
        "cudaFuncGetAttributes", "cudaDriverGetVersion",    "cudaRuntimeGetVersion"};
    if (!name)
        return 1;
    if (kind == CUPTI_ACTIVITY_KIND_DRIVER) {
        for (size_t i = 0; i < sizeof driver_keep / sizeof driver_keep[0]; i++)
            if (!strncmp(name, driver_keep[i], strlen(driver_keep[i])))
                return 1;
        return 0;
    }
    for (size_t i = 0; i < sizeof runtime_drop / sizeof runtime_drop[0]; i++) {
        size_t n = strlen(runtime_drop[i]);
        if (!strncmp(name, runtime_drop[i], n) && (name[n] == 0 || name[n] == '_'))
            return 0;
    }
    return 1;
}

static int conv_api(tally__cupti_conv *c, const CUpti_ActivityAPI *a)
{
    if (!a->start || a->end < a->start) {
        c->skipped++;
        return 0;
    }
    int kind = (int)a->kind;
    const char *nm = c->api_name ? c->api_name(kind, a->cbid, c->user) : NULL;
    if (!c->all_api && !tally__cupti_api_kept(kind, nm)) {
        c->filtered++;
        return 0;
    }
    char buf[64];
    if (!nm) {
        snprintf(buf, sizeof buf, "%s#%u",
                 kind == CUPTI_ACTIVITY_KIND_DRIVER ? "cuda_driver" : "cuda_runtime", a->cbid);
        nm = buf;
    }
    tally__api_event e = {
        .start = ts(c, a->start),
        .end = ts(c, a->end),
        .corr = a->correlationId,
        .tid = a->threadId,
        .cat = kind == CUPTI_ACTIVITY_KIND_DRIVER ? TALLY__CAT_DRIVER : TALLY__CAT_RUNTIME,
        .name = nm,
    };
    c->sink.api(&e, c->sink.user);
    return 1;
}

static int conv_memory(tally__cupti_conv *c, const CUpti_ActivityMemory4 *m)
{
    int alloc = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
    int release = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    if (!m->timestamp || (!alloc && !release)) {
        c->skipped++;
        return 0;
    }
    learn_ctx(c, m->contextId, m->deviceId);
    char args[64];
    snprintf(args, sizeof args, "\"address\": %llu", (unsigned long long)m->address);
    int device_mem = m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE ||
                     m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC;
    tally__device_event e = {
        .start = ts(c, m->timestamp),
        .end = ts(c, m->timestamp),
        .corr = m->correlationId,
        .bytes = alloc ? (int64_t)m->bytes : -(int64_t)m->bytes,
        .stream = stream_or(m->streamId, 0),
        .device = (int32_t)m->deviceId,
        .cat = TALLY__CAT_MEMORY,
        .flags = (uint16_t)(TALLY__DEV_INSTANT | (device_mem ? TALLY__DEV_MEM_DEVICE : 0)),
        .name = alloc ? "[memory] alloc" : "[memory] free",
        .args = args,
    };
    c->sink.device(&e, c->sink.user);
    return 1;
}

static int conv_sync(tally__cupti_conv *c, const CUpti_ActivitySynchronization2 *s)
{
    if (!s->start || s->end < s->start) {
        c->skipped++;
        return 0;
    }
    tally__device_event e = {
        .start = ts(c, s->start),
        .end = ts(c, s->end),
        .corr = s->correlationId,
        .stream = s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s->streamId,
        .device = ctx_dev(c, s->contextId),
        .cat = TALLY__CAT_SYNC,
        .name = sync_name(s->type),
    };
    c->sink.device(&e, c->sink.user);
    return 1;
}

static int conv_overhead(tally__cupti_conv *c, const CUpti_ActivityOverhead3 *o)
{
    if (!o->start || o->end < o->start) {
        c->skipped++;
        return 0;
    }
    const char *name = overhead_name(o->overheadKind);
    if (o->objectKind == CUPTI_ACTIVITY_OBJECT_DEVICE ||
        o->objectKind == CUPTI_ACTIVITY_OBJECT_CONTEXT ||
        o->objectKind == CUPTI_ACTIVITY_OBJECT_STREAM) {
        tally__device_event e = {
            .start = ts(c, o->start),
            .end = ts(c, o->end),
            .corr = o->correlationId,
            .stream = o->objectKind == CUPTI_ACTIVITY_OBJECT_STREAM ? o->objectId.dcs.streamId : 0,
            .device = (int32_t)o->objectId.dcs.deviceId,
            .cat = TALLY__CAT_OVERHEAD,
            .name = name,
        };
        c->sink.device(&e, c->sink.user);
    } else {
        /* thread or process: on that host thread (a process's main thread has tid == pid) */
        tally__api_event e = {
            .start = ts(c, o->start),
            .end = ts(c, o->end),
            .corr = o->correlationId,
            .tid = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId
                                                                 : o->objectId.pt.processId,
            .cat = TALLY__CAT_OVERHEAD,
            .name = name,
        };
        c->sink.api(&e, c->sink.user);
    }
    return 1;
}

static int conv_device(tally__cupti_conv *c, const CUpti_ActivityDevice5 *d)
{
    if (c->sink.props)
        c->sink.props((int32_t)d->id, d->name ? d->name : "", (int64_t)d->globalMemorySize,
                      (int32_t)d->numMultiprocessors, (int32_t)d->computeCapabilityMajor,
                      (int32_t)d->computeCapabilityMinor, c->sink.user);
    return 1;
}

int tally__cupti_convert(tally__cupti_conv *c, const void *record)
{
    const CUpti_Activity *r = record;
    int done = 0;
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        done = conv_kernel(c, record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        done = conv_memcpy(c, record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
        done = conv_p2p(c, record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        done = conv_memset(c, record);
        break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
        done = conv_api(c, record);
        break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        done = conv_memory(c, record);
        break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        done = conv_sync(c, record);
        break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
        done = conv_overhead(c, record);
        break;
    case CUPTI_ACTIVITY_KIND_DEVICE:
        done = conv_device(c, record);
        break;
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
        const CUpti_ActivityContext3 *x = record;
        learn_ctx(c, x->contextId, x->deviceId);
        break;
    }
    default:
        c->ignored++;
        return 0;
    }
    c->converted += done;
    return done;
}

#else /* no CUPTI headers */

int tally__cupti_convert(tally__cupti_conv *c, const void *record)
{
    (void)record;
    c->ignored++;
    return 0;
}
const char *tally__cupti_copy_kind_name(unsigned k)
{
    (void)k;
    return "Unknown";
}
const char *tally__cupti_memory_kind_name(unsigned k)
{
    (void)k;
    return "Unknown";
}
size_t tally__cupti_strip_version(const char *name)
{
    return strlen(name);
}
int tally__cupti_api_kept(int kind, const char *name)
{
    (void)kind;
    (void)name;
    return 1;
}

#endif
