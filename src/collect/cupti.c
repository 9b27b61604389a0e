/*
 * cupti.c — the CUPTI activity collector: loads libcupti with dlopen (only where it exists),
 * subscribes, enables the activity kinds, and turns completed buffers into recorder calls
 * through cupti_convert.c.
 *
 * Why dlopen: libtally must load and run on machines without CUDA, and a process must not end
 * up with two libcupti copies (PyTorch wheels bring their own), so we first look for one that
 * is already loaded (RTLD_NOLOAD), then the usual names. TALLY_CUPTI_PATH overrides.
 *
 * Order at start (inside cuInit when CUDA injected us): thread ids = system tids (so API
 * records sit on the same threads as NVTX ranges), timestamps from tally's clock (so kernels,
 * API calls and host ranges share one timeline with no offset; if CUPTI refuses, we sample the
 * offset between the clocks once), subscribe (claims CUPTI; another client holding it gets a
 * one-line message and we stay out of its way), buffer callbacks, then the kinds.
 *
 * Buffers: CUPTI asks for an empty buffer (we malloc 4 MiB) and hands it back full on its own
 * worker thread (or in a flush); bufferCompleted converts the records and frees the buffer.
 * Nothing blocks the application's threads.
 */
#include "collect/collect.h"
#include "collect/cupti.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally.h>

#include "record/recorder.h"

#ifdef TALLY_HAVE_CUPTI

#include <cupti.h>

#define BUF_SIZE (4u << 20)

/* The CUPTI functions we use, resolved from the loaded library. */
static struct {
    CUptiResult (*GetVersion)(uint32_t *);
    CUptiResult (*GetResultString)(CUptiResult, const char **);
    CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*Subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                CUpti_SubscriberParams *);
    CUptiResult (*SetThreadIdType)(CUpti_ActivityThreadIdType);
    CUptiResult (*RegisterTimestampCallback)(CUpti_TimestampCallbackFunc);
    CUptiResult (*GetTimestamp)(uint64_t *);
    CUptiResult (*RegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                     CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*Enable)(CUpti_ActivityKind);
    CUptiResult (*GetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*GetNumDroppedRecords)(CUcontext, uint32_t, size_t *);
    CUptiResult (*FlushAll)(uint32_t);
    CUptiResult (*FlushPeriod)(uint32_t);
    CUptiResult (*GetCallbackName)(CUpti_CallbackDomain, uint32_t, const char **);
    CUptiResult (*EnableDriverApi)(CUpti_CallbackId, uint8_t);
    CUptiResult (*EnableRuntimeApi)(CUpti_CallbackId, uint8_t);
} api;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_state;              /* 0 not tried, 1 running, -1 failed */
static atomic_int g_running;     /* activity collection on */
static tally__cupti_conv g_conv; /* guarded by g_conv_lock */
static pthread_mutex_t g_conv_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_ullong g_dropped;   /* records CUPTI dropped */
static atomic_ullong g_buffers;   /* buffers completed */
static atomic_ullong g_requested; /* buffers handed to CUPTI */
static int g_debug;               /* TALLY_CUPTI_DEBUG set */
static void *(*g_demangler)(const char *, char *, size_t *, int *);

static const char *result_str(CUptiResult r)
{
    const char *s = NULL;
    if (api.GetResultString && api.GetResultString(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return "unknown CUPTI error";
}

/* ---- names ---- */

#define MAX_CBID 4096
static _Atomic(const char *) g_api_names[2][MAX_CBID];

static const char *api_name(int kind, uint32_t cbid, void *user)
{
    (void)user;
    int d = kind == CUPTI_ACTIVITY_KIND_DRIVER ? 0 : 1;
    if (cbid >= MAX_CBID || !api.GetCallbackName)
        return NULL;
    const char *n = atomic_load_explicit(&g_api_names[d][cbid], memory_order_acquire);
    if (n)
        return n;
    const char *raw = NULL;
    CUpti_CallbackDomain dom = d == 0 ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    if (api.GetCallbackName(dom, cbid, &raw) != CUPTI_SUCCESS || !raw)
        return NULL;
    size_t len = tally__cupti_strip_version(raw);
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, raw, len);
    copy[len] = 0;
    const char *expected = NULL;
    if (!atomic_compare_exchange_strong(&g_api_names[d][cbid], &expected, copy)) {
        free(copy);
        return expected;
    }
    return copy;
}

/* Demangled kernel names, cached by CUPTI's name pointer (shared by all records of a kernel).
 * Called with g_conv_lock held. */
#define DEMANGLE_SLOTS 16384
static struct {
    const char *key;
    char *val;
} g_dm[DEMANGLE_SLOTS];

static const char *demangle(const char *mangled, void *user)
{
    (void)user;
    if (!g_demangler || mangled[0] != '_' || mangled[1] != 'Z')
        return NULL;
    size_t h = ((uintptr_t)mangled >> 4) * 0x9E3779B97F4A7C15ull >> 50;
    for (size_t i = 0; i < DEMANGLE_SLOTS; i++) {
        size_t s = (h + i) & (DEMANGLE_SLOTS - 1);
        if (g_dm[s].key == mangled)
            return g_dm[s].val;
        if (!g_dm[s].key) {
            int status = -1;
            char *d = g_demangler(mangled, NULL, NULL, &status);
            if (status != 0) {
                free(d);
                d = NULL;
            }
            g_dm[s].key = mangled;
            g_dm[s].val = d;
            return d;
        }
    }
    return NULL;
}

/* ---- sink: the recorder ---- */

static void sink_device(const tally__device_event *e, void *user)
{
    (void)user;
    tally__record_device(e);
}
static void sink_api(const tally__api_event *e, void *user)
{
    (void)user;
    tally__record_api(e);
}
static void sink_props(int32_t id, const char *name, int64_t memory, int32_t sm, int32_t ccmaj,
                       int32_t ccmin, void *user)
{
    (void)user;
    tally__record_device_props(id, name, memory, sm, ccmaj, ccmin);
}

/* ---- buffers ---- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    int saved = errno;
    void *p = NULL;
    if (posix_memalign(&p, 8, BUF_SIZE) != 0)
        p = NULL; /* CUPTI drops records; counted below */
    *buffer = p;
    *size = p ? BUF_SIZE : 0;
    atomic_fetch_add(&g_requested, 1);
    *max_records = 0;
    errno = saved;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    int saved = errno;
    if (buffer && valid) {
        pthread_mutex_lock(&g_conv_lock);
        CUpti_Activity *rec = NULL;
        while (api.GetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
            tally__cupti_convert(&g_conv, rec);
        pthread_mutex_unlock(&g_conv_lock);
    }
    size_t dropped = 0;
    if (api.GetNumDroppedRecords && api.GetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS)
        atomic_fetch_add(&g_dropped, dropped);
    atomic_fetch_add(&g_buffers, 1);
    free(buffer);
    errno = saved;
}

static uint64_t CUPTIAPI timestamp_cb(void)
{
    return (uint64_t)tally__now_ns();
}

static void CUPTIAPI subscriber_cb(void *user, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                   const void *data)
{
    (void)user;
    (void)dom;
    (void)cbid;
    (void)data;
}

/* ---- loading ---- */

static void *open_cupti(void)
{
    const char *env = getenv("TALLY_CUPTI_PATH");
    if (env && *env)
        return dlopen(env, RTLD_NOW | RTLD_LOCAL);
    static const char *const names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
        if (h)
            return h;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    char path[4096];
    const char *home = getenv("CUDA_HOME");
    const char *dirs[] = {home, "/usr/local/cuda", "/usr/local/cuda/extras/CUPTI"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        if (!dirs[i] || !*dirs[i])
            continue;
        snprintf(path, sizeof path, "%s/lib64/libcupti.so", dirs[i]);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

#define SYM(field, name) (*(void **)&api.field = dlsym(h, name))

static int resolve(void *h)
{
    SYM(GetVersion, "cuptiGetVersion");
    SYM(GetResultString, "cuptiGetResultString");
    SYM(Subscribe, "cuptiSubscribe");
    SYM(Subscribe_v2, "cuptiSubscribe_v2");
    SYM(SetThreadIdType, "cuptiSetThreadIdType");
    SYM(RegisterTimestampCallback, "cuptiActivityRegisterTimestampCallback");
    SYM(GetTimestamp, "cuptiGetTimestamp");
    SYM(RegisterCallbacks, "cuptiActivityRegisterCallbacks");
    SYM(Enable, "cuptiActivityEnable");
    SYM(GetNextRecord, "cuptiActivityGetNextRecord");
    SYM(GetNumDroppedRecords, "cuptiActivityGetNumDroppedRecords");
    SYM(FlushAll, "cuptiActivityFlushAll");
    SYM(FlushPeriod, "cuptiActivityFlushPeriod");
    SYM(GetCallbackName, "cuptiGetCallbackName");
    SYM(EnableDriverApi, "cuptiActivityEnableDriverApi");
    SYM(EnableRuntimeApi, "cuptiActivityEnableRuntimeApi");
    return api.GetVersion && api.RegisterCallbacks && api.Enable && api.GetNextRecord &&
           api.FlushAll && (api.Subscribe || api.Subscribe_v2);
}

static void at_exit_flush(void)
{
    tally__cupti_flush();
    if (g_debug)
        fprintf(stderr,
                "tally: CUPTI at exit: %llu buffers requested, %llu completed, %llu records "
                "converted, %llu skipped, %llu filtered\n",
                (unsigned long long)atomic_load(&g_requested),
                (unsigned long long)atomic_load(&g_buffers), (unsigned long long)g_conv.converted,
                (unsigned long long)g_conv.skipped, (unsigned long long)g_conv.filtered);
    unsigned long long d = atomic_load(&g_dropped);
    if (d)
        fprintf(stderr, "tally: CUPTI dropped %llu activity records (buffers full)\n", d);
}

/* Non-zero when the comma-separated list has the item. */
static int list_has(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, item, n) == 0)
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

static int start_locked(void)
{
    void *h = open_cupti();
    if (!h) {
        fprintf(stderr, "tally: CUPTI (libcupti.so) not found; GPU activity is not recorded "
                        "(set TALLY_CUPTI_PATH)\n");
        return TALLY_ENOTSUP;
    }
    if (!resolve(h)) {
        fprintf(stderr, "tally: the loaded libcupti lacks the activity API; GPU activity is not "
                        "recorded\n");
        return TALLY_ENOTSUP;
    }
    uint32_t version = 0;
    api.GetVersion(&version);

    if (api.SetThreadIdType)
        api.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);

    /* Subscribe first: it tells us whether another client holds CUPTI, before we touch the
     * process-global buffer callbacks that client relies on. */
    CUpti_SubscriberHandle sub = NULL;
    CUptiResult r;
    char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = "";
    if (api.Subscribe_v2) {
        CUpti_SubscriberParams p;
        memset(&p, 0, sizeof p);
        p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
        p.subscriberName = "tally";
        p.oldSubscriberName = other;
        p.oldSubscriberSize = sizeof other - 1;
        r = api.Subscribe_v2(&sub, subscriber_cb, NULL, &p);
    } else {
        r = api.Subscribe(&sub, subscriber_cb, NULL);
    }
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        fprintf(stderr,
                "tally: CUPTI is already used by %s (torch.profiler, Nsight?); GPU activity is "
                "not recorded by tally, the program runs on\n",
                other[0] ? other : "another tool");
        return TALLY_ENOTSUP;
    }
    if (r != CUPTI_SUCCESS) {
        fprintf(stderr,
                "tally: CUPTI unavailable (%s: no CUDA driver or GPU?); GPU activity is "
                "not recorded\n",
                result_str(r));
        return TALLY_ENOTSUP;
    }

    memset(&g_conv, 0, sizeof g_conv);
    g_conv.sink.device = sink_device;
    g_conv.sink.api = sink_api;
    g_conv.sink.props = sink_props;
    g_conv.api_name = api_name;
    g_conv.demangle = demangle;
    g_conv.all_api = getenv("TALLY_CUPTI_ALL_API") && !strcmp(getenv("TALLY_CUPTI_ALL_API"), "1");
    *(void **)&g_demangler = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!g_demangler) {
        void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        if (cxx)
            *(void **)&g_demangler = dlsym(cxx, "__cxa_demangle");
    }

    /* Timestamps on tally's clock; else sample the offset once. */
    if (!api.RegisterTimestampCallback ||
        api.RegisterTimestampCallback(timestamp_cb) != CUPTI_SUCCESS) {
        uint64_t c = 0;
        if (api.GetTimestamp && api.GetTimestamp(&c) == CUPTI_SUCCESS)
            g_conv.offset_ns = tally__now_ns() - (int64_t)c;
    }

    r = api.RegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
        fprintf(stderr,
                "tally: CUPTI refused activity buffers (%s); GPU activity is not "
                "recorded\n",
                result_str(r));
        return TALLY_ENOTSUP;
    }
    /* Which kinds: TALLY_CUPTI_KINDS="kernel,memcpy,memset,runtime,driver,memory,sync,overhead"
     * (default: all). Device and context records are always on (names, context -> device). */
    static const struct {
        const char *name;
        CUpti_ActivityKind kind;
    } kinds[] = {
        {NULL, CUPTI_ACTIVITY_KIND_DEVICE},
        {NULL, CUPTI_ACTIVITY_KIND_CONTEXT},
        {"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
        {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY},
        {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY2},
        {"memset", CUPTI_ACTIVITY_KIND_MEMSET},
        {"runtime", CUPTI_ACTIVITY_KIND_RUNTIME},
        {"driver", CUPTI_ACTIVITY_KIND_DRIVER},
        {"memory", CUPTI_ACTIVITY_KIND_MEMORY2},
        {"sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION},
        {"overhead", CUPTI_ACTIVITY_KIND_OVERHEAD},
    };
    const char *want = getenv("TALLY_CUPTI_KINDS");
    int enabled = 0;
    CUptiResult last = CUPTI_SUCCESS;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (want && *want && kinds[i].name && !list_has(want, kinds[i].name))
            continue;
        CUptiResult e = api.Enable(kinds[i].kind);
        if (e == CUPTI_SUCCESS)
            enabled++;
        else
            last = e;
    }
    if (!enabled) {
        fprintf(stderr,
                "tally: CUPTI could not enable activities (%s); GPU activity is not "
                "recorded\n",
                result_str(last));
        return TALLY_ENOTSUP;
    }
    g_debug = getenv("TALLY_CUPTI_DEBUG") != NULL;
    if (g_debug)
        fprintf(stderr, "tally: CUPTI %u: %d activity kinds enabled\n", version, enabled);
    if (api.FlushPeriod)
        api.FlushPeriod(2000);
    atexit(at_exit_flush);
    atomic_store(&g_running, 1);
    return 0;
}

int tally__cupti_start(void)
{
    int saved = errno;
    pthread_mutex_lock(&g_lock);
    if (g_state == 0)
        g_state = start_locked() == 0 ? 1 : -1;
    int rc = g_state == 1 ? 0 : TALLY_ENOTSUP;
    pthread_mutex_unlock(&g_lock);
    errno = saved;
    return rc;
}

void tally__cupti_flush(void)
{
    if (!atomic_load(&g_running))
        return;
    int saved = errno;
    api.FlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    errno = saved;
}

#else /* built without CUPTI headers */

int tally__cupti_start(void)
{
    fprintf(stderr, "tally: built without CUPTI headers; GPU activity is not recorded\n");
    return TALLY_ENOTSUP;
}

void tally__cupti_flush(void) {}

#endif
