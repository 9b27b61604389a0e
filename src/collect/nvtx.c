/*
 * nvtx.c — libtally as an NVTX v3 tool: every CORE and CORE2 callback becomes a recorder call.
 *
 * How it is reached. Every linkage unit that includes the nvtx3 headers (the program, libtorch,
 * NCCL, cuBLAS, ...) carries its own NVTX copy. At its first NVTX call each copy reads
 * NVTX_INJECTION64_PATH, dlopens that library and calls InitializeInjectionNvtx2 with its own
 * export table; we fill that copy's function slots with the handlers below. So the entry point
 * runs several times per process and all state here is process-wide; init is idempotent.
 *
 * What becomes what (documented for users in docs/run.md):
 *   push/pop (default domain or any domain)  -> a range on the calling thread (recorder stack)
 *   start/end                                -> a begin/end range (may end on another thread)
 *   mark                                     -> an instant mark
 *   PyTorch emit_nvtx messages               -> OPERATOR ranges named "aten::mm" whose args
 *                                               are the input shapes "[[2, 3], [3, 4]]"
 *   NVTX category named forward/backward/... -> that tally_category (Model view works)
 *   domain, other category, payload          -> kept as args text: "domain=D category=C payload=P"
 *   nameOsThread                             -> thread name
 *   a range named $TALLY_STEP_RANGE ending   -> tally_step(0): steps of unmodified programs
 * The domain is not glued into the name: "domain:message" would split one operation into as
 * many rows as there are domains and break name matching against other traces.
 *
 * Push/pop nest per thread and per domain in NVTX; the recorder has one stack per thread.
 * We keep a small per-thread stack of domain indexes so that a domain's pop reports its own
 * level; pops that cross domains (rare) end the innermost recorder range and are counted.
 *
 * Messages are temporary: the recorder copies them. Registered strings and domain names are
 * copied once at registration and live to the end of the process (handles may outlive
 * DomainDestroy in the application's records).
 */
#include "collect/collect.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally.h>

#include "record/recorder.h"

#ifdef TALLY_HAVE_NVTX

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#define EXPORT __attribute__((visibility("default")))

/* Tool-defined handle types (NVTX declares them and leaves them to the tool). */
struct nvtxDomainRegistration_st {
    char *name;
    size_t len;
    uint16_t index; /* 1.. (0 is the default domain) */
};
struct nvtxStringRegistration_st {
    char *str;
    size_t len;
};

/* ---- process-wide state ---- */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_inits;         /* InitializeInjectionNvtx2 calls (one per NVTX copy) */
static atomic_ullong g_cross_pops; /* pops that ended a range of another domain */
static char *g_step_name;          /* TALLY_STEP_RANGE; NULL = none */
static size_t g_step_len;
static atomic_int g_emit_nvtx_seen; /* an emit_nvtx message was seen */

#define MAX_DOMAINS 1024
static struct nvtxDomainRegistration_st *g_domains[MAX_DOMAINS];
static atomic_uint g_ndomains;

/* Category names: (domain index, id) -> name, published with a release count. */
#define MAX_CATS 512
typedef struct cat_name {
    uint16_t domain;
    uint32_t id;
    int tally_cat; /* tally_category it maps to, or -1 */
    char *name;
} cat_name;
static cat_name g_cats[MAX_CATS];
static atomic_uint g_ncats;

/* Open step ranges started with RangeStart (ended maybe on another thread). */
#define MAX_STEP_IDS 64
static struct {
    nvtxRangeId_t id;
    int synthetic; /* recorder gave no handle (not recording): do not call tally_end */
} g_step_ids[MAX_STEP_IDS];
static atomic_int g_nstep_ids;
static atomic_ullong g_synthetic_id = 1ull << 62;

/* ---- per-thread state ---- */

#define STACK_MAX 256
typedef struct nvtx_tls {
    int depth;               /* open push ranges on this thread, all domains */
    uint16_t dom[STACK_MAX]; /* domain index of each open range */
    uint8_t step[STACK_MAX]; /* 1 when the range is the step range */
    char wbuf[1024];         /* wide-string conversion */
    char abuf[256];          /* args text */
} nvtx_tls;
static __thread nvtx_tls *t_nvtx;

static nvtx_tls *tls(void)
{
    nvtx_tls *t = t_nvtx;
    if (__builtin_expect(t == NULL, 0)) {
        int saved = errno;
        t = calloc(1, sizeof *t); /* once per thread, leaked at thread exit (small) */
        errno = saved;
        t_nvtx = t;
    }
    return t;
}

/* ---- helpers ---- */

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static const cat_name *find_cat(uint16_t domain, uint32_t id)
{
    unsigned n = atomic_load_explicit(&g_ncats, memory_order_acquire);
    for (unsigned i = n; i-- > 0;) /* latest naming wins */
        if (g_cats[i].domain == domain && g_cats[i].id == id)
            return &g_cats[i];
    return NULL;
}

static void name_category(uint16_t domain, uint32_t id, const char *name, size_t len)
{
    char *copy = dup_n(name, len);
    if (!copy)
        return;
    pthread_mutex_lock(&g_lock);
    unsigned n = atomic_load_explicit(&g_ncats, memory_order_relaxed);
    if (n < MAX_CATS) {
        g_cats[n].domain = domain;
        g_cats[n].id = id;
        g_cats[n].tally_cat = tally__nvtx_category_from_name(copy);
        g_cats[n].name = copy;
        atomic_store_explicit(&g_ncats, n + 1, memory_order_release);
        copy = NULL;
    }
    pthread_mutex_unlock(&g_lock);
    free(copy);
}

static int is_step(const char *msg, size_t len)
{
    return g_step_name && len == g_step_len && memcmp(msg, g_step_name, len) == 0;
}

/* An event's message from its attributes (NULL-safe). */
static const char *attr_message(const nvtxEventAttributes_t *a, size_t *len, nvtx_tls *t)
{
    if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof a->message) {
        *len = 0;
        return "";
    }
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        if (a->message.ascii) {
            *len = strlen(a->message.ascii);
            return a->message.ascii;
        }
        break;
    case NVTX_MESSAGE_TYPE_UNICODE:
        if (t) {
            *len = tally__utf32_to_utf8(a->message.unicode, t->wbuf, sizeof t->wbuf);
            return t->wbuf;
        }
        break;
    case NVTX_MESSAGE_TYPE_REGISTERED:
        if (a->message.registered) {
            *len = a->message.registered->len;
            return a->message.registered->str;
        }
        break;
    default:
        break;
    }
    *len = 0;
    return "";
}

/* Append "key=value" to the args buffer. */
static size_t args_add(char *buf, size_t cap, size_t n, const char *text)
{
    if (n >= cap)
        return n;
    int w = snprintf(buf + n, cap - n, "%s%s", n ? " " : "", text);
    if (w < 0)
        return n;
    n += (size_t)w;
    return n < cap ? n : cap - 1;
}

/* Category and args for an event of domain dom with attributes a (NULL for the A/W forms). */
static uint32_t describe(const struct nvtxDomainRegistration_st *dom,
                         const nvtxEventAttributes_t *a, nvtx_tls *t, size_t *args_len)
{
    uint32_t cat = TALLY_USER;
    size_t n = 0;
    char tmp[160];
    char *buf = t->abuf;
    size_t cap = sizeof t->abuf;
    buf[0] = 0;
    if (dom) {
        snprintf(tmp, sizeof tmp, "domain=%s", dom->name);
        n = args_add(buf, cap, n, tmp);
    }
    if (a && a->size >= offsetof(nvtxEventAttributes_t, payload)) {
        if (a->category) {
            const cat_name *c = find_cat(dom ? dom->index : 0, a->category);
            if (c && c->tally_cat >= 0)
                cat = (uint32_t)c->tally_cat;
            else if (c)
                snprintf(tmp, sizeof tmp, "category=%s", c->name);
            else
                snprintf(tmp, sizeof tmp, "category=%u", a->category);
            if (!(c && c->tally_cat >= 0))
                n = args_add(buf, cap, n, tmp);
        }
        tmp[0] = 0;
        switch (a->payloadType) {
        case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
            snprintf(tmp, sizeof tmp, "payload=%llu", (unsigned long long)a->payload.ullValue);
            break;
        case NVTX_PAYLOAD_TYPE_INT64:
            snprintf(tmp, sizeof tmp, "payload=%lld", (long long)a->payload.llValue);
            break;
        case NVTX_PAYLOAD_TYPE_DOUBLE:
            snprintf(tmp, sizeof tmp, "payload=%.17g", a->payload.dValue);
            break;
        case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
            snprintf(tmp, sizeof tmp, "payload=%u", a->payload.uiValue);
            break;
        case NVTX_PAYLOAD_TYPE_INT32:
            snprintf(tmp, sizeof tmp, "payload=%d", a->payload.iValue);
            break;
        case NVTX_PAYLOAD_TYPE_FLOAT:
            snprintf(tmp, sizeof tmp, "payload=%.9g", (double)a->payload.fValue);
            break;
        default: /* unknown or the payload extension: not decoded */
            break;
        }
        if (tmp[0])
            n = args_add(buf, cap, n, tmp);
    }
    *args_len = n;
    return cat;
}

/* ---- push / pop ---- */

static int do_push(const struct nvtxDomainRegistration_st *dom, const char *msg, size_t len,
                   const nvtxEventAttributes_t *a)
{
    int saved = errno;
    nvtx_tls *t = tls();
    if (!t) {
        errno = saved;
        return NVTX_NO_PUSH_POP_TRACKING;
    }
    uint16_t di = dom ? dom->index : 0;
    size_t name_len, shapes_len;
    const char *shapes;
    int step = is_step(msg, len);
    if (step)
        tally__step_range_begin(); /* before the range: the step holds it */
    if (!dom && !a && tally__nvtx_parse_op(msg, len, &name_len, &shapes, &shapes_len)) {
        atomic_store_explicit(&g_emit_nvtx_seen, 1, memory_order_relaxed);
        tally__push_copy(msg, name_len, TALLY_OPERATOR, shapes, shapes_len);
    } else if (!dom && !a) {
        tally__push_copy(msg, len, TALLY_USER, NULL, 0);
    } else {
        size_t args_len;
        uint32_t cat = describe(dom, a, t, &args_len);
        tally__push_copy(msg, len, cat, args_len ? t->abuf : NULL, args_len);
    }
    int level = 0;
    int top = t->depth < STACK_MAX ? t->depth : STACK_MAX;
    for (int i = 0; i < top; i++)
        level += t->dom[i] == di;
    if (t->depth < STACK_MAX) {
        t->dom[t->depth] = di;
        t->step[t->depth] = (uint8_t)step;
    }
    t->depth++;
    errno = saved;
    return level;
}

static int do_pop(uint16_t di)
{
    int saved = errno;
    nvtx_tls *t = tls();
    if (!t || t->depth == 0) {
        tally__pop(); /* the recorder counts the unmatched pop */
        errno = saved;
        return -1;
    }
    int step = 0;
    if (t->depth > STACK_MAX) { /* beyond what we track: assume it matches */
        t->depth--;
        tally__pop();
        errno = saved;
        return t->depth;
    }
    int k = t->depth - 1;
    while (k >= 0 && t->dom[k] != di)
        k--;
    if (k < 0) { /* no open range of this domain */
        errno = saved;
        return -1;
    }
    if (k != t->depth - 1) { /* crossing domains: the recorder ends its innermost range */
        atomic_fetch_add_explicit(&g_cross_pops, 1, memory_order_relaxed);
        memmove(&t->dom[k], &t->dom[k + 1], (size_t)(t->depth - 1 - k) * sizeof t->dom[0]);
        step = t->step[t->depth - 1];
        memmove(&t->step[k], &t->step[k + 1], (size_t)(t->depth - 1 - k));
    } else {
        step = t->step[k];
    }
    t->depth--;
    int level = 0;
    for (int i = 0; i < k; i++)
        level += t->dom[i] == di;
    tally__pop();
    if (step)
        tally_step(0);
    errno = saved;
    return level;
}

/* ---- start / end ---- */

static void step_id_add(nvtxRangeId_t id, int synthetic)
{
    pthread_mutex_lock(&g_lock);
    int n = atomic_load_explicit(&g_nstep_ids, memory_order_relaxed);
    if (n < MAX_STEP_IDS) {
        g_step_ids[n].id = id;
        g_step_ids[n].synthetic = synthetic;
        atomic_store_explicit(&g_nstep_ids, n + 1, memory_order_release);
    }
    pthread_mutex_unlock(&g_lock);
}

/* Returns 1 when id was a step range (removed), *synthetic set. */
static int step_id_take(nvtxRangeId_t id, int *synthetic)
{
    if (atomic_load_explicit(&g_nstep_ids, memory_order_acquire) == 0)
        return 0;
    int found = 0;
    pthread_mutex_lock(&g_lock);
    int n = atomic_load_explicit(&g_nstep_ids, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        if (g_step_ids[i].id == id) {
            *synthetic = g_step_ids[i].synthetic;
            g_step_ids[i] = g_step_ids[n - 1];
            atomic_store_explicit(&g_nstep_ids, n - 1, memory_order_release);
            found = 1;
            break;
        }
    pthread_mutex_unlock(&g_lock);
    return found;
}

static nvtxRangeId_t do_start(const struct nvtxDomainRegistration_st *dom, const char *msg,
                              size_t len, const nvtxEventAttributes_t *a)
{
    int saved = errno;
    uint32_t cat = TALLY_USER;
    size_t name_len = len, shapes_len;
    const char *shapes;
    if (!dom && !a && tally__nvtx_parse_op(msg, len, &name_len, &shapes, &shapes_len))
        cat = TALLY_OPERATOR;
    else if (dom || a) {
        nvtx_tls *t = tls();
        size_t args_len;
        if (t)
            cat = describe(dom, a, t, &args_len);
    }
    int step = is_step(msg, len);
    if (step)
        tally__step_range_begin(); /* before the range: the step holds it */
    nvtxRangeId_t id = tally__begin_copy(msg, name_len, cat);
    if (step) {
        int synthetic = id == 0;
        if (synthetic)
            id = atomic_fetch_add_explicit(&g_synthetic_id, 1, memory_order_relaxed);
        step_id_add(id, synthetic);
    }
    errno = saved;
    return id;
}

static void do_end(nvtxRangeId_t id)
{
    int saved = errno;
    int synthetic = 0;
    int step = step_id_take(id, &synthetic);
    if (id && !synthetic)
        tally_end(id);
    if (step)
        tally_step(0);
    errno = saved;
}

/* ---- CORE handlers ---- */

static void h_MarkEx(const nvtxEventAttributes_t *a)
{
    size_t len;
    const char *m = attr_message(a, &len, tls());
    tally__mark_copy(m, len);
}
static void h_MarkA(const char *m)
{
    if (m)
        tally__mark_copy(m, strlen(m));
}
static void h_MarkW(const wchar_t *m)
{
    nvtx_tls *t = tls();
    if (t && m)
        tally__mark_copy(t->wbuf, tally__utf32_to_utf8(m, t->wbuf, sizeof t->wbuf));
}
static nvtxRangeId_t h_RangeStartEx(const nvtxEventAttributes_t *a)
{
    size_t len;
    const char *m = attr_message(a, &len, tls());
    return do_start(NULL, m, len, a);
}
static nvtxRangeId_t h_RangeStartA(const char *m)
{
    return m ? do_start(NULL, m, strlen(m), NULL) : 0;
}
static nvtxRangeId_t h_RangeStartW(const wchar_t *m)
{
    nvtx_tls *t = tls();
    if (!t || !m)
        return 0;
    size_t len = tally__utf32_to_utf8(m, t->wbuf, sizeof t->wbuf);
    return do_start(NULL, t->wbuf, len, NULL);
}
static void h_RangeEnd(nvtxRangeId_t id)
{
    do_end(id);
}
static int h_RangePushEx(const nvtxEventAttributes_t *a)
{
    size_t len;
    const char *m = attr_message(a, &len, tls());
    return do_push(NULL, m, len, a);
}
static int h_RangePushA(const char *m)
{
    return do_push(NULL, m ? m : "", m ? strlen(m) : 0, NULL);
}
static int h_RangePushW(const wchar_t *m)
{
    nvtx_tls *t = tls();
    if (!t)
        return NVTX_NO_PUSH_POP_TRACKING;
    size_t len = tally__utf32_to_utf8(m, t->wbuf, sizeof t->wbuf);
    return do_push(NULL, t->wbuf, len, NULL);
}
static int h_RangePop(void)
{
    return do_pop(0);
}
static void h_NameCategoryA(uint32_t id, const char *name)
{
    if (name)
        name_category(0, id, name, strlen(name));
}
static void h_NameCategoryW(uint32_t id, const wchar_t *name)
{
    char buf[256];
    if (name)
        name_category(0, id, buf, tally__utf32_to_utf8(name, buf, sizeof buf));
}
static void h_NameOsThreadA(uint32_t tid, const char *name)
{
    if (name)
        tally__name_thread((int64_t)tid, name);
}
static void h_NameOsThreadW(uint32_t tid, const wchar_t *name)
{
    char buf[256];
    if (name) {
        tally__utf32_to_utf8(name, buf, sizeof buf);
        tally__name_thread((int64_t)tid, buf);
    }
}

/* ---- CORE2 handlers ---- */

static void h_DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    size_t len;
    const char *m = attr_message(a, &len, tls());
    (void)d; /* marks carry no args in the recorder */
    tally__mark_copy(m, len);
}
static nvtxRangeId_t h_DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    size_t len;
    const char *m = attr_message(a, &len, tls());
    return do_start(d, m, len, a);
}
static void h_DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    (void)d;
    do_end(id);
}
static int h_DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    size_t len;
    const char *m = attr_message(a, &len, tls());
    return do_push(d, m, len, a);
}
static int h_DomainRangePop(nvtxDomainHandle_t d)
{
    return do_pop(d ? d->index : 0);
}
static void h_DomainNameCategoryA(nvtxDomainHandle_t d, uint32_t id, const char *name)
{
    if (name)
        name_category(d ? d->index : 0, id, name, strlen(name));
}
static void h_DomainNameCategoryW(nvtxDomainHandle_t d, uint32_t id, const wchar_t *name)
{
    char buf[256];
    if (name)
        name_category(d ? d->index : 0, id, buf, tally__utf32_to_utf8(name, buf, sizeof buf));
}
static nvtxStringHandle_t register_string(const char *s, size_t len)
{
    int saved = errno;
    struct nvtxStringRegistration_st *r = malloc(sizeof *r);
    if (r) {
        r->str = dup_n(s, len);
        r->len = len;
        if (!r->str) {
            free(r);
            r = NULL;
        }
    }
    errno = saved;
    return r;
}
static nvtxStringHandle_t h_DomainRegisterStringA(nvtxDomainHandle_t d, const char *s)
{
    (void)d;
    return s ? register_string(s, strlen(s)) : NULL;
}
static nvtxStringHandle_t h_DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t *s)
{
    char buf[1024];
    (void)d;
    return s ? register_string(buf, tally__utf32_to_utf8(s, buf, sizeof buf)) : NULL;
}
static nvtxDomainHandle_t create_domain(const char *name, size_t len)
{
    int saved = errno;
    struct nvtxDomainRegistration_st *d = NULL;
    pthread_mutex_lock(&g_lock);
    unsigned n = atomic_load_explicit(&g_ndomains, memory_order_relaxed);
    for (unsigned i = 0; i < n; i++) /* the same name gives the same domain */
        if (g_domains[i]->len == len && memcmp(g_domains[i]->name, name, len) == 0) {
            d = g_domains[i];
            break;
        }
    if (!d && n < MAX_DOMAINS) {
        d = malloc(sizeof *d);
        if (d) {
            d->name = dup_n(name, len);
            d->len = len;
            d->index = (uint16_t)(n + 1);
            if (d->name) {
                g_domains[n] = d;
                atomic_store_explicit(&g_ndomains, n + 1, memory_order_release);
            } else {
                free(d);
                d = NULL;
            }
        }
    }
    pthread_mutex_unlock(&g_lock);
    errno = saved;
    return d;
}
static nvtxDomainHandle_t h_DomainCreateA(const char *name)
{
    return create_domain(name ? name : "", name ? strlen(name) : 0);
}
static nvtxDomainHandle_t h_DomainCreateW(const wchar_t *name)
{
    char buf[256];
    return create_domain(buf, tally__utf32_to_utf8(name, buf, sizeof buf));
}
static void h_DomainDestroy(nvtxDomainHandle_t d)
{
    (void)d; /* kept: events already recorded may name it, and it may be created again */
}
static void h_Initialize(const void *reserved)
{
    (void)reserved;
}

/* ---- the entry point ---- */

static void install(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer fn)
{
    if (table && id < size && table[id])
        *table[id] = fn;
}

#define FN(f) ((NvtxFunctionPointer)(void (*)(void))(f))

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static void init_once(void)
{
    const char *s = getenv("TALLY_STEP_RANGE");
    if (s && *s) {
        g_step_len = strlen(s);
        g_step_name = dup_n(s, g_step_len);
    }
}

/* Defined in inject.c: start a session for an injected process when none runs. */
void tally__inject_session(void);

EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable)
{
    int saved = errno;
    if (!getExportTable)
        return 0;
    /* NVTX of a statically linked program dlopens us with a second C library, which cannot
     * start threads: decline, and the program's NVTX calls stay no-ops */
    if (tally__program_is_static()) {
        errno = saved;
        return 0;
    }
    pthread_once(&g_once, init_once);
    const NvtxExportTableCallbacks *cb =
        (const NvtxExportTableCallbacks *)getExportTable(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable) {
        errno = saved;
        return 0;
    }
    const NvtxExportTableVersionInfo *vi =
        (const NvtxExportTableVersionInfo *)getExportTable(NVTX_ETID_VERSIONINFO);
    if (vi && vi->struct_size >= sizeof *vi && vi->SetInjectionNvtxVersion)
        vi->SetInjectionNvtxVersion(NVTX_VERSION);

    NvtxFunctionTable core = NULL, core2 = NULL;
    unsigned ncore = 0, ncore2 = 0;
    if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &ncore))
        core = NULL;
    if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &ncore2))
        core2 = NULL;
    if (!core && !core2) {
        errno = saved;
        return 0;
    }
    tally__inject_session();
    atomic_fetch_add(&g_inits, 1);

    install(core, ncore, NVTX_CBID_CORE_MarkEx, FN(h_MarkEx));
    install(core, ncore, NVTX_CBID_CORE_MarkA, FN(h_MarkA));
    install(core, ncore, NVTX_CBID_CORE_MarkW, FN(h_MarkW));
    install(core, ncore, NVTX_CBID_CORE_RangeStartEx, FN(h_RangeStartEx));
    install(core, ncore, NVTX_CBID_CORE_RangeStartA, FN(h_RangeStartA));
    install(core, ncore, NVTX_CBID_CORE_RangeStartW, FN(h_RangeStartW));
    install(core, ncore, NVTX_CBID_CORE_RangeEnd, FN(h_RangeEnd));
    install(core, ncore, NVTX_CBID_CORE_RangePushEx, FN(h_RangePushEx));
    install(core, ncore, NVTX_CBID_CORE_RangePushA, FN(h_RangePushA));
    install(core, ncore, NVTX_CBID_CORE_RangePushW, FN(h_RangePushW));
    install(core, ncore, NVTX_CBID_CORE_RangePop, FN(h_RangePop));
    install(core, ncore, NVTX_CBID_CORE_NameCategoryA, FN(h_NameCategoryA));
    install(core, ncore, NVTX_CBID_CORE_NameCategoryW, FN(h_NameCategoryW));
    install(core, ncore, NVTX_CBID_CORE_NameOsThreadA, FN(h_NameOsThreadA));
    install(core, ncore, NVTX_CBID_CORE_NameOsThreadW, FN(h_NameOsThreadW));

    install(core2, ncore2, NVTX_CBID_CORE2_DomainMarkEx, FN(h_DomainMarkEx));
    install(core2, ncore2, NVTX_CBID_CORE2_DomainRangeStartEx, FN(h_DomainRangeStartEx));
    install(core2, ncore2, NVTX_CBID_CORE2_DomainRangeEnd, FN(h_DomainRangeEnd));
    install(core2, ncore2, NVTX_CBID_CORE2_DomainRangePushEx, FN(h_DomainRangePushEx));
    install(core2, ncore2, NVTX_CBID_CORE2_DomainRangePop, FN(h_DomainRangePop));
    install(core2, ncore2, NVTX_CBID_CORE2_DomainNameCategoryA, FN(h_DomainNameCategoryA));
    install(core2, ncore2, NVTX_CBID_CORE2_DomainNameCategoryW, FN(h_DomainNameCategoryW));
    install(core2, ncore2, NVTX_CBID_CORE2_DomainRegisterStringA, FN(h_DomainRegisterStringA));
    install(core2, ncore2, NVTX_CBID_CORE2_DomainRegisterStringW, FN(h_DomainRegisterStringW));
    install(core2, ncore2, NVTX_CBID_CORE2_DomainCreateA, FN(h_DomainCreateA));
    install(core2, ncore2, NVTX_CBID_CORE2_DomainCreateW, FN(h_DomainCreateW));
    install(core2, ncore2, NVTX_CBID_CORE2_DomainDestroy, FN(h_DomainDestroy));
    install(core2, ncore2, NVTX_CBID_CORE2_Initialize, FN(h_Initialize));
    errno = saved;
    return 1;
}

int tally__nvtx_inits(void)
{
    return atomic_load(&g_inits);
}

#else /* no NVTX headers: nothing to inject into */

int tally__nvtx_inits(void)
{
    return 0;
}

#endif
