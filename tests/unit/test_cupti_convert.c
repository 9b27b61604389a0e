/*
 * test_cupti_convert.c — CUPTI activity records (CUDA 13.0 structs, built by hand) through the
 * conversion the collector's bufferCompleted uses; every field of the recorder calls checked
 * against the values put into the records.
 */
#include "collect/cupti.h"
#include "testlib.h"

#include <stdlib.h>
#include <string.h>

#include "trace/model.h"

#if defined(TALLY_HAVE_CUPTI)

#include <cupti.h>

/* ---- a capturing sink ---- */

#define MAXE 32
typedef struct captured {
    tally__device_event dev[MAXE];
    char dev_name[MAXE][128];
    char dev_args[MAXE][256];
    int ndev;
    tally__api_event api[MAXE];
    char api_name[MAXE][64];
    int napi;
    int32_t prop_id;
    char prop_name[64];
    int64_t prop_mem;
    int32_t prop_sm, prop_maj, prop_min;
    int nprops;
} captured;

static void cap_device(const tally__device_event *e, void *user)
{
    captured *c = user;
    if (c->ndev >= MAXE)
        return;
    c->dev[c->ndev] = *e;
    snprintf(c->dev_name[c->ndev], sizeof c->dev_name[0], "%s", e->name ? e->name : "");
    snprintf(c->dev_args[c->ndev], sizeof c->dev_args[0], "%s", e->args ? e->args : "");
    c->ndev++;
}
static void cap_api(const tally__api_event *e, void *user)
{
    captured *c = user;
    if (c->napi >= MAXE)
        return;
    c->api[c->napi] = *e;
    snprintf(c->api_name[c->napi], sizeof c->api_name[0], "%s", e->name ? e->name : "");
    c->napi++;
}
static void cap_props(int32_t id, const char *name, int64_t mem, int32_t sm, int32_t maj,
                      int32_t min, void *user)
{
    captured *c = user;
    c->prop_id = id;
    snprintf(c->prop_name, sizeof c->prop_name, "%s", name);
    c->prop_mem = mem;
    c->prop_sm = sm;
    c->prop_maj = maj;
    c->prop_min = min;
    c->nprops++;
}

static const char *names(int kind, uint32_t cbid, void *user)
{
    (void)user;
    if (kind == CUPTI_ACTIVITY_KIND_RUNTIME && cbid == 211)
        return "cudaLaunchKernel";
    if (kind == CUPTI_ACTIVITY_KIND_DRIVER && cbid == 307)
        return "cuLaunchKernel";
    if (kind == CUPTI_ACTIVITY_KIND_DRIVER && cbid == 8)
        return "cuDeviceGetAttribute";
    if (kind == CUPTI_ACTIVITY_KIND_RUNTIME && cbid == 17)
        return "cudaGetDevice";
    return NULL;
}

static const char *demangle(const char *m, void *user)
{
    (void)user;
    return strcmp(m, "_Z6scaleiPf") == 0 ? "scale(int, float*)" : NULL;
}

static void setup(tally__cupti_conv *conv, captured *cap, int64_t offset)
{
    memset(conv, 0, sizeof *conv);
    memset(cap, 0, sizeof *cap);
    conv->sink.device = cap_device;
    conv->sink.api = cap_api;
    conv->sink.props = cap_props;
    conv->sink.user = cap;
    conv->api_name = names;
    conv->demangle = demangle;
    conv->offset_ns = offset;
}

static CUpti_ActivityKernel10 kernel(uint64_t start, uint64_t end, uint32_t corr)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = start;
    k.end = end;
    k.completed = end;
    k.deviceId = 1;
    k.contextId = 5;
    k.streamId = 7;
    k.gridX = 4;
    k.gridY = 2;
    k.gridZ = 1;
    k.blockX = 256;
    k.blockY = 1;
    k.blockZ = 1;
    k.registersPerThread = 32;
    k.staticSharedMemory = 1024;
    k.dynamicSharedMemory = 2048;
    k.correlationId = corr;
    k.name = "_Z6scaleiPf";
    return k;
}

TEST(kernel_record)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    CUpti_ActivityKernel10 k = kernel(1000, 3500, 42);
    CHECK_EQ_INT(tally__cupti_convert(&conv, &k), 1);
    CHECK_EQ_INT(cap.ndev, 1);
    CHECK_EQ_INT(cap.dev[0].start, 1000);
    CHECK_EQ_INT(cap.dev[0].end, 3500);
    CHECK_EQ_INT(cap.dev[0].corr, 42);
    CHECK_EQ_INT(cap.dev[0].stream, 7);
    CHECK_EQ_INT(cap.dev[0].device, 1);
    CHECK_EQ_INT(cap.dev[0].cat, TL_CAT_KERNEL);
    CHECK_STR(cap.dev_name[0], "scale(int, float*)");
    CHECK_STR(cap.dev_args[0], "\"grid\": [4, 2, 1], \"block\": [256, 1, 1], "
                               "\"registers per thread\": 32, \"shared memory\": 3072");
    CHECK_EQ_INT(conv.converted, 1);
}

TEST(kernel_mangled_name_kept_without_demangler)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    conv.demangle = NULL;
    CUpti_ActivityKernel10 k = kernel(10, 20, 1);
    tally__cupti_convert(&conv, &k);
    CHECK_STR(cap.dev_name[0], "_Z6scaleiPf");
}

TEST(kernel_without_timestamps_is_skipped)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    CUpti_ActivityKernel10 k = kernel(0, 0, 3); /* incomplete (forced flush) */
    CHECK_EQ_INT(tally__cupti_convert(&conv, &k), 0);
    CUpti_ActivityKernel10 k2 = kernel(500, 400, 3); /* end before start */
    CHECK_EQ_INT(tally__cupti_convert(&conv, &k2), 0);
    CHECK_EQ_INT(cap.ndev, 0);
    CHECK_EQ_INT(conv.skipped, 2);
}

TEST(clock_offset_applied)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, -900);
    CUpti_ActivityKernel10 k = kernel(1000, 1600, 9);
    tally__cupti_convert(&conv, &k);
    CHECK_EQ_INT(cap.dev[0].start, 100);
    CHECK_EQ_INT(cap.dev[0].end, 700);
}

TEST(graph_kernels_share_the_launch_correlation)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    for (int i = 0; i < 3; i++) {
        CUpti_ActivityKernel10 k = kernel(100 + 10 * i, 105 + 10 * i, 77);
        k.graphId = 4;
        k.graphNodeId = 100 + (uint64_t)i;
        tally__cupti_convert(&conv, &k);
    }
    CHECK_EQ_INT(cap.ndev, 3);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(cap.dev[i].corr, 77);
    CHECK(strstr(cap.dev_args[2], "\"graph id\": 4, \"graph node id\": 102") != NULL);
}

TEST(memcpy_records)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.flags = 0; /* synchronous */
    m.bytes = 1 << 20;
    m.start = 2000;
    m.end = 2600;
    m.deviceId = 0;
    m.streamId = 13;
    m.correlationId = 50;
    CHECK_EQ_INT(tally__cupti_convert(&conv, &m), 1);
    CHECK_STR(cap.dev_name[0], "Memcpy HtoD (Pageable -> Device)");
    CHECK_EQ_INT(cap.dev[0].cat, TL_CAT_MEMCPY);
    CHECK_EQ_INT(cap.dev[0].copy_kind, TL_COPY_HTOD);
    CHECK_EQ_INT(cap.dev[0].flags, TL_EV_SYNC_COPY | TL_EV_PAGEABLE);
    CHECK_EQ_INT(cap.dev[0].bytes, 1 << 20);
    CHECK_EQ_INT(cap.dev[0].corr, 50);
    CHECK_EQ_INT(cap.dev[0].stream, 13);

    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
    tally__cupti_convert(&conv, &m);
    CHECK_STR(cap.dev_name[1], "Memcpy DtoH (Device -> Pinned)");
    CHECK_EQ_INT(cap.dev[1].copy_kind, TL_COPY_DTOH);
    CHECK_EQ_INT(cap.dev[1].flags, 0);

    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    m.srcKind = m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    tally__cupti_convert(&conv, &m);
    CHECK_STR(cap.dev_name[2], "Memcpy DtoD (Device -> Device)");
    CHECK_EQ_INT(cap.dev[2].copy_kind, TL_COPY_DTOD);
}

TEST(peer_to_peer_copy)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    CUpti_ActivityMemcpyPtoP4 p;
    memset(&p, 0, sizeof p);
    p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    p.srcKind = p.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    p.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
    p.bytes = 4096;
    p.start = 10;
    p.end = 90;
    p.deviceId = 2;
    p.srcDeviceId = 2;
    p.dstDeviceId = 3;
    p.streamId = 21;
    p.correlationId = 8;
    CHECK_EQ_INT(tally__cupti_convert(&conv, &p), 1);
    CHECK_STR(cap.dev_name[0], "Memcpy PtoP (Device -> Device)");
    CHECK_EQ_INT(cap.dev[0].copy_kind, TL_COPY_PTOP);
    CHECK_EQ_INT(cap.dev[0].device, 2);
    CHECK_EQ_INT(cap.dev[0].bytes, 4096);
    CHECK_STR(cap.dev_args[0], "\"src device\": 2, \"dst device\": 3");
}

TEST(memset_record)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    CUpti_ActivityMemset4 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.value = 0;
    s.bytes = 512;
    s.start = 300;
    s.end = 310;
    s.streamId = 7;
    s.correlationId = 61;
    s.flags = CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC;
    s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    CHECK_EQ_INT(tally__cupti_convert(&conv, &s), 1);
    CHECK_STR(cap.dev_name[0], "Memset (Device)");
    CHECK_EQ_INT(cap.dev[0].cat, TL_CAT_MEMSET);
    CHECK_EQ_INT(cap.dev[0].bytes, 512);
    CHECK_EQ_INT(cap.dev[0].flags, 0);
    CHECK_EQ_INT(cap.dev[0].end - cap.dev[0].start, 10);
}

TEST(api_records)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 5);
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = 211;
    a.start = 100;
    a.end = 140;
    a.processId = 1234;
    a.threadId = 1240;
    a.correlationId = 42;
    CHECK_EQ_INT(tally__cupti_convert(&conv, &a), 1);
    CHECK_STR(cap.api_name[0], "cudaLaunchKernel");
    CHECK_EQ_INT(cap.api[0].cat, TL_CAT_RUNTIME);
    CHECK_EQ_INT(cap.api[0].tid, 1240);
    CHECK_EQ_INT(cap.api[0].corr, 42);
    CHECK_EQ_INT(cap.api[0].start, 105);
    CHECK_EQ_INT(cap.api[0].end, 145);

    a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    a.cbid = 307;
    tally__cupti_convert(&conv, &a);
    CHECK_STR(cap.api_name[1], "cuLaunchKernel");
    CHECK_EQ_INT(cap.api[1].cat, TL_CAT_DRIVER);

    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = 999; /* no name known */
    tally__cupti_convert(&conv, &a);
    CHECK_STR(cap.api_name[2], "cuda_runtime#999");
}

TEST(api_noise_filtered_unless_asked)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.start = 100;
    a.end = 110;
    a.threadId = 9;
    a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    a.cbid = 8; /* cuDeviceGetAttribute: a query, dropped */
    CHECK_EQ_INT(tally__cupti_convert(&conv, &a), 0);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = 17; /* cudaGetDevice: dropped */
    CHECK_EQ_INT(tally__cupti_convert(&conv, &a), 0);
    CHECK_EQ_INT(conv.filtered, 2);
    CHECK_EQ_INT(cap.napi, 0);
    conv.all_api = 1;
    CHECK_EQ_INT(tally__cupti_convert(&conv, &a), 1);
    CHECK_STR(cap.api_name[0], "cudaGetDevice");
    CHECK_EQ_INT(tally__cupti_api_kept(CUPTI_ACTIVITY_KIND_DRIVER, "cuLaunchKernelEx"), 1);
    CHECK_EQ_INT(tally__cupti_api_kept(CUPTI_ACTIVITY_KIND_DRIVER, "cuMemcpyHtoDAsync"), 1);
    CHECK_EQ_INT(tally__cupti_api_kept(CUPTI_ACTIVITY_KIND_RUNTIME, "cudaGetDeviceProperties"), 0);
    CHECK_EQ_INT(tally__cupti_api_kept(CUPTI_ACTIVITY_KIND_RUNTIME, "cudaGetDeviceFlags"), 1);
    CHECK_EQ_INT(tally__cupti_api_kept(CUPTI_ACTIVITY_KIND_RUNTIME, "cudaLaunchKernel"), 1);
}

TEST(api_to_kernel_correlation_survives)
{
    /* The launch and its kernel carry the same correlation id, whatever their order. */
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    CUpti_ActivityKernel10 k = kernel(1000, 2000, 314);
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = 211;
    a.start = 900;
    a.end = 950;
    a.threadId = 77;
    a.correlationId = 314;
    tally__cupti_convert(&conv, &k);
    tally__cupti_convert(&conv, &a);
    CHECK_EQ_INT(cap.dev[0].corr, cap.api[0].corr);
    CHECK_EQ_INT(cap.api[0].corr, 314);
}

TEST(memory_alloc_and_free)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    CUpti_ActivityMemory4 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.address = 0x7f0000000000ull;
    m.bytes = 1 << 24;
    m.timestamp = 5000;
    m.deviceId = 0;
    m.streamId = CUPTI_INVALID_STREAM_ID;
    m.correlationId = 3;
    CHECK_EQ_INT(tally__cupti_convert(&conv, &m), 1);
    m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    m.timestamp = 9000;
    CHECK_EQ_INT(tally__cupti_convert(&conv, &m), 1);
    CHECK_EQ_INT(cap.ndev, 2);
    CHECK_EQ_INT(cap.dev[0].cat, TL_CAT_MEMORY);
    CHECK_EQ_INT(cap.dev[0].bytes, 1 << 24);
    CHECK_EQ_INT(cap.dev[1].bytes, -(1 << 24));
    CHECK_EQ_INT(cap.dev[0].start, 5000);
    CHECK_EQ_INT(cap.dev[0].end, 5000);
    CHECK_EQ_INT(cap.dev[0].stream, 0);
    CHECK(cap.dev[0].flags & TL_EV_MEM_DEVICE);
    CHECK_EQ_INT(cap.dev[0].corr, 3);
    CHECK_STR(cap.dev_args[0], "\"address\": 139637976727552"); /* 0x7f0000000000 */
    CHECK_STR(cap.dev_name[1], "[memory] free");
    /* neither an allocation nor a release: skipped */
    m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID;
    CHECK_EQ_INT(tally__cupti_convert(&conv, &m), 0);
    CHECK_EQ_INT(cap.ndev, 2);
}

TEST(sync_record_gets_device_from_context)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    CUpti_ActivityKernel10 k = kernel(1, 2, 1); /* context 5 on device 1 */
    tally__cupti_convert(&conv, &k);
    CUpti_ActivitySynchronization2 s;
    memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    s.start = 100;
    s.end = 400;
    s.contextId = 5;
    s.streamId = 7;
    s.correlationId = 90;
    CHECK_EQ_INT(tally__cupti_convert(&conv, &s), 1);
    CHECK_STR(cap.dev_name[1], "Stream Sync");
    CHECK_EQ_INT(cap.dev[1].cat, TL_CAT_SYNC);
    CHECK_EQ_INT(cap.dev[1].device, 1);
    CHECK_EQ_INT(cap.dev[1].stream, 7);
    CHECK_EQ_INT(cap.dev[1].corr, 90);
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
    s.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    tally__cupti_convert(&conv, &s);
    CHECK_STR(cap.dev_name[2], "Context Sync");
    CHECK_EQ_INT(cap.dev[2].stream, 0);
}

TEST(overhead_records)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    CUpti_ActivityOverhead3 o;
    memset(&o, 0, sizeof o);
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    o.objectId.pt.processId = 10;
    o.objectId.pt.threadId = 11;
    o.start = 50;
    o.end = 80;
    CHECK_EQ_INT(tally__cupti_convert(&conv, &o), 1);
    CHECK_EQ_INT(cap.napi, 1);
    CHECK_STR(cap.api_name[0], "Buffer Flush");
    CHECK_EQ_INT(cap.api[0].tid, 11);
    CHECK_EQ_INT(cap.api[0].cat, TL_CAT_OVERHEAD);
    o.objectKind = CUPTI_ACTIVITY_OBJECT_DEVICE;
    o.objectId.dcs.deviceId = 3;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION;
    tally__cupti_convert(&conv, &o);
    CHECK_EQ_INT(cap.ndev, 1);
    CHECK_EQ_INT(cap.dev[0].device, 3);
    CHECK_STR(cap.dev_name[0], "Instrumentation");
}

TEST(device_properties)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    CUpti_ActivityDevice5 d;
    memset(&d, 0, sizeof d);
    d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    d.id = 0;
    d.name = "NVIDIA H100 80GB HBM3";
    d.globalMemorySize = 85520809984ull;
    d.numMultiprocessors = 132;
    d.computeCapabilityMajor = 9;
    d.computeCapabilityMinor = 0;
    tally__cupti_convert(&conv, &d);
    CHECK_EQ_INT(cap.nprops, 1);
    CHECK_STR(cap.prop_name, "NVIDIA H100 80GB HBM3");
    CHECK_EQ_INT(cap.prop_mem, 85520809984ll);
    CHECK_EQ_INT(cap.prop_sm, 132);
    CHECK_EQ_INT(cap.prop_maj, 9);
    CHECK_EQ_INT(cap.prop_min, 0);
}

TEST(unknown_kinds_ignored)
{
    tally__cupti_conv conv;
    captured cap;
    setup(&conv, &cap, 0);
    CUpti_Activity a = {.kind = CUPTI_ACTIVITY_KIND_PCIE};
    CHECK_EQ_INT(tally__cupti_convert(&conv, &a), 0);
    CHECK_EQ_INT(conv.ignored, 1);
    CHECK_EQ_INT(cap.ndev + cap.napi, 0);
}

TEST(strip_version)
{
    CHECK_EQ_INT(tally__cupti_strip_version("cudaLaunchKernel_v7000"), 16);
    CHECK_EQ_INT(tally__cupti_strip_version("cuMemcpyHtoDAsync_v2"), 17);
    CHECK_EQ_INT(tally__cupti_strip_version("cuInit"), 6);
    CHECK_EQ_INT(tally__cupti_strip_version("odd_v"), 5);
    CHECK_EQ_INT(tally__cupti_strip_version("x_v12a"), 6);
}

int main(void)
{
    RUN(kernel_record);
    RUN(kernel_mangled_name_kept_without_demangler);
    RUN(kernel_without_timestamps_is_skipped);
    RUN(clock_offset_applied);
    RUN(graph_kernels_share_the_launch_correlation);
    RUN(memcpy_records);
    RUN(peer_to_peer_copy);
    RUN(memset_record);
    RUN(api_records);
    RUN(api_noise_filtered_unless_asked);
    RUN(api_to_kernel_correlation_survives);
    RUN(memory_alloc_and_free);
    RUN(sync_record_gets_device_from_context);
    RUN(overhead_records);
    RUN(device_properties);
    RUN(unknown_kinds_ignored);
    RUN(strip_version);
    return test_summary();
}

#else

int main(void)
{
    fprintf(stderr, "skipped: built without the CUPTI headers\n");
    return TEST_SKIPPED;
}

#endif
