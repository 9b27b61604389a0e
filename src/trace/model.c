/*
 * model.c — the trace model: string interning, event and track storage, and tl_trace_finish,
 * which puts events in (track, start, longest first) order and derives the relations every view
 * needs: which span encloses which on a host thread, and which runtime call launched which
 * device work.
 *
 * Sorting finds the order as indices (a counting sort by track, then a merge sort of the few
 * tracks whose events did not come in order) and then permutes the events in place, so a
 * 4-million-event trace needs 16 MB of indices rather than a second copy of its events.
 */
#include "trace/model.h"
#include "trace/checked.h"
#include "trace/grow_array.h"
#include "trace/natsort.h"
#include "trace/now.h"
#include "trace/u64map.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h> /* mallopt */
#endif

/* ---- names ------------------------------------------------------------------------------ */

static const char *const cat_names[TL_CAT_COUNT] = {
    [TL_CAT_USER] = "UserDefined",
    [TL_CAT_DATALOADER] = "Dataloader",
    [TL_CAT_FORWARD] = "Forward",
    [TL_CAT_BACKWARD] = "Backward",
    [TL_CAT_OPTIMIZER] = "Optimization",
    [TL_CAT_COMMUNICATION] = "Communication",
    [TL_CAT_OPERATOR] = "Operator",
    [TL_CAT_STEP] = "ProfileStep",
    [TL_CAT_OPERATOR_INNER] = "OperatorInner",
    [TL_CAT_PYTHON] = "PythonFunction",
    [TL_CAT_RUNTIME] = "CudaRuntime",
    [TL_CAT_DRIVER] = "CudaDriver",
    [TL_CAT_KERNEL] = "Kernel",
    [TL_CAT_MEMCPY] = "Memcpy",
    [TL_CAT_MEMSET] = "Memset",
    [TL_CAT_GPU_USER] = "GpuUserAnnotation",
    [TL_CAT_SYNC] = "CudaSync",
    [TL_CAT_OVERHEAD] = "Overhead",
    [TL_CAT_INSTANT] = "Instant",
    [TL_CAT_COUNTER] = "Counter",
    [TL_CAT_MEMORY] = "Memory",
    [TL_CAT_OTHER] = "Other",
};

const char *tl_cat_name(tl_cat c)
{
    return (unsigned)c < TL_CAT_COUNT ? cat_names[c] : "Other";
}

const char *tl_memcpy_kind_name(tl_memcpy_kind k)
{
    switch (k) {
    case TL_COPY_HTOD:
        return "HtoD";
    case TL_COPY_DTOH:
        return "DtoH";
    case TL_COPY_DTOD:
        return "DtoD";
    case TL_COPY_HTOH:
        return "HtoH";
    case TL_COPY_PTOP:
        return "PtoP";
    default:
        return "Unknown";
    }
}

static void error_vset(tl_error *e, tl_errcode code, const char *fmt, va_list ap)
{
    if (!e)
        return;
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    e->code = code;
}

void tl_error_set(tl_error *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(e, TL_ERR_INPUT, fmt, ap);
    va_end(ap);
}

void tl_error_setc(tl_error *e, tl_errcode code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(e, code, fmt, ap);
    va_end(ap);
}

/* ---- string table ----------------------------------------------------------------------- */

void tl_error_for_path(tl_error *e, const char *tmp, const char *out)
{
    size_t n = strlen(tmp);
    if (!e || strncmp(e->msg, tmp, n) != 0)
        return;
    char rest[sizeof e->msg];
    snprintf(rest, sizeof rest, "%s", e->msg + n);
    snprintf(e->msg, sizeof e->msg, "%s%s", out, rest);
}

uint64_t tl_hash_bytes(const char *s, size_t len)
{
    /* FNV-1a on 8-byte words, then a final mix: fast for the short names traces are full of. */
    uint64_t h = 0xcbf29ce484222325ull ^ len;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
        s += 8;
        len -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, s, len);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return h;
}

/* Strings are carved from blocks, each its size (a size_t) and then the strings: the first of
 * STRTAB_FIRST bytes, each next twice the last up to STRTAB_BLOCK (or a string's size, when
 * longer), each mapped apart. The "" every table starts with is no block's. A table that never
 * holds another string (a trace made and freed) costs no block, and one of a few strings (a
 * parallel read's part, a decoder's) no megabyte: under ASan a block of 1 MB from malloc was an
 * mmap and a memset of its shadow each time, most of test_tally_reader's and
 * test_parallel_read's time. Mapped apart, the small blocks stay out of the heap: from malloc they
 * sat between a read's arrays, which then could not grow in place (a 1 GB trace's report on one
 * thread took 6 k more page faults, 3 % more time). */
#define STRTAB_FIRST ((size_t)16 << 10)
#define STRTAB_BLOCK ((size_t)1 << 20)
#define BLOCK_HEAD   sizeof(size_t)

static size_t block_size(const char *b)
{
    size_t n;
    memcpy(&n, b, sizeof n);
    return n;
}

void tl_strtab_init(tl_strtab *t)
{
    memset(t, 0, sizeof *t);
    tl_intern(t, "", 0);
}

void tl_strtab_free(tl_strtab *t)
{
    for (size_t i = 0; i < t->nblocks; i++)
        munmap(t->blocks[i], BLOCK_HEAD + block_size(t->blocks[i]));
    free(t->blocks);
    free(t->str);
    free(t->len);
    free(t->slots);
    free(t->tags);
    memset(t, 0, sizeof *t);
}

/* Make block k (< nblocks) the one strings are carved from. */
static void use_block(tl_strtab *t, size_t k)
{
    t->cur_block = k;
    t->block = t->blocks[k] + BLOCK_HEAD;
    t->block_cap = block_size(t->blocks[k]);
    t->block_used = 0;
}

void tl_strtab_reset(tl_strtab *t)
{
    if (!t->nslots) {
        tl_strtab_free(t);
        tl_strtab_init(t);
        return;
    }
    if (t->nblocks)
        use_block(t, 0); /* the blocks are kept, and filled again in turn */
    t->count = 0;
    memset(t->slots, 0, (size_t)t->nslots * sizeof *t->slots); /* a slot's tag counts only when
                                                                  the slot is taken */
    tl_intern(t, "", 0);
}

size_t tl_strtab_bytes(const tl_strtab *t)
{
    size_t text = 0;
    for (size_t i = 0; i < t->nblocks; i++)
        text += BLOCK_HEAD + block_size(t->blocks[i]);
    return text + t->cap_blocks * sizeof *t->blocks +
           (size_t)t->cap * (sizeof *t->str + sizeof *t->len) +
           (size_t)t->nslots * (sizeof *t->slots + sizeof *t->tags);
}

static char *strtab_alloc(tl_strtab *t, size_t n)
{
    while (t->block_used + n > t->block_cap) {
        if (t->cur_block + 1 < t->nblocks) { /* one kept by a reset */
            use_block(t, t->cur_block + 1);
            continue;
        }
        size_t last = t->nblocks ? block_size(t->blocks[t->nblocks - 1]) : 0;
        size_t cap = !last ? STRTAB_FIRST : last >= STRTAB_BLOCK / 2 ? STRTAB_BLOCK : last * 2;
        if (n > cap)
            cap = n;
        if (cap > SIZE_MAX - BLOCK_HEAD)
            return NULL;
        void *m = mmap(NULL, BLOCK_HEAD + cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        char *b = m;
        memcpy(b, &cap, sizeof cap);
        if (t->nblocks == t->cap_blocks) {
            size_t nc = t->cap_blocks ? t->cap_blocks * 2 : 16;
            char **nb = realloc(t->blocks, nc * sizeof *nb);
            if (!nb) {
                munmap(b, BLOCK_HEAD + cap);
                return NULL;
            }
            t->blocks = nb;
            t->cap_blocks = nc;
        }
        t->blocks[t->nblocks++] = b;
        use_block(t, t->nblocks - 1);
    }
    char *p = t->block + t->block_used;
    t->block_used += n;
    return p;
}

/* The slot's tag: bits of the hash the slot's index does not use (a table of 2^24 slots and
 * more uses some of them; the tag is then only less often decisive). */
static inline uint8_t strtab_tag(uint64_t h)
{
    return (uint8_t)(h >> 56);
}

static int strtab_grow_slots(tl_strtab *t)
{
    uint32_t n = t->nslots ? t->nslots * 2 : 1024;
    uint32_t *s = calloc(n, sizeof *s);
    uint8_t *g = malloc(n);
    if (!s || !g) {
        free(s);
        free(g);
        return -1;
    }
    for (uint32_t id = 0; id < t->count; id++) {
        uint64_t h = tl_hash_bytes(t->str[id], t->len[id]);
        uint32_t i = (uint32_t)h & (n - 1);
        while (s[i])
            i = (i + 1) & (n - 1);
        s[i] = id + 1;
        g[i] = strtab_tag(h);
    }
    free(t->slots);
    free(t->tags);
    t->slots = s;
    t->tags = g;
    t->nslots = n;
    return 0;
}

uint32_t tl_intern(tl_strtab *t, const char *s, size_t len)
{
    return tl_intern_hashed(t, s, len, tl_hash_bytes(s, len));
}

uint32_t tl_intern_hashed(tl_strtab *t, const char *s, size_t len, uint64_t h)
{
    if ((t->count + 1) * 2 > t->nslots && strtab_grow_slots(t) != 0)
        return 0;
    uint32_t mask = t->nslots - 1;
    uint32_t i = (uint32_t)h & mask;
    uint8_t tag = strtab_tag(h);
    for (;;) {
        uint32_t v = t->slots[i];
        if (!v)
            break;
        uint32_t id = v - 1;
        if (t->tags[i] == tag && t->len[id] == len && memcmp(t->str[id], s, len) == 0)
            return id;
        i = (i + 1) & mask;
    }
    if (t->count == t->cap) {
        uint32_t nc = t->cap ? t->cap * 2 : 1024;
        char **ns = realloc(t->str, nc * sizeof *ns);
        if (!ns)
            return 0;
        t->str = ns;
        uint32_t *nl = realloc(t->len, nc * sizeof *nl);
        if (!nl)
            return 0;
        t->len = nl;
        t->cap = nc;
    }
    static const char no_chars[1];
    char *copy = len ? strtab_alloc(t, len + 1) : (char *)no_chars; /* read only, as any */
    if (!copy)
        return 0;
    if (len) {
        memcpy(copy, s, len);
        copy[len] = 0;
    }
    uint32_t id = t->count++;
    t->str[id] = copy;
    t->len[id] = (uint32_t)len;
    t->slots[i] = id + 1;
    t->tags[i] = tag;
    return id;
}

/* ---- large arrays ------------------------------------------------------------------------- */

/* Below this, an array is not worth a huge page (and malloc serves it from the heap). */
#define BIG_MIN (4u << 20)

void tl_advise_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    static uintptr_t page;
    if (!p || n < BIG_MIN)
        return;
    if (!page) {
        long ps = sysconf(_SC_PAGESIZE);
        page = ps > 0 ? (uintptr_t)ps : 4096;
    }
    /* Every page the block touches, not just those inside it: advising part of a mapping splits
     * it, and realloc can then no longer grow it with mremap (it copies). Only the 2 MB-aligned
     * stretches can be huge pages; advice on a neighbour's bytes changes nothing for it. */
    uintptr_t a = (uintptr_t)p & ~(page - 1);
    uintptr_t b = ((uintptr_t)p + n + page - 1) & ~(page - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_HUGEPAGE); /* advice: failure changes nothing */
#else
    (void)p;
    (void)n;
#endif
}

void tl_discard_pages(void *p, size_t n)
{
    long ps = sysconf(_SC_PAGESIZE);
    if (!p || ps <= 0)
        return;
    uintptr_t page = (uintptr_t)ps;
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + n) & ~(page - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_DONTNEED); /* advice: if it fails, the pages stay */
}

static int one_trace; /* tl_malloc_for_one_trace was called */
static char *heap_lo; /* the heap's end when it was called: the views' heap is above it */
static int heap_huge; /* tl_malloc_for_views advised the heap: tl_malloc_advise goes on */

void tl_malloc_for_one_trace(void)
{
#ifdef M_MMAP_THRESHOLD
    one_trace = 1;
    heap_lo = sbrk(0);
    mallopt(M_MMAP_THRESHOLD, 1 << 20); /* a fixed threshold: glibc no longer moves it */
    mallopt(M_ARENA_MAX, 1);
#endif
}

/* The views' heap in huge pages from events of this many bytes (1M events: a Kineto JSON of
 * ~450 MB); the heap then grows by HEAP_PAD beyond what a block asks for (M_TOP_PAD), and by a
 * block of HEAP_FIRST more as the views begin. */
#define HEAP_HUGE_FROM ((size_t)64 << 20)
#define HEAP_PAD       (64 << 20)
#define HEAP_FIRST     (24 << 20)

void tl_malloc_for_views(const tl_trace *t)
{
#ifdef M_MMAP_THRESHOLD
    if (!one_trace)
        return;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 16 << 20);
    if (t->nev < HEAP_HUGE_FROM / sizeof *t->ev)
        return;
    mallopt(M_TOP_PAD, HEAP_PAD);
    void *volatile first = malloc(HEAP_FIRST); /* volatile: the pair is not optimised away */
    free(first);
    heap_huge = 1;
    tl_malloc_advise();
#else
    (void)t;
#endif
}

void tl_malloc_advise(void)
{
#ifdef M_MMAP_THRESHOLD
    if (!heap_huge)
        return;
    uintptr_t lo = (uintptr_t)heap_lo, end = (uintptr_t)sbrk(0);
    if (end > lo)
        tl_advise_huge(heap_lo, end - lo);
#endif
}

void *tl_big_alloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    tl_advise_huge(p, n);
    return p;
}

void *tl_big_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    /* not calloc: it may touch the pages (heap memory) before they are advised */
    void *p = tl_big_alloc(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *tl_big_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    tl_advise_huge(q, n);
    return q;
}

/* ---- populating ahead of a writer ---------------------------------------------------------- */

#define PREFAULT_STEP ((size_t)2 << 20)

static void *prefault_main(void *arg)
{
    tl_prefault *pf = arg;
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (!page)
        page = 4096;
    while (!atomic_load_explicit(&pf->stop, memory_order_relaxed) && pf->populated < pf->len) {
        size_t reached = atomic_load_explicit(&pf->reached, memory_order_relaxed);
        if (pf->populated < reached) /* the writer passed it: its faults are taken */
            pf->populated = reached;
        if (pf->populated >= reached + pf->lead) {
            struct timespec ts = {0, 200000}; /* 0.2 ms: the writer fills ~1 MB meanwhile */
            nanosleep(&ts, NULL);
            continue;
        }
        size_t n =
            pf->len - pf->populated < PREFAULT_STEP ? pf->len - pf->populated : PREFAULT_STEP;
        uintptr_t a = (uintptr_t)(pf->base + pf->populated) & ~(page - 1);
        uintptr_t b = ((uintptr_t)(pf->base + pf->populated + n) + page - 1) & ~(page - 1);
        if (madvise((void *)a, b - a, MADV_POPULATE_WRITE) != 0)
            break; /* not supported (before Linux 5.14), or no memory: the writer faults */
        pf->populated += n;
    }
#endif
    return NULL;
}

int tl_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    /* faults stay deliverable: blocked, they would kill the process all the same, and a
     * handler of the program's (the tally command's, for a file cut short while it is read)
     * must run in the thread that faulted */
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(th, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

void tl_prefault_start(tl_prefault *pf, void *base, size_t len, size_t lead, int cores)
{
    memset(pf, 0, sizeof *pf);
    pf->base = base;
    pf->len = len;
    pf->lead = lead;
#ifdef MADV_POPULATE_WRITE
    if (base && cores > 1 && len >= 4 * PREFAULT_STEP)
        pf->running = tl_thread_start(&pf->th, prefault_main, pf) == 0;
#else
    (void)cores;
#endif
}

void tl_prefault_stop(tl_prefault *pf)
{
    if (!pf->running)
        return;
    atomic_store_explicit(&pf->stop, 1, memory_order_relaxed);
    pthread_join(pf->th, NULL);
    pf->running = 0;
}

/* A pool's worker: idle (POOL_IDLE), given an item (POOL_GIVEN), or done with it and not yet
 * waited for (POOL_DONE); all of it under the pool's lock. */
enum { POOL_IDLE, POOL_GIVEN, POOL_DONE };
typedef struct pool_worker {
    tl_pool *pool;
    pthread_t th;
    pthread_cond_t go; /* an item given, or the pool freed */
    void *(*fn)(void *);
    void *arg;
    int state;
} pool_worker;

struct tl_pool {
    pthread_mutex_t mu;
    pthread_cond_t done; /* a worker is done with its item */
    int n, quit;
    pool_worker w[64];
};

tl_pool *tl_pool_new(void)
{
    tl_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->done, NULL);
    return p;
}

static void *pool_main(void *arg)
{
    pool_worker *w = arg;
    tl_pool *p = w->pool;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (w->state != POOL_GIVEN && !p->quit)
            pthread_cond_wait(&w->go, &p->mu);
        if (w->state != POOL_GIVEN)
            break;
        void *(*fn)(void *) = w->fn;
        void *item = w->arg;
        pthread_mutex_unlock(&p->mu);
        fn(item);
        pthread_mutex_lock(&p->mu);
        w->state = POOL_DONE;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Give item to an idle worker, or to one started for it: the worker's index + 1, or 0 when
 * none can take it. */
static int pool_give(tl_pool *p, void *(*fn)(void *), void *item)
{
    pthread_mutex_lock(&p->mu);
    int k = 0;
    while (k < p->n && p->w[k].state != POOL_IDLE)
        k++;
    if (k == p->n) {
        if (k == 64) {
            pthread_mutex_unlock(&p->mu);
            return 0;
        }
        pool_worker *w = &p->w[k];
        w->pool = p;
        w->state = POOL_IDLE;
        pthread_cond_init(&w->go, NULL);
        if (tl_thread_start(&w->th, pool_main, w) != 0) {
            pthread_cond_destroy(&w->go);
            pthread_mutex_unlock(&p->mu);
            return 0;
        }
        p->n++;
    }
    pool_worker *w = &p->w[k];
    w->fn = fn;
    w->arg = item;
    w->state = POOL_GIVEN;
    pthread_cond_signal(&w->go);
    pthread_mutex_unlock(&p->mu);
    return k + 1;
}

/* Wait for the item given to worker k to be done; the worker is idle again. */
static void pool_wait(tl_pool *p, int k)
{
    pthread_mutex_lock(&p->mu);
    while (p->w[k].state != POOL_DONE)
        pthread_cond_wait(&p->done, &p->mu);
    p->w[k].state = POOL_IDLE;
    pthread_mutex_unlock(&p->mu);
}

void tl_pool_free(tl_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    for (int k = 0; k < p->n; k++)
        pthread_cond_signal(&p->w[k].go);
    pthread_mutex_unlock(&p->mu);
    for (int k = 0; k < p->n; k++) {
        pthread_join(p->w[k].th, NULL);
        pthread_cond_destroy(&p->w[k].go);
    }
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void tl_run_start_in(tl_runner *r, tl_pool *pool, void *(*fn)(void *), void *items, size_t size,
                     int first, int n)
{
    r->fn = fn;
    r->items = items;
    r->size = size;
    r->first = first;
    r->n = n;
    r->pool = pool;
    for (int k = first; k < n && k < 64; k++) {
        void *item = r->items + (size_t)k * size;
        if (pool)
            r->slot[k] = (unsigned char)pool_give(pool, fn, item);
        else
            r->started[k] = tl_thread_start(&r->th[k], fn, item) == 0;
    }
}

void tl_run_start(tl_runner *r, void *(*fn)(void *), void *items, size_t size, int first, int n)
{
    tl_run_start_in(r, NULL, fn, items, size, first, n);
}

void tl_run_apart(tl_runner *r, void *(*fn)(void *), void *item, int apart)
{
    r->fn = fn;
    r->items = item;
    r->size = 0;
    r->first = 0;
    r->n = 1;
    r->pool = NULL;
    r->started[0] = apart && tl_thread_start(&r->th[0], fn, item) == 0;
}

void tl_run_wait(tl_runner *r)
{
    for (int k = r->first; k < r->n; k++) {
        if (k < 64 && r->pool && r->slot[k])
            pool_wait(r->pool, r->slot[k] - 1);
        else if (k < 64 && !r->pool && r->started[k])
            pthread_join(r->th[k], NULL);
        else
            r->fn(r->items + (size_t)k * r->size);
    }
}

void tl_run_each(void *(*fn)(void *), void *items, size_t size, int n)
{
    tl_runner r;
    tl_run_start(&r, fn, items, size, 1, n);
    if (n > 0)
        fn(items);
    tl_run_wait(&r);
}

static void *share_main(void *arg)
{
    tl_share *s = arg;
    for (;;) {
        int j = atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed);
        if (j >= s->n)
            return NULL;
        s->fn(s->items + (size_t)j * s->size);
    }
}

void tl_share_start(tl_share *s, tl_pool *pool, void *(*fn)(void *), void *items, size_t size,
                    int n, int workers)
{
    s->fn = fn;
    s->items = items;
    s->size = size;
    s->n = n;
    atomic_store_explicit(&s->next, 0, memory_order_relaxed);
    int k = workers - 1 < n ? workers - 1 : n;
    /* every thread's item is the share itself: items 0 bytes apart */
    tl_run_start_in(&s->r, pool, share_main, s, 0, 0, k > 0 ? k : 0);
}

void tl_share_wait(tl_share *s)
{
    share_main(s);
    tl_run_wait(&s->r);
}

void tl_share_each(tl_pool *pool, void *(*fn)(void *), void *items, size_t size, int n, int workers)
{
    tl_share s;
    tl_share_start(&s, pool, fn, items, size, n, workers);
    tl_share_wait(&s);
}

/* ---- trace ------------------------------------------------------------------------------ */

int tl_default_threads(void)
{
    const char *e = getenv("TALLY_THREADS");
    long n = e && *e ? strtol(e, NULL, 10) : 0;
    if (n <= 0)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

void tl_trace_init(tl_trace *t)
{
    memset(t, 0, sizeof *t);
    tl_strtab_init(&t->strings);
    t->rank = -1;
}

/* One lock for every trace's memos, held only to look and to publish, never while making:
 * traces read in threads (a folder of ranks) make theirs at once. */
static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t memo_cv = PTHREAD_COND_INITIALIZER;

void *tl_trace_memo(const tl_trace *ct, int key, void *(*make)(const tl_trace *t),
                    void (*drop)(void *p))
{
    /* the memo is the trace's cache, not its content: callers hold the trace const */
    tl_trace *t = (tl_trace *)ct;
    if (key < 0 || key >= TL_MEMO_COUNT)
        return NULL;
    pthread_mutex_lock(&memo_mu);
    while (t->memo_[key].state == 1)
        pthread_cond_wait(&memo_cv, &memo_mu);
    if (t->memo_[key].state == 2) {
        void *p = t->memo_[key].p;
        pthread_mutex_unlock(&memo_mu);
        return p;
    }
    t->memo_[key].state = 1;
    pthread_mutex_unlock(&memo_mu);
    void *p = make(ct);
    pthread_mutex_lock(&memo_mu);
    t->memo_[key].p = p;
    t->memo_[key].drop = drop;
    t->memo_[key].state = p ? 2 : 0;
    pthread_cond_broadcast(&memo_cv);
    pthread_mutex_unlock(&memo_mu);
    return p;
}

void tl_trace_memo_release(const tl_trace *ct, int key)
{
    tl_trace *t = (tl_trace *)ct;
    if (key < 0 || key >= TL_MEMO_COUNT)
        return;
    pthread_mutex_lock(&memo_mu);
    if (t->memo_[key].state == 2) {
        if (t->memo_[key].drop)
            t->memo_[key].drop(t->memo_[key].p);
        t->memo_[key].p = NULL;
        t->memo_[key].state = 0;
    }
    pthread_mutex_unlock(&memo_mu);
}

void tl_trace_memo_drop(tl_trace *t)
{
    t->finish_known_ = 0;
    for (int k = 0; k < TL_MEMO_COUNT; k++) {
        if (t->memo_[k].state == 2 && t->memo_[k].drop)
            t->memo_[k].drop(t->memo_[k].p);
        t->memo_[k].p = NULL;
        t->memo_[k].state = 0;
    }
}

void tl_trace_clear(tl_trace *t)
{
    tl_trace_memo_drop(t);
    tl_strtab_reset(&t->strings);
    t->nev = t->nmem = 0;
    t->ntracks = 0;
    if (t->track_slots_)
        memset(t->track_slots_, 0, (size_t)t->ntrack_slots_ * sizeof *t->track_slots_);
    t->open_ranges = t->unmatched_ends = 0;
    t->accel = NULL;
    t->mem_addr_known = t->mem_totals_known = 0;
}

const char *tl_accel_name(const tl_trace *t)
{
    return t->accel ? t->accel : "GPU";
}

void tl_trace_free(tl_trace *t)
{
    tl_trace_memo_drop(t);
    tl_strtab_free(&t->strings);
    free(t->step_at_);
    free(t->runs_);
    free(t->ev);
    free(t->tracks);
    free(t->devices);
    free(t->step_samples);
    free(t->sites);
    free(t->thread_losses);
    free(t->mem);
    free(t->track_slots_);
    free(t->raw.buf);
    free(t->raw.end);
    free(t->raw.mark);
    free(t->raw_other);
    free(t->raw_members);
    memset(t, 0, sizeof *t);
}

/* Copy JSON text s[0, n) to o without the whitespace outside strings (Kineto indents every
 * event); n must end outside a string. Returns the end of what was written, which is at most
 * o + n: strings are copied 16 bytes at a time where SSE2 is there (names are most of an
 * event's text), each store within the n bytes the input took. */
static char *compact(char *o, const char *s, size_t n)
{
    static const uint8_t ws[256] = {[' '] = 1, ['\n'] = 1, ['\t'] = 1, ['\r'] = 1};
    size_t i = 0;
    while (i < n) {
        char c = s[i++];
        if (ws[(uint8_t)c])
            continue;
        *o++ = c;
        if (c != '"')
            continue;
        for (;;) { /* in a string: up to its next quote or backslash */
#ifdef __SSE2__
            const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
            while (i + 16 <= n) {
                __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
                _mm_storeu_si128((__m128i *)(void *)o, v);
                unsigned m = (unsigned)_mm_movemask_epi8(
                    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
                if (m) {
                    unsigned k = (unsigned)__builtin_ctz(m);
                    i += k;
                    o += k;
                    goto mark;
                }
                i += 16;
                o += 16;
            }
#endif
            while (i < n && s[i] != '"' && s[i] != '\\')
                *o++ = s[i++];
            if (i >= n)
                return o;
#ifdef __SSE2__
        mark:
#endif
            *o++ = s[i++];
            if (s[i - 1] == '"')
                break;
            if (i < n) /* the escaped character */
                *o++ = s[i++];
        }
    }
    return o;
}

uint32_t tl_raw_add(tl_raw *r, const char *text, size_t n, size_t mark_b, size_t mark_n)
{
    if (r->n == UINT32_MAX - 1 || n > SIZE_MAX / 2 - r->len)
        return 0;
    if (r->n == r->cap_n) {
        uint32_t nc = r->cap_n ? (r->cap_n > UINT32_MAX / 2 ? UINT32_MAX - 1 : r->cap_n * 2) : 1024;
        size_t *ne = tl_big_realloc(r->end, (size_t)nc * sizeof *ne);
        if (!ne)
            return 0;
        r->end = ne;
        uint32_t *nm = tl_big_realloc(r->mark, (size_t)nc * 2 * sizeof *nm);
        if (!nm)
            return 0;
        r->mark = nm;
        r->cap_n = nc;
    }
    if (r->len + n > r->cap) {
        size_t nc = r->cap ? r->cap : 1u << 20;
        while (nc < r->len + n)
            nc *= 2;
        char *nb = tl_big_realloc(r->buf, nc);
        if (!nb)
            return 0;
        r->buf = nb;
        r->cap = nc;
    }
    char *o0 = r->buf + r->len, *o = o0;
    uint32_t *m = r->mark + 2 * (size_t)r->n;
    m[0] = m[1] = 0;
    if (mark_n && mark_b <= n && mark_n <= n - mark_b) {
        o = compact(o, text, mark_b);
        char *mo = o;
        o = compact(o, text + mark_b, mark_n);
        if ((size_t)(mo - o0) < TL_RAW_UNMARKED && (size_t)(o - mo) <= UINT32_MAX) {
            m[0] = (uint32_t)(mo - o0);
            m[1] = (uint32_t)(o - mo);
        } else {
            m[0] = TL_RAW_UNMARKED;
        }
        o = compact(o, text + mark_b + mark_n, n - mark_b - mark_n);
    } else {
        o = compact(o, text, n);
    }
    r->len = (size_t)(o - r->buf);
    r->end[r->n++] = r->len;
    return r->n;
}

const char *tl_mem_cat_name(tl_mem_cat c)
{
    static const char *const names[TL_MEM_CAT_COUNT] = {
        "other", "parameter", "gradient", "optimizer_state", "activation", "input", "temporary"};
    return (unsigned)c < TL_MEM_CAT_COUNT ? names[c] : "other";
}

tl_memev *tl_trace_add_mem(tl_trace *t)
{
    if (t->nmem == t->cap_mem) {
        size_t nc = t->cap_mem ? t->cap_mem * 2 : 1024;
        tl_memev *m = tl_big_realloc(t->mem, nc * sizeof *m);
        if (!m)
            return NULL;
        t->mem = m;
        t->cap_mem = nc;
    }
    tl_memev *m = &t->mem[t->nmem++];
    memset(m, 0, sizeof *m);
    m->total_allocated = m->total_reserved = -1;
    m->device = -1;
    return m;
}

/* Memory events in time order; among equal times (a trace in whole microseconds has many), the
 * order they were added, which is the order they happened on their thread. */
#define MEM_BEFORE(x, y, ctx) ((void)(ctx), (x)->ts < (y)->ts)
TL_NATURAL_MERGE_SORT(mem_sort, tl_memev, void *, MEM_BEFORE)

static int sort_mem(tl_trace *t)
{
    if (t->nmem < 2)
        return 0;
    tl_memev *tmp = tl_big_alloc(t->nmem * sizeof *tmp);
    if (!tmp)
        return -1;
    tl_memev *r = mem_sort(t->mem, tmp, t->nmem, NULL);
    if (r == tmp)
        memcpy(t->mem, tmp, t->nmem * sizeof *tmp);
    free(tmp);
    return r ? 0 : -1;
}

tl_event *tl_trace_add(tl_trace *t)
{
    if (t->nev == t->cap_ev) {
        size_t nc = t->cap_ev < 4096 ? 4096 : t->cap_ev + t->cap_ev / 2;
        tl_event *ne = tl_big_realloc(t->ev, nc * sizeof *ne);
        if (!ne)
            return NULL;
        t->ev = ne;
        t->cap_ev = nc;
    }
    tl_event *e = &t->ev[t->nev++];
    memset(e, 0, sizeof *e);
    e->parent = TL_NONE;
    e->link = TL_NONE;
    return e;
}

int tl_trace_reserve(tl_trace *t, size_t n)
{
    if (n <= t->cap_ev)
        return 0;
    if (n > SIZE_MAX / sizeof *t->ev)
        return -1;
    tl_event *ne = tl_big_realloc(t->ev, n * sizeof *ne);
    if (!ne)
        return -1;
    t->ev = ne;
    t->cap_ev = n;
    return 0;
}

static uint64_t track_hash(int kind, int64_t pid, int64_t tid, int32_t device)
{
    uint64_t h = (uint64_t)pid * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)tid * 0xc2b2ae3d27d4eb4full + (uint64_t)(uint32_t)device * 0x165667b19e3779f9ull;
    h ^= (uint64_t)kind << 7;
    return tl_u64map_mix(h);
}

/* Fill the track hash s (n slots, zeroed) from the tracks. */
static void track_fill(const tl_trace *t, uint32_t *s, uint32_t n)
{
    for (uint32_t k = 0; k < t->ntracks; k++) {
        const tl_track *tr = &t->tracks[k];
        uint32_t i = (uint32_t)track_hash(tr->kind, tr->pid, tr->tid, tr->device) & (n - 1);
        while (s[i])
            i = (i + 1) & (n - 1);
        s[i] = k + 1;
    }
}

static int track_rehash(tl_trace *t, uint32_t n)
{
    uint32_t *s = calloc(n, sizeof *s);
    if (!s)
        return -1;
    track_fill(t, s, n);
    free(t->track_slots_);
    t->track_slots_ = s;
    t->ntrack_slots_ = n;
    return 0;
}

uint32_t tl_trace_find_track(const tl_trace *t, tl_track_kind kind, int64_t pid, int64_t tid,
                             int32_t device)
{
    if (!t->ntrack_slots_)
        return UINT32_MAX;
    uint32_t mask = t->ntrack_slots_ - 1;
    for (uint32_t i = (uint32_t)track_hash(kind, pid, tid, device) & mask;; i = (i + 1) & mask) {
        uint32_t v = t->track_slots_[i];
        if (!v)
            return UINT32_MAX;
        const tl_track *tr = &t->tracks[v - 1];
        if (tr->kind == kind && tr->pid == pid && tr->tid == tid && tr->device == device)
            return v - 1;
    }
}

size_t tl_trace_track_end(const tl_trace *t, size_t i)
{
    uint32_t tr = t->ev[i].track;
    size_t lo = i, step = 1; /* ev[lo] is of the track; find hi past it, then bisect */
    size_t hi = i + 1;
    while (hi < t->nev && t->ev[hi].track == tr) {
        lo = hi;
        step *= 2;
        hi = t->nev - lo > step ? lo + step : t->nev;
    }
    while (hi - lo > 1) { /* ev[lo] of the track; ev[hi] not (or hi == nev) */
        size_t mid = lo + (hi - lo) / 2;
        if (t->ev[mid].track == tr)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}

uint32_t tl_trace_track(tl_trace *t, tl_track_kind kind, int64_t pid, int64_t tid, int32_t device)
{
    if ((t->ntracks + 1) * 2 > t->ntrack_slots_ &&
        track_rehash(t, t->ntrack_slots_ ? t->ntrack_slots_ * 2 : 64) != 0)
        return 0;
    uint32_t mask = t->ntrack_slots_ - 1;
    uint32_t i = (uint32_t)track_hash(kind, pid, tid, device) & mask;
    for (;;) {
        uint32_t v = t->track_slots_[i];
        if (!v)
            break;
        const tl_track *tr = &t->tracks[v - 1];
        if (tr->kind == kind && tr->pid == pid && tr->tid == tid && tr->device == device)
            return v - 1;
        i = (i + 1) & mask;
    }
    if (t->ntracks == t->cap_tracks) {
        uint32_t nc = t->cap_tracks ? t->cap_tracks * 2 : 16;
        tl_track *nt = realloc(t->tracks, nc * sizeof *nt);
        if (!nt)
            return 0;
        t->tracks = nt;
        t->cap_tracks = nc;
    }
    uint32_t k = t->ntracks++;
    tl_track *tr = &t->tracks[k];
    memset(tr, 0, sizeof *tr);
    tr->kind = (uint8_t)kind;
    tr->pid = pid;
    tr->tid = tid;
    tr->device = device;
    t->track_slots_[i] = k + 1;
    return k;
}

int tl_trace_keep_tracks(tl_trace *t, const uint8_t *keep, uint32_t n)
{
    tl_trace_memo_drop(t);
    uint32_t kept = 0;
    for (uint32_t k = 0; k < t->ntracks; k++)
        kept += k < n && keep[k];
    if (kept == t->ntracks)
        return 0;
    uint32_t ns = t->ntrack_slots_;
    while (ns < 64 || ns < (kept + 1) * 2)
        ns *= 2;
    uint32_t *to = malloc(t->ntracks * sizeof *to);
    uint32_t *slots = calloc(ns, sizeof *slots);
    if (!to || !slots) {
        free(to);
        free(slots);
        return -1;
    }
    uint32_t moved = 0;
    kept = 0;
    for (uint32_t k = 0; k < t->ntracks; k++) {
        if (k < n && keep[k]) {
            moved |= kept != k;
            to[k] = kept;
            t->tracks[kept++] = t->tracks[k];
        } else {
            to[k] = UINT32_MAX;
        }
    }
    /* Kineto writes its metadata last, so the tracks dropped are mostly the last ones and no
     * event needs renumbering. */
    if (moved) {
        for (size_t i = 0; i < t->nev; i++)
            if (t->ev[i].track < t->ntracks)
                t->ev[i].track = to[t->ev[i].track];
        /* the memory table's rows name their tracks too (a row's track is kept: it is marked
         * used by whoever added the row) */
        for (size_t i = 0; i < t->nmem; i++)
            if (t->mem[i].track < t->ntracks && to[t->mem[i].track] != UINT32_MAX)
                t->mem[i].track = to[t->mem[i].track];
    }
    free(to);
    t->ntracks = kept;
    track_fill(t, slots, ns);
    free(t->track_slots_);
    t->track_slots_ = slots;
    t->ntrack_slots_ = ns;
    return 0;
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int tl_trace_step_samples(tl_trace *t, int64_t (*samples)[2], size_t n)
{
    tl_trace_memo_drop(t);
    size_t nsteps = 0;
    for (size_t i = 0; i < t->nev; i++)
        nsteps += t->ev[i].cat == TL_CAT_STEP;
    if (!nsteps)
        return 0;
    int64_t *nums = malloc(nsteps * sizeof *nums);
    free(t->step_samples);
    t->step_samples = calloc(nsteps, sizeof *t->step_samples);
    if (!nums || !t->step_samples) {
        free(nums);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].cat == TL_CAT_STEP)
            nums[k++] = t->ev[i].value;
    qsort(nums, nsteps, sizeof *nums, i64_cmp);
    if (n)
        qsort(samples, n, sizeof *samples, i64_cmp); /* by step: the first of each pair */
    for (k = 0; k < nsteps; k++) {
        int64_t key[2] = {nums[k], 0};
        const int64_t(*hit)[2] = n ? bsearch(key, samples, n, sizeof *samples, i64_cmp) : NULL;
        t->step_samples[k] = hit ? (*hit)[1] : 0;
    }
    t->nsteps_samples = nsteps;
    free(nums);
    return 0;
}

tl_device *tl_trace_device(tl_trace *t, int32_t id)
{
    for (uint32_t i = 0; i < t->ndevices; i++)
        if (t->devices[i].id == id)
            return &t->devices[i];
    if (t->ndevices == t->cap_devices) {
        uint32_t nc = t->cap_devices ? t->cap_devices * 2 : 4;
        tl_device *nd = realloc(t->devices, nc * sizeof *nd);
        if (!nd)
            return NULL;
        t->devices = nd;
        t->cap_devices = nc;
    }
    tl_device *d = &t->devices[t->ndevices++];
    memset(d, 0, sizeof *d);
    d->id = id;
    return d;
}

/* [*a, *b) widened to cover e (counters are no time) */
static void span_add(int64_t *a, int64_t *b, const tl_event *e)
{
    if (e->cat == TL_CAT_COUNTER)
        return;
    int64_t end = tl_add_sat(e->ts, e->dur);
    *a = e->ts < *a ? e->ts : *a;
    *b = end > *b ? end : *b;
}

void tl_trace_span(const tl_trace *t, int64_t *t0, int64_t *t1)
{
    if (t->finished && t->finish_known_) {
        *t0 = t->span0_;
        *t1 = t->span1_;
        return;
    }
    int64_t a = INT64_MAX, b = INT64_MIN;
    for (size_t i = 0; i < t->nev; i++)
        span_add(&a, &b, &t->ev[i]);
    if (a > b)
        a = b = 0;
    *t0 = a;
    *t1 = b;
}

const uint32_t *tl_trace_step_spans(const tl_trace *t, size_t *n)
{
    if (!t->finished || !t->finish_known_)
        return NULL;
    static const uint32_t none[1];
    *n = t->nstep_at_;
    return t->step_at_ ? t->step_at_ : none;
}

const char *tl_copy_default_name(const tl_event *e)
{
    if (e->cat == TL_CAT_MEMSET)
        return "Memset (Device)";
    int pageable = (e->flags & TL_EV_PAGEABLE) != 0;
    switch (e->copy) {
    case TL_COPY_HTOD:
        return pageable ? "Memcpy HtoD (Pageable -> Device)" : "Memcpy HtoD (Pinned -> Device)";
    case TL_COPY_DTOH:
        return pageable ? "Memcpy DtoH (Device -> Pageable)" : "Memcpy DtoH (Device -> Pinned)";
    case TL_COPY_DTOD:
        return "Memcpy DtoD (Device -> Device)";
    case TL_COPY_HTOH:
        return "Memcpy HtoH (Host -> Host)";
    case TL_COPY_PTOP:
        return "Memcpy PtoP (Device -> Device)";
    default:
        return "Memcpy";
    }
}

/* ---- finish: order, nesting, links ------------------------------------------------------- */

/* Event order (tl_sorts_before): track, start ascending, longer first, a step first, then the
 * order added. */
static int ev_before(const tl_event *a, size_t ia, const tl_event *b, size_t ib)
{
    return tl_sorts_before(a->track, a->ts, a->dur, a->cat == TL_CAT_STEP, ia, b->track, b->ts,
                           b->dur, b->cat == TL_CAT_STEP, ib);
}

/* The order of ev_before within one track, on a copy of the fields it reads (for tracks far
 * out of order, whose sort would otherwise jump around the events). */
typedef struct sort_key {
    int64_t ts, dur;
    uint32_t idx;  /* the event's index in the order added */
    uint32_t step; /* non-zero for a step (in what was padding) */
} sort_key;

static inline int key_before(const sort_key *a, const sort_key *b, const tl_event *ev)
{
    (void)ev;
    return tl_sorts_before(0, a->ts, a->dur, (int)a->step, a->idx, 0, b->ts, b->dur, (int)b->step,
                           b->idx);
}

static inline int idx_before(const uint32_t *a, const uint32_t *b, const tl_event *ev)
{
    return ev_before(&ev[*a], *a, &ev[*b], *b);
}

TL_NATURAL_MERGE_SORT(sort_idx, uint32_t, const tl_event *, idx_before)
TL_NATURAL_MERGE_SORT(sort_keys, sort_key, const tl_event *, key_before)

/* Permute ev so that position i receives the event at old index perm[i]; perm is consumed. One
 * cycle after another, each moved as it is walked: every move waits for the load before it (a
 * cache miss per event once the events outgrow the cache). For small permutations. */
static void permute_walk(tl_event *ev, uint32_t *perm, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (perm[i] == i)
            continue;
        tl_event tmp = ev[i];
        size_t j = i;
        for (;;) {
            size_t k = perm[j];
            perm[j] = (uint32_t)j;
            if (k == i) {
                ev[j] = tmp;
                break;
            }
            ev[j] = ev[k];
            j = k;
        }
    }
}

/* The same for big ones, in two passes, so that the cache misses overlap instead of waiting for
 * each other. First the cycles are cut into segments by walkers taking steps in turn along perm
 * (4 bytes an event, not the events), each starting at the first position nobody has visited in
 * its thread's share of the positions: a walker's segment ends where its next step would land on
 * a visited position, which can only be a segment's start (every position has one predecessor
 * along perm: a walker reaches it from there, or takes it as a start). Walkers of several
 * threads claim positions by compare-and-swap of perm's PERM_SEEN bit; a claim lost to a start
 * ends the segment there, as a start found visited does. A thread's seq gets each position its
 * walkers visit (segments interleaved, each in its order); SEQ_SAVED marks the positions whose
 * source is a segment's start. Then the events at the starts are saved, and each thread makes
 * its own segments' moves in seq's order: position p receives the event at perm[p], which is
 * still in place (its own move comes later in the same segment) or, for a start, saved; segments
 * never touch each other's events. The addresses come from arrays, not from the loads before,
 * and are prefetched. */
#define PERM_SEEN        0x80000000u /* in perm: the position is visited */
#define SEQ_SAVED        0x80000000u /* in seq: the source is a segment's start */
#define WALKERS          16          /* walkers of one thread */
#define WALK_THREADS_MAX 16

/* The moves of one thread's segments, in their order (see above) */
typedef struct perm_moves {
    tl_event *ev;
    const uint32_t *perm, *seq, *starts;
    const tl_event *saved;
    size_t m, nstarts;
} perm_moves;

static void *do_moves(void *arg)
{
    const perm_moves *g = arg;
    tl_event *ev = g->ev;
    const uint32_t *perm = g->perm, *seq = g->seq;
    size_t m = g->m;
    for (size_t t = 0; t < m; t++) {
        if (t + 32 < m)
            __builtin_prefetch(&perm[seq[t + 32] & ~SEQ_SAVED]);
        if (t + 16 < m)
            __builtin_prefetch(&ev[perm[seq[t + 16] & ~SEQ_SAVED] & ~PERM_SEEN]);
        uint32_t x = seq[t], pos = x & ~SEQ_SAVED, src = perm[pos] & ~PERM_SEEN;
        if (x & SEQ_SAVED) {
            size_t lo = 0, hi = g->nstarts; /* src is starts[k] */
            while (hi - lo > 1) {
                size_t mid = (lo + hi) / 2;
                if (g->starts[mid] <= src)
                    lo = mid;
                else
                    hi = mid;
            }
            ev[pos] = g->saved[lo];
        } else {
            ev[pos] = ev[src];
        }
    }
    return NULL;
}

/* One thread's walk: its walkers start segments from positions in [lo, hi) (ascending, into
 * starts) and step wherever perm leads, recording every position they visit in seq. */
typedef struct perm_walk {
    uint32_t *perm;
    size_t lo, hi;
    uint32_t *seq; /* n room (only what it gets is touched) */
    size_t m;
    uint32_t *starts;
    size_t nstarts, cap_starts;
    int failed;
} perm_walk;

/* Claim position j for the walk: 1 when this call marked it visited (*v its source), 0 when it
 * was visited already. */
static inline int perm_claim(uint32_t *perm, size_t j, uint32_t *v)
{
    uint32_t x = __atomic_load_n(&perm[j], __ATOMIC_RELAXED);
    while (!(x & PERM_SEEN))
        if (__atomic_compare_exchange_n(&perm[j], &x, x | PERM_SEEN, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            *v = x;
            return 1;
        }
    return 0;
}

static void *perm_walk_main(void *arg)
{
    perm_walk *g = arg;
    uint32_t *perm = g->perm;
    uint32_t cur[WALKERS];
    size_t last[WALKERS], cursor = g->lo;
    int active[WALKERS], live = 0;
    /* a walker takes the first position of its share not visited and not in place, or stops */
#define START(w)                                                                                   \
    do {                                                                                           \
        uint32_t v_;                                                                               \
        active[w] = 0;                                                                             \
        for (; cursor < g->hi; cursor++) {                                                         \
            uint32_t x_ = __atomic_load_n(&perm[cursor], __ATOMIC_RELAXED);                        \
            if ((x_ & PERM_SEEN) || x_ == cursor || !perm_claim(perm, cursor, &v_))                \
                continue;                                                                          \
            if (tl_grow_array(&g->starts, &g->cap_starts, g->nstarts + 1, sizeof *g->starts)) {    \
                g->failed = 1;                                                                     \
                break;                                                                             \
            }                                                                                      \
            g->starts[g->nstarts++] = (uint32_t)cursor;                                            \
            last[w] = g->m;                                                                        \
            g->seq[g->m++] = (uint32_t)cursor;                                                     \
            cur[w] = v_;                                                                           \
            __builtin_prefetch(&perm[v_], 1);                                                      \
            active[w] = 1;                                                                         \
            cursor++;                                                                              \
            break;                                                                                 \
        }                                                                                          \
    } while (0)
    for (int w = 0; w < WALKERS; w++) {
        START(w);
        live += active[w];
    }
    while (live && !g->failed) {
        for (int w = 0; w < WALKERS; w++) {
            if (!active[w])
                continue;
            uint32_t j = cur[w], v;
            if (!perm_claim(perm, j, &v)) { /* a start: the segment ends */
                g->seq[last[w]] |= SEQ_SAVED;
                START(w);
                live -= !active[w];
            } else {
                last[w] = g->m;
                g->seq[g->m++] = j;
                cur[w] = v;
                __builtin_prefetch(&perm[v], 1);
            }
        }
    }
#undef START
    return NULL;
}

/* groups: the threads that walk (each its share of the starts) and then make their segments'
 * moves. */
static int permute_segments(tl_event *ev, uint32_t *perm, size_t n, int groups)
{
    if (groups < 1)
        groups = 1;
    if (groups > WALK_THREADS_MAX)
        groups = WALK_THREADS_MAX;
    perm_walk wk[WALK_THREADS_MAX];
    memset(wk, 0, sizeof wk);
    uint32_t *starts = NULL;
    tl_event *saved = NULL;
    size_t nstarts = 0;
    int rc = -1, failed = 0;
    for (int g = 0; g < groups; g++) {
        wk[g].perm = perm;
        wk[g].lo = n * (size_t)g / (size_t)groups;
        wk[g].hi = n * (size_t)(g + 1) / (size_t)groups;
        if (!(wk[g].seq = tl_big_alloc(n * sizeof *wk[g].seq)))
            goto done;
    }
    tl_run_each(perm_walk_main, wk, sizeof *wk, groups);
    for (int g = 0; g < groups; g++) {
        failed |= wk[g].failed;
        nstarts += wk[g].nstarts;
    }
    /* the starts of every thread, ascending (each thread's share of the positions in turn), and
     * their events saved before anything moves */
    starts = malloc((nstarts ? nstarts : 1) * sizeof *starts);
    saved = tl_big_alloc((nstarts ? nstarts : 1) * sizeof *saved);
    if (failed || !starts || !saved)
        goto done;
    nstarts = 0;
    for (int g = 0; g < groups; g++) {
        if (wk[g].nstarts) /* a thread that started no segment has no array */
            memcpy(starts + nstarts, wk[g].starts, wk[g].nstarts * sizeof *starts);
        nstarts += wk[g].nstarts;
    }
    for (size_t k = 0; k < nstarts; k++)
        saved[k] = ev[starts[k]];
    perm_moves mv[WALK_THREADS_MAX];
    for (int g = 0; g < groups; g++)
        mv[g] = (perm_moves){ev, perm, wk[g].seq, starts, saved, wk[g].m, nstarts};
    tl_run_each(do_moves, mv, sizeof *mv, groups);
    for (size_t i = 0; i < n; i++) /* perm is consumed: each position in place */
        perm[i] = (uint32_t)i;
    rc = 0;
done:
    if (rc != 0) /* nothing moved: perm as it was */
        for (size_t i = 0; i < n; i++)
            perm[i] &= ~PERM_SEEN;
    for (int g = 0; g < groups; g++) {
        free(wk[g].seq);
        free(wk[g].starts);
    }
    free(starts);
    free(saved);
    return rc;
}

/* Below this many events the walk is as fast (the events are in cache). */
#define PERMUTE_WALK_MAX (1u << 16)

int tl_permute_events(tl_event *ev, uint32_t *perm, size_t n, int segments, int threads)
{
    if (n > INT32_MAX)
        return -1;
    if (!(segments > 0 || (segments < 0 && n > PERMUTE_WALK_MAX)) ||
        permute_segments(ev, perm, n, threads) != 0)
        permute_walk(ev, perm, n);
    return 0;
}

/* Sort one track's indices (seg, in the order added), which come in runs runs. Few runs: merge
 * the indices, comparing the events, which are read nearly in order. Many: the events are far
 * out of order and comparing them would jump around memory, so sort keys instead. */
static int sort_track(const tl_event *ev, uint32_t *seg, size_t c, size_t runs, uint32_t *tmp)
{
    if (runs <= 2 + c / 256) {
        uint32_t *res = sort_idx(seg, tmp, c, ev);
        if (!res)
            return -1;
        if (res != seg)
            memcpy(seg, res, c * sizeof *seg);
        return 0;
    }
    sort_key *k = tl_big_alloc(2 * c * sizeof *k);
    if (!k)
        return -1;
    for (size_t j = 0; j < c; j++)
        k[j] = (sort_key){ev[seg[j]].ts, ev[seg[j]].dur, seg[j], ev[seg[j]].cat == TL_CAT_STEP};
    sort_key *res = sort_keys(k, k + c, c, ev);
    if (res)
        for (size_t j = 0; j < c; j++)
            seg[j] = res[j].idx;
    free(k);
    return res ? 0 : -1;
}

/* The tracks whose events came out of order, sorted by threads that each take the biggest one
 * left (each track's indices are its own slice of perm). */
typedef struct track_sorts {
    const tl_event *ev;
    uint32_t *perm;
    const size_t *start, *runs;
    const uint64_t *order; /* the tracks to sort (low 32 bits), biggest first */
    size_t norder;
    _Atomic size_t next;
    _Atomic int failed;
} track_sorts;

static void *sort_tracks_main(void *arg)
{
    track_sorts *s = arg;
    uint32_t *tmp = NULL; /* the size of the first track taken: the biggest this thread gets */
    for (size_t k; !atomic_load(&s->failed) && (k = atomic_fetch_add(&s->next, 1)) < s->norder;) {
        uint32_t tr = (uint32_t)s->order[k];
        size_t c = s->start[tr + 1] - s->start[tr];
        if ((!tmp && !(tmp = tl_big_alloc(c * sizeof *tmp))) ||
            sort_track(s->ev, s->perm + s->start[tr], c, s->runs[tr] + 1, tmp) != 0)
            atomic_store(&s->failed, 1);
    }
    free(tmp);
    return NULL;
}

static void *sort_tracks_each(void *arg)
{
    return sort_tracks_main(*(track_sorts **)arg);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A track of two runs (one pair out of order), merged by threads: the output is cut into pieces
 * at positions whose split between the two runs a binary search finds (the order is strict, so
 * the merge is the one the sort gives). */
typedef struct merge_piece {
    const tl_event *ev;
    const uint32_t *a, *b; /* the runs */
    size_t na, nb;
    uint32_t *out;
    size_t k0, k1; /* the piece: out[k0, k1) */
} merge_piece;

/* How many of the first k merged come from a. */
static size_t merge_split(const merge_piece *m, size_t k)
{
    size_t lo = k > m->nb ? k - m->nb : 0, hi = k < m->na ? k : m->na;
    while (lo < hi) {
        size_t i = lo + (hi - lo) / 2, j = k - i;
        if (j > 0 && idx_before(&m->a[i], &m->b[j - 1], m->ev))
            lo = i + 1;
        else
            hi = i;
    }
    return lo;
}

static void *merge_piece_main(void *arg)
{
    const merge_piece *m = arg;
    size_t i = merge_split(m, m->k0), ie = merge_split(m, m->k1);
    size_t j = m->k0 - i, je = m->k1 - ie;
    uint32_t *o = m->out + m->k0;
    while (i < ie && j < je)
        *o++ = idx_before(&m->b[j], &m->a[i], m->ev) ? m->b[j++] : m->a[i++];
    while (i < ie)
        *o++ = m->a[i++];
    while (j < je)
        *o++ = m->b[j++];
    return NULL;
}

/* Merge the c indices of seg, two runs that meet where the event brk is (seg holds a track's
 * indices in the order added: ascending), with tmp (c of them) and up to threads threads. */
static void merge_two_runs(const tl_event *ev, uint32_t *seg, size_t c, size_t brk, uint32_t *tmp,
                           int threads)
{
    size_t m = 0, hi = c; /* the first index >= brk */
    while (m < hi) {
        size_t mid = m + (hi - m) / 2;
        if (seg[mid] < brk)
            m = mid + 1;
        else
            hi = mid;
    }
    merge_piece pieces[64];
    int k = threads < 1 ? 1 : threads > 64 ? 64 : threads;
    for (int p = 0; p < k; p++)
        pieces[p] = (merge_piece){ev,
                                  seg,
                                  seg + m,
                                  m,
                                  c - m,
                                  tmp,
                                  c * (size_t)p / (size_t)k,
                                  c * (size_t)(p + 1) / (size_t)k};
    tl_run_each(merge_piece_main, pieces, sizeof *pieces, k);
    memcpy(seg, tmp, c * sizeof *seg);
}

#define MERGE_APART_MIN (1u << 18) /* events of a two-run track merged by threads */

/* Whether track tr is one that all the threads merge (two runs, big), given threads. */
static int merged_apart(const size_t *start, const size_t *runs, size_t tr, int threads)
{
    return threads > 1 && runs[tr] == 1 && start[tr + 1] - start[tr] >= MERGE_APART_MIN;
}

static int sort_tracks(const tl_event *ev, uint32_t *perm, const size_t *start, const size_t *runs,
                       const size_t *brk, size_t ntr, int threads)
{
    /* Big tracks of two runs first, each merged by all the threads (a trace of two host threads
     * whose events came in two runs each is otherwise sorted by two threads), then the others,
     * each by one thread (those too when there is no memory for the merge) */
    size_t norder = 0, total = 0, big = 0;
    for (size_t tr = 0; tr < ntr; tr++)
        if (merged_apart(start, runs, tr, threads) && start[tr + 1] - start[tr] > big)
            big = start[tr + 1] - start[tr];
    uint32_t *mtmp = big ? tl_big_alloc(big * sizeof *mtmp) : NULL;
    int apart = mtmp ? threads : 1;
    for (size_t tr = 0; tr < ntr; tr++)
        if (merged_apart(start, runs, tr, apart))
            merge_two_runs(ev, perm + start[tr], start[tr + 1] - start[tr], brk[tr], mtmp, apart);
    free(mtmp);
    for (size_t tr = 0; tr < ntr; tr++)
        norder += runs[tr] != 0 && !merged_apart(start, runs, tr, apart);
    uint64_t *order = malloc((norder ? norder : 1) * sizeof *order);
    if (!order)
        return -1;
    norder = 0;
    for (size_t tr = 0; tr < ntr; tr++)
        if (runs[tr] && !merged_apart(start, runs, tr, apart)) { /* biggest first (a track holds
                                                                     fewer than 2^31 events),
                                                                     then by id */
            size_t c = start[tr + 1] - start[tr];
            order[norder++] = ((uint64_t)(INT32_MAX - c) << 32) | tr;
            total += c;
        }
    qsort(order, norder, sizeof *order, cmp_u64);
    track_sorts s = {ev, perm, start, runs, order, norder, 0, 0};
    /* threads only where there is enough to share: a track is not split */
    if (total < PERMUTE_WALK_MAX || norder < 2)
        threads = 1;
    if ((size_t)threads > norder)
        threads = (int)norder;
    track_sorts *each[64]; /* every thread takes tracks from the one queue */
    for (int k = 0; k < threads && k < 64; k++)
        each[k] = &s;
    tl_run_each(sort_tracks_each, each, sizeof *each, threads < 64 ? threads : 64);
    free(order);
    return atomic_load(&s.failed) ? -1 : 0;
}

int tl_trace_threads(const tl_trace *t)
{
    return t->read_threads > 0 ? t->read_threads : tl_default_threads();
}

/* One part of the events for count_tracks: per track, how many, the first and last, and the
 * pairs out of order among them; then (fill) the part's indices into their tracks' slots. */
typedef struct count_part {
    const tl_event *ev;
    size_t lo, hi, ntr;
    size_t *cnt;         /* events of each track; after the counting, where the next one goes */
    size_t *first, *end; /* the track's first and last event in the part (SIZE_MAX: none) */
    size_t *runs;        /* pairs out of order inside the part */
    size_t *brk;         /* the later event of such a pair (the last one) */
    uint32_t *perm;
    int fill, bad;
} count_part;

static void *count_range(void *arg)
{
    count_part *p = arg;
    const tl_event *ev = p->ev;
    if (p->fill) {
        for (size_t i = p->lo; i < p->hi; i++)
            p->perm[p->cnt[ev[i].track]++] = (uint32_t)i;
        return NULL;
    }
    for (size_t i = p->lo; i < p->hi; i++) {
        uint32_t tr = ev[i].track;
        if (tr >= p->ntr) {
            p->bad = 1;
            return NULL;
        }
        p->cnt[tr]++;
        if (p->end[tr] == SIZE_MAX)
            p->first[tr] = i;
        else if (!ev_before(&ev[p->end[tr]], p->end[tr], &ev[i], i)) {
            p->runs[tr]++;
            p->brk[tr] = i;
        }
        p->end[tr] = i;
    }
    return NULL;
}

/* The stable counting sort of the events by track, in parts counted and filled by threads:
 * start[tr] the track's first slot (start[ntr] = n), runs[tr] (zeroed by the caller) the pairs
 * of its events out of order in the order added, brk[tr] the later event of one such pair,
 * perm the indices by track, *maxseg the longest track with runs. -1 when an event's track is
 * out of range, or out of memory. */
static int count_tracks(tl_trace *t, size_t ntr, size_t *start, size_t *runs, size_t *brk,
                        uint32_t *perm, size_t *maxseg)
{
    size_t n = t->nev;
    int k = n < PERMUTE_WALK_MAX ? 1 : tl_trace_threads(t);
    k = k > 64 ? 64 : k;
    while (k > 1 && (size_t)k * ntr > ((size_t)1 << 20)) /* per-part arrays stay small */
        k--;
    size_t *mem = malloc((size_t)k * ntr * 5 * sizeof *mem);
    if (!mem)
        return -1;
    count_part parts[64];
    for (int c = 0; c < k; c++) {
        size_t *a = mem + (size_t)c * ntr * 5;
        parts[c] = (count_part){t->ev,
                                n / (size_t)k * (size_t)c,
                                c + 1 == k ? n : n / (size_t)k * (size_t)(c + 1),
                                ntr,
                                a,
                                a + ntr,
                                a + 2 * ntr,
                                a + 3 * ntr,
                                a + 4 * ntr,
                                perm,
                                0,
                                0};
        memset(a, 0, ntr * sizeof *a);
        memset(a + ntr, 0xff, 2 * ntr * sizeof *a);
        memset(a + 3 * ntr, 0, 2 * ntr * sizeof *a);
    }
    tl_run_each(count_range, parts, sizeof *parts, k);
    int bad = 0;
    for (int c = 0; c < k; c++)
        bad |= parts[c].bad;
    if (bad) {
        free(mem);
        return -1;
    }
    /* the tracks' slots in order, each part's share of them in part order; a track's pairs out
     * of order include those across the parts' seams */
    size_t at = 0;
    *maxseg = 0;
    for (size_t tr = 0; tr < ntr; tr++) {
        start[tr] = at;
        size_t prev = SIZE_MAX;
        for (int c = 0; c < k; c++) {
            count_part *p = &parts[c];
            if (!p->cnt[tr])
                continue;
            if (p->runs[tr]) {
                runs[tr] += p->runs[tr];
                brk[tr] = p->brk[tr];
            }
            if (prev != SIZE_MAX &&
                !ev_before(&t->ev[prev], prev, &t->ev[p->first[tr]], p->first[tr])) {
                runs[tr]++;
                brk[tr] = p->first[tr];
            }
            prev = p->end[tr];
            size_t cnt = p->cnt[tr];
            p->cnt[tr] = at;
            at += cnt;
        }
        if (runs[tr] && at - start[tr] > *maxseg)
            *maxseg = at - start[tr];
    }
    start[ntr] = at;
    for (int c = 0; c < k; c++)
        parts[c].fill = 1;
    tl_run_each(count_range, parts, sizeof *parts, k);
    free(mem);
    return 0;
}

/* Breaks (an event out of order with the one before it on its own track) that the order check
 * keeps: one in GROUPED_RUN_MIN events of a part at most (at least 64); a trace with more goes
 * the general way. */
#define GROUPED_RUN_MIN 64

/* One part of the events for sort_events' check of the order: the first event out of order in
 * [lo, hi) (bad; hi when none) and the largest track before it; and whether the part keeps each
 * track's events together, tracks ascending (grouped), with its breaks (brk, nbrk) when it does
 * and they are few. The scan goes on past bad only while that can still hold. */
typedef struct order_part {
    const tl_event *ev;
    size_t lo, hi, bad;
    uint32_t maxtr;
    int grouped;
    size_t *brk, nbrk, cap_brk; /* malloc'ed (the caller frees) */
} order_part;

static void *order_range(void *arg)
{
    order_part *p = arg;
    const tl_event *ev = p->ev;
    p->bad = p->hi;
    p->grouped = 1;
    p->nbrk = 0;
    for (size_t i = p->lo; i < p->hi; i++) {
        if (i && !ev_before(&ev[i - 1], i - 1, &ev[i], i)) {
            if (p->bad == p->hi)
                p->bad = i;
            size_t most = (p->hi - p->lo) / GROUPED_RUN_MIN;
            if (ev[i].track != ev[i - 1].track || p->nbrk >= (most > 64 ? most : 64) ||
                tl_grow_array(&p->brk, &p->cap_brk, p->nbrk + 1, sizeof *p->brk) != 0) {
                p->grouped = 0; /* a track again after another, too many breaks, no memory */
                break;
            }
            p->brk[p->nbrk++] = i;
        }
        if (p->bad == p->hi && ev[i].track > p->maxtr)
            p->maxtr = ev[i].track;
    }
    return NULL;
}

/* Whether a comes strictly before b on one track: the order without its last key (ties:
 * neither). */
static inline int ev_key_before(const tl_event *a, const tl_event *b)
{
    return ev_before(a, 0, b, 0);
}

/* The first of ev[lo, hi) (in order) that x comes strictly before (after: 0) or that does not
 * come strictly before x (after: 1). */
static size_t run_search(const tl_event *ev, size_t lo, size_t hi, const tl_event *x, int after)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (after ? ev_key_before(&ev[mid], x) : !ev_key_before(x, &ev[mid]))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A thread's buffer for the merges: grown up to limit events. */
typedef struct merge_buf {
    tl_event *p;
    size_t cap, limit;
} merge_buf;

/* The most pieces a merge splits its shorter run into to keep within its buffer */
#define MERGE_PIECES_MAX 8

/* Merge the adjacent runs ev[lo, m) and ev[m, hi), each in order: stable, so events that tie keep
 * the order they were added in (the sort's last key). Only where they overlap moves: the first
 * run's events before the second's first and the second's after the first's last stay, so an
 * event a little out of place costs little; the shorter of what is left goes through the buffer,
 * in pieces when it is longer than the buffer's limit. 0; 1 when it would take more than
 * MERGE_PIECES_MAX pieces (nothing moved); -1 out of memory. */
static int merge_adjacent(tl_event *ev, size_t lo, size_t m, size_t hi, merge_buf *mb)
{
    lo = run_search(ev, lo, m, &ev[m], 0);
    hi = run_search(ev, m, hi, &ev[m - 1], 1);
    size_t short_n = m - lo < hi - m ? m - lo : hi - m;
    if (!short_n)
        return 0;
    if (short_n > mb->limit) {
        /* The shorter run in pieces that fit: the second's front first, each merged with all
         * before it, or the first's back first, each with all after it. The longer run's
         * events move once a piece (a few times in all), still far less than the general way,
         * and in order: stable, as the pieces keep their order. */
        size_t piece = mb->limit;
        if (!piece || short_n / piece >= MERGE_PIECES_MAX)
            return 1;
        for (size_t b = m, e; hi - m == short_n && b < hi; b = e) {
            e = hi - b > piece ? b + piece : hi;
            int rc = merge_adjacent(ev, lo, b, e, mb);
            if (rc != 0)
                return rc;
        }
        for (size_t e = m, b; hi - m != short_n && e > lo; e = b) {
            b = e - lo > piece ? e - piece : lo;
            int rc = merge_adjacent(ev, b, e, hi, mb);
            if (rc != 0)
                return rc;
        }
        return 0;
    }
    if (short_n > mb->cap) {
        if (short_n > mb->limit)
            return 1;
        size_t cap = short_n * 2 < mb->limit ? short_n * 2 : mb->limit;
        free(mb->p);
        if (!(mb->p = tl_big_alloc(cap * sizeof *mb->p))) {
            mb->cap = 0;
            return -1;
        }
        mb->cap = cap;
    }
    tl_event *buf = mb->p;
    if (m - lo <= hi - m) { /* the first run into buf, merged forwards */
        size_t na = m - lo, i = 0, j = m, o = lo;
        memcpy(buf, ev + lo, na * sizeof *ev);
        while (i < na && j < hi)
            ev[o++] = ev_key_before(&ev[j], &buf[i]) ? ev[j++] : buf[i++];
        memcpy(ev + o, buf + i, (na - i) * sizeof *ev);
    } else { /* the second into buf, merged backwards */
        size_t i = m, j = hi - m, o = hi;
        memcpy(buf, ev + m, j * sizeof *ev);
        while (i > lo && j > 0)
            ev[--o] = ev_key_before(&buf[j - 1], &ev[i - 1]) ? ev[--i] : buf[--j];
        memcpy(ev + lo, buf, j * sizeof *ev);
    }
    return 0;
}

/* A track out of order whose events are together: its runs begin at bnd[0 .. nbnd - 1] and it
 * ends at bnd[nbnd]. */
typedef struct grouped_track {
    size_t *bnd, nbnd;
} grouped_track;

/* Merge a track's runs pairwise, round after round (the boundaries kept are every other one).
 * Merges are stable, so a track left half merged (1: the buffer's limit) sorts the same after. */
static int merge_runs(tl_event *ev, grouped_track *g, merge_buf *mb)
{
    size_t *bnd = g->bnd, r = g->nbnd;
    while (r > 1) {
        size_t w = 0;
        for (size_t q = 0; q + 1 < r; q += 2) {
            int rc = merge_adjacent(ev, bnd[q], bnd[q + 1], bnd[q + 2], mb);
            if (rc != 0)
                return rc;
            bnd[w++] = bnd[q];
        }
        if (r % 2)
            bnd[w++] = bnd[r - 1];
        bnd[w] = bnd[r];
        r = w;
    }
    return 0;
}

typedef struct grouped_sort {
    tl_event *ev;
    grouped_track *tracks;
    size_t ntracks, limit; /* limit: each thread's buffer, events */
    _Atomic size_t next;
    _Atomic int rc; /* the worst: -1 out of memory, 1 a buffer over its limit */
} grouped_sort;

static void *grouped_sort_main(void *arg)
{
    grouped_sort *s = *(grouped_sort **)arg;
    merge_buf mb = {NULL, 0, s->limit};
    for (size_t k; atomic_load(&s->rc) == 0 && (k = atomic_fetch_add(&s->next, 1)) < s->ntracks;) {
        int rc = merge_runs(s->ev, &s->tracks[k], &mb);
        if (rc != 0) {
            int zero = 0;
            atomic_compare_exchange_strong(&s->rc, &zero, rc);
        }
    }
    free(mb.p);
    return NULL;
}

/* The first event at or after lo whose track is at least tr (the tracks ascend). */
static size_t track_lower_bound(const tl_event *ev, size_t lo, size_t hi, uint32_t tr)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ev[mid].track < tr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Buffers of the merges in all: the general way's index array (4 bytes an event), or 4 MB */
#define GROUPED_BUF_MIN ((size_t)4 << 20)

/* Events whose tracks each come together, tracks ascending, with few breaks (the .tally reader
 * lays them out so): each track out of order is a few runs back to back, merged in place, tracks
 * in threads. No permutation, no comparison sort. 0 when sorted; 1 when a merge would take more
 * room than the general way's index array (the caller goes that way: what was merged sorts the
 * same); -1 out of memory. */
static int sort_grouped(tl_trace *t, const order_part *parts, int k)
{
    size_t n = t->nev, nbrk = 0;
    tl_event *ev = t->ev;
    for (int c = 0; c < k; c++)
        nbrk += parts[c].nbrk;
    /* a track's boundaries: its start, its breaks, its end */
    size_t *bnd = malloc(3 * nbrk * sizeof *bnd);
    grouped_track *g = malloc(nbrk * sizeof *g);
    int rc = -1;
    if (!bnd || !g)
        goto done;
    size_t ng = 0, nb = 0;
    for (int c = 0; c < k; c++)
        for (size_t q = 0; q < parts[c].nbrk; q++) {
            size_t at = parts[c].brk[q];
            uint32_t tr = ev[at].track;
            if (ng && ev[g[ng - 1].bnd[0]].track == tr) { /* another break of the same track */
                grouped_track *last = &g[ng - 1];
                last->bnd[last->nbnd + 1] = last->bnd[last->nbnd]; /* its end moves up one */
                last->bnd[last->nbnd++] = at;
                nb++;
                continue;
            }
            grouped_track *x = &g[ng++];
            x->bnd = bnd + nb;
            x->bnd[0] = track_lower_bound(ev, 0, at, tr);
            x->bnd[1] = at;
            x->bnd[2] = track_lower_bound(ev, at, n, tr + 1);
            x->nbnd = 2;
            nb += 3;
        }
    int threads = tl_trace_threads(t);
    threads = threads > (int)ng ? (int)ng : threads > 64 ? 64 : threads;
    size_t room = n * sizeof(uint32_t);
    room = (room > GROUPED_BUF_MIN ? room : GROUPED_BUF_MIN) / sizeof *ev;
    grouped_sort s = {ev, g, ng, room / (size_t)threads, 0, 0};
    grouped_sort *each[64];
    for (int q = 0; q < threads; q++)
        each[q] = &s;
    tl_run_each(grouped_sort_main, each, sizeof *each, threads);
    rc = atomic_load(&s.rc);
    if (rc == 0)
        for (size_t q = 0; q < ng; q++)
            t->read_stats.merged += g[q].bnd[1] - g[q].bnd[0]; /* the track, merged */
done:
    free(bnd);
    free(g);
    return rc;
}

/* Readers add a track's events nearly in order (a thread's ops, a stream's kernels), but tracks
 * interleave: Kineto writes runtime calls and the kernels they launch in launch order, and
 * appends them after the threads' ops. So the order is found as a stable counting sort by track
 * (4 bytes an event), then only the tracks whose events did not come in order are sorted, and
 * the events are permuted once. There is no comparison sort of the whole trace. */
static int sort_events(tl_trace *t)
{
    size_t n = t->nev;
    tl_event *ev = t->ev;
    /* in order already? The first event out of order (i0) and the tracks before it, found in
     * parts by threads: a trace read in order is scanned whole */
    int k = n < PERMUTE_WALK_MAX ? 1 : tl_trace_threads(t);
    k = k > 64 ? 64 : k;
    t->read_stats.merged = t->read_stats.permuted = 0;
    order_part parts[64];
    for (int c = 0; c < k; c++) {
        memset(&parts[c], 0, sizeof parts[c]);
        parts[c].ev = ev;
        parts[c].lo = n / (size_t)k * (size_t)c;
        parts[c].hi = c + 1 == k ? n : n / (size_t)k * (size_t)(c + 1);
    }
    tl_run_each(order_range, parts, sizeof *parts, k);
    uint32_t maxtr = 0;
    size_t i0 = n;
    for (int c = 0; c < k && i0 == n; c++) {
        maxtr = parts[c].maxtr > maxtr ? parts[c].maxtr : maxtr;
        if (parts[c].bad < parts[c].hi)
            i0 = parts[c].bad;
    }
    if (i0 >= n || n < 2)
        return 0;
    int grouped = ev[n - 1].track < t->ntracks;
    for (int c = 0; c < k; c++)
        grouped &= parts[c].grouped;
    int g = grouped ? sort_grouped(t, parts, k) : 1;
    for (int c = 0; c < k; c++)
        free(parts[c].brk);
    if (g <= 0)
        return g;
    if (n > UINT32_MAX)
        return -1;
    /* every event is on one of the trace's tracks (the views index t->tracks by it); one that
     * is not fails the finish */
    size_t ntr = (size_t)(t->ntracks > maxtr ? t->ntracks : maxtr + 1);
    size_t *start = malloc((ntr + 1) * sizeof *start); /* the track's first slot */
    size_t *runs = calloc(ntr, sizeof *runs);          /* runs in order, minus one */
    size_t *brk = calloc(ntr, sizeof *brk);            /* where one of them starts */
    uint32_t *perm = tl_big_alloc(n * sizeof *perm);
    size_t maxseg = 0;
    int rc = -1;
    if (!start || !runs || !brk || !perm)
        goto done;
    if (count_tracks(t, ntr, start, runs, brk, perm, &maxseg) != 0)
        goto done;
    if (maxseg && sort_tracks(ev, perm, start, runs, brk, ntr, tl_trace_threads(t)) != 0)
        goto done;
    /* In place, at any size: copying into a second array reads the events in near-sequential
     * streams, but takes a second copy of the events for its length (peak memory 0.24 -> 0.34 of
     * a 1-2 GB file, over the 0.3 the reader keeps to), and its fresh pages cost about what the
     * cycles' cache misses cost (measured twice: 1 GB the same time; 2 GB 5 % faster copied). */
    tl_permute_events(ev, perm, n, -1, tl_trace_threads(t));
    t->read_stats.permuted = n;
    rc = 0;
done:
    free(start);
    free(runs);
    free(brk);
    free(perm);
    return rc;
}

/* Spans that nest on a host track: everything but device work, counters and async ranges. */
static int nests(const tl_event *e)
{
    return !tl_cat_is_device((tl_cat)e->cat) && e->cat != TL_CAT_COUNTER &&
           !(e->flags & TL_EV_ASYNC);
}

/* What tl_trace_finish's later steps need to know, counted on the way: the runtime and driver
 * calls with a correlation id (how many, the ids' range) and the copies without a name */
typedef struct finish_counts {
    size_t calls, unnamed;
    int64_t corr_lo, corr_hi;
    int64_t span0, span1; /* tl_trace_span's */
    struct call_ref {     /* the calls, in order (the nesting lists them: the links then read */
        int64_t corr;     /* them, not every event); NULL: not listed */
        uint32_t at;
    } * call_at;
} finish_counts;

#define FINISH_COUNTS_INIT                                                                         \
    {                                                                                              \
        0, 0, INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, NULL                                     \
    }

/* The nesting of the events [lo, hi), whole tracks (see compute_nesting), and their counts */
typedef struct nest_part {
    tl_trace *t;
    size_t lo, hi;
    int failed;
    finish_counts c;
    uint32_t *steps; /* the step spans' indices */
    size_t nsteps, cap_steps;
    struct tl_cat_run *runs; /* its runs of one track (tl_cat_walk); NULL after no memory */
    size_t nruns, cap_runs;
    int runs_failed;
    struct call_ref *calls; /* the calls (is_call), in order */
    size_t cap_calls;
    int calls_failed;
} nest_part;

static int is_call(const tl_event *e)
{
    return e->corr && (e->cat == TL_CAT_RUNTIME || e->cat == TL_CAT_DRIVER);
}

/* Counts e into c; whether it is a call. */
static int count_event(finish_counts *c, const tl_event *e)
{
    int call = is_call(e);
    if (call) {
        c->calls++;
        c->corr_lo = e->corr < c->corr_lo ? e->corr : c->corr_lo;
        c->corr_hi = e->corr > c->corr_hi ? e->corr : c->corr_hi;
    }
    c->unnamed += !e->name && (e->cat == TL_CAT_MEMCPY || e->cat == TL_CAT_MEMSET);
    span_add(&c->span0, &c->span1, e);
    return call;
}

static void *nest_range(void *arg)
{
    nest_part *np = arg;
    tl_trace *t = np->t;
    size_t cap = 256, top = 0;
    /* the spans open: each one's index, start and end (not read again from its event) */
    struct open_span {
        int64_t ts, end;
        int32_t i;
    } *stack = malloc(cap * sizeof *stack);
    np->failed = !stack;
    uint32_t cur_track = UINT32_MAX;
    uint32_t cats = 0; /* of the run open, written when the next starts */
    for (size_t i = np->lo; i < np->hi && stack; i++) {
        tl_event *e = &t->ev[i];
        if (count_event(&np->c, e) && !np->calls_failed) {
            if (tl_grow_array(&np->calls, &np->cap_calls, np->c.calls, sizeof *np->calls) == 0)
                np->calls[np->c.calls - 1] = (struct call_ref){e->corr, (uint32_t)i};
            else
                np->calls_failed = 1;
        }
        if (e->track != cur_track && !np->runs_failed) {
            if (np->nruns)
                np->runs[np->nruns - 1].cats = cats;
            if (tl_grow_array(&np->runs, &np->cap_runs, np->nruns + 1, sizeof *np->runs) == 0)
                np->runs[np->nruns++] = (struct tl_cat_run){(uint32_t)i, 0};
            else
                np->runs_failed = 1;
            cats = 0;
        }
        cats |= e->cat < 32 ? TL_CATBIT(e->cat) : UINT32_MAX;
        if (e->cat == TL_CAT_STEP) {
            if (tl_grow_array(&np->steps, &np->cap_steps, np->nsteps + 1, sizeof *np->steps)) {
                np->failed = 1;
                break;
            }
            np->steps[np->nsteps++] = (uint32_t)i;
        }
        if (e->track != cur_track) {
            cur_track = e->track;
            top = 0;
        }
        if (t->tracks[e->track].kind != TL_TRACK_THREAD || !nests(e))
            continue;
        int64_t end = tl_add_sat(e->ts, e->dur);
        /* Pop spans that end before this one starts, and spans this one is not inside of
         * (a partial overlap is not nesting). */
        while (top) {
            const struct open_span *p = &stack[top - 1];
            int inside =
                e->dur > 0 ? (e->ts >= p->ts && end <= p->end) : (e->ts >= p->ts && e->ts < p->end);
            if (inside)
                break;
            top--;
        }
        e->parent = top ? stack[top - 1].i : TL_NONE;
        e->depth = (uint8_t)(top > 255 ? 255 : top);
        if (e->dur > 0 && !(e->flags & TL_EV_INSTANT)) {
            if (top == cap) {
                cap *= 2;
                struct open_span *ns = realloc(stack, cap * sizeof *ns);
                if (!ns) {
                    np->failed = 1;
                    break;
                }
                stack = ns;
            }
            stack[top++] = (struct open_span){e->ts, end, (int32_t)i};
        }
    }
    if (np->nruns && !np->runs_failed)
        np->runs[np->nruns - 1].cats = cats;
    free(stack);
    return NULL;
}

/* Which span encloses which, per host track (the events are in track order): the tracks are
 * split into as many ranges of about equal events as there are threads, each nested by one. */
static int compute_nesting(tl_trace *t, finish_counts *c)
{
    int threads = t->nev < PERMUTE_WALK_MAX ? 1 : tl_trace_threads(t);
    if (threads > 64)
        threads = 64;
    nest_part np[64];
    size_t lo = 0;
    int k = 0;
    for (; k < threads && lo < t->nev; k++) {
        size_t hi = k + 1 == threads ? t->nev : t->nev / (size_t)threads * (size_t)(k + 1);
        if (hi < lo)
            hi = lo;
        if (hi > 0 && hi < t->nev) { /* a track is not split: on to its end (sorted by track) */
            uint32_t tr = t->ev[hi - 1].track;
            size_t a = hi, b = t->nev; /* the first event of a later track is in [a, b] */
            while (a < b) {
                size_t mid = a + (b - a) / 2;
                if (t->ev[mid].track > tr)
                    b = mid;
                else
                    a = mid + 1;
            }
            hi = a;
        }
        np[k] = (nest_part){.t = t, .lo = lo, .hi = hi, .c = FINISH_COUNTS_INIT};
        lo = hi;
    }
    tl_run_each(nest_range, np, sizeof *np, k);
    *c = (finish_counts)FINISH_COUNTS_INIT;
    size_t nsteps = 0;
    int rc = 0;
    for (int j = 0; j < k; j++) {
        rc |= np[j].failed ? -1 : 0;
        nsteps += np[j].nsteps;
        c->calls += np[j].c.calls;
        c->unnamed += np[j].c.unnamed;
        c->corr_lo = np[j].c.corr_lo < c->corr_lo ? np[j].c.corr_lo : c->corr_lo;
        c->corr_hi = np[j].c.corr_hi > c->corr_hi ? np[j].c.corr_hi : c->corr_hi;
        c->span0 = np[j].c.span0 < c->span0 ? np[j].c.span0 : c->span0;
        c->span1 = np[j].c.span1 > c->span1 ? np[j].c.span1 : c->span1;
    }
    /* the step spans in order: the ranges are in order */
    free(t->step_at_);
    t->step_at_ = NULL;
    t->nstep_at_ = 0;
    if (!rc && nsteps && !(t->step_at_ = malloc(nsteps * sizeof *t->step_at_)))
        rc = -1;
    for (int j = 0; j < k; j++) {
        if (!rc && np[j].nsteps)
            memcpy(t->step_at_ + t->nstep_at_, np[j].steps, np[j].nsteps * sizeof *np[j].steps);
        t->nstep_at_ += rc ? 0 : np[j].nsteps;
        free(np[j].steps);
    }
    /* the runs in order, likewise: not known (every walk whole) when a part had no memory */
    free(t->runs_);
    t->runs_ = NULL;
    t->nruns_ = 0;
    size_t nruns = 0;
    int runs_ok = !rc;
    for (int j = 0; j < k; j++) {
        nruns += np[j].nruns;
        runs_ok &= !np[j].runs_failed;
    }
    if (runs_ok && nruns && (t->runs_ = malloc(nruns * sizeof *t->runs_)))
        for (int j = 0; j < k; j++) {
            if (np[j].nruns) /* (a part of no events has no array) */
                memcpy(t->runs_ + t->nruns_, np[j].runs, np[j].nruns * sizeof *np[j].runs);
            t->nruns_ += np[j].nruns;
        }
    for (int j = 0; j < k; j++)
        free(np[j].runs);
    /* the calls in order, likewise (for the links; none listed when a part had no memory) */
    int calls_ok = !rc && c->calls;
    for (int j = 0; j < k; j++)
        calls_ok &= !np[j].calls_failed;
    if (calls_ok && (c->call_at = malloc(c->calls * sizeof *c->call_at))) {
        size_t at = 0;
        for (int j = 0; j < k; j++) {
            if (np[j].c.calls)
                memcpy(c->call_at + at, np[j].calls, np[j].c.calls * sizeof *np[j].calls);
            at += np[j].c.calls;
        }
    }
    for (int j = 0; j < k; j++)
        free(np[j].calls);
    return rc;
}

size_t tl_cat_walk_begin(tl_cat_walk *w, const tl_trace *t, uint32_t cats)
{
    int known = t->finished && t->finish_known_ && t->runs_;
    *w = (tl_cat_walk){known ? t->runs_ : NULL, known ? t->nruns_ : 0, 0, 0, t->nev, cats};
    return tl_cat_walk_skip(w);
}

size_t tl_cat_walk_skip(tl_cat_walk *w)
{
    if (!w->run) { /* not known: every event, one run */
        w->end = w->nev;
        return w->k++ ? w->nev : 0;
    }
    size_t k = w->k;
    while (k < w->nrun && !(w->run[k].cats & w->cats))
        k++;
    if (k == w->nrun) {
        w->k = k;
        w->end = w->nev;
        return w->nev;
    }
    size_t first = w->run[k].first;
    while (k < w->nrun && (w->run[k].cats & w->cats)) /* runs next to each other: one */
        k++;
    w->end = k < w->nrun ? w->run[k].first : w->nev;
    w->k = k;
    return first;
}

int tl_trace_has_cats(const tl_trace *t, uint32_t cats)
{
    tl_cat_walk w;
    for (size_t i = tl_cat_walk_begin(&w, t, cats); i < t->nev; i = tl_cat_walk_step(&w, i))
        if (tl_cat_in(cats, t->ev[i].cat))
            return 1;
    return 0;
}

/* Of two calls with one correlation id, the one a device event links to: a runtime call over a
 * driver call made inside it, else the one that started last, else the first in event order.
 * A total order, so that threads find the same call in any order (two calls of one kind with one
 * id: merged processes, a hand-made file). */
static int call_better(const tl_event *ev, int32_t i, int32_t had)
{
    const tl_event *e = &ev[i], *h = &ev[had];
    if (e->cat != h->cat)
        return e->cat == TL_CAT_RUNTIME;
    return e->ts > h->ts || (e->ts == h->ts && i < had);
}

/* The map from correlation id to its call and the first device event that call launched: dense
 * ids index an array (id - lo), others a hash table of (id, call, device event) with linear
 * probing. */
struct link_pair {
    int32_t call, dev; /* TL_NONE: none (yet) */
};
typedef struct link_map {
    int dense;
    int64_t lo, hi;
    struct link_pair *at; /* dense: id lo + k's */
    struct link_slot {
        int64_t corr;
        struct link_pair p;
    } * slots;
    size_t nslots;
} link_map;

/* The hash table's slot of id corr: its own, or the empty one where it goes. */
static struct link_slot *hash_slot(const link_map *m, int64_t corr)
{
    size_t h = tl_u64map_mix((uint64_t)corr) & (m->nslots - 1);
    while (m->slots[h].p.call != TL_NONE && m->slots[h].corr != corr)
        h = (h + 1) & (m->nslots - 1);
    return &m->slots[h];
}

/* Where id corr's call and device event are kept; NULL for a dense id out of the calls'
 * range. */
static struct link_pair *link_slot(const link_map *m, int64_t corr)
{
    if (m->dense)
        return corr < m->lo || corr > m->hi ? NULL : &m->at[(uint64_t)corr - (uint64_t)m->lo];
    return &hash_slot(m, corr)->p;
}

/* The links' three passes: the calls into the map (dense ids only: the hash table is filled by
 * one thread), each device event to its call (and the first one of each call noted in the map),
 * each call to its first device event. The calls come in event order in each, so that the last
 * pass writes the events it links in order: a device event writing its call's link itself (a
 * cache miss a kernel, 0.09 of the 0.1 s of linking a 320 MB .tally) took more. */
enum { LINK_CALLS, LINK_DEVICE, LINK_BACK };

typedef struct link_part {
    tl_trace *t;
    link_map *m;
    size_t lo, hi;                /* events; LINK_CALLS and LINK_BACK with a list: its entries */
    const struct call_ref *calls; /* the calls listed (NULL: walk the events) */
    int pass;
} link_part;

/* A walk of the runs that hold events of cats (tl_cat_walk), from event lo on: the first event
 * to look at. The finish's passes use it before tl_cat_walk_begin may be (the trace is not
 * finished yet); where the runs are not known, the walk is every event from lo. */
static size_t walk_from(tl_cat_walk *w, const tl_trace *t, uint32_t cats, size_t lo)
{
    /* the runs as the nesting just made them (in the finish), or kept since (a relink) */
    const struct tl_cat_run *r = !t->finished || t->finish_known_ ? t->runs_ : NULL;
    size_t a = 0, b = r ? t->nruns_ : 0;
    while (a < b) { /* the first run that starts after lo */
        size_t mid = a + (b - a) / 2;
        if (r[mid].first <= lo)
            a = mid + 1;
        else
            b = mid;
    }
    if (!r || !a) { /* (the runs start at event 0: a run holds lo) */
        *w = (tl_cat_walk){NULL, 0, 1, t->nev, t->nev, cats};
        return lo;
    }
    *w = (tl_cat_walk){r, t->nruns_, a - 1, 0, t->nev, cats};
    size_t i = tl_cat_walk_skip(w);
    return i < lo ? lo : i;
}

/* The pass's work on call i (id corr). */
static void link_call(const link_part *p, tl_event *ev, size_t i, int64_t corr)
{
    struct link_pair *slot = link_slot(p->m, corr);
    if (p->pass == LINK_BACK) {
        if (slot && slot->call == (int32_t)i && slot->dev != TL_NONE)
            ev[i].link = slot->dev;
        return;
    }
    int32_t cur = __atomic_load_n(&slot->call, __ATOMIC_RELAXED);
    while ((cur == TL_NONE || call_better(ev, (int32_t)i, cur)) &&
           !__atomic_compare_exchange_n(&slot->call, &cur, (int32_t)i, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
        ;
}

static void *link_range(void *arg)
{
    link_part *p = arg;
    tl_event *ev = p->t->ev;
    if (p->pass != LINK_DEVICE && p->calls) {
        for (size_t k = p->lo; k < p->hi; k++)
            link_call(p, ev, p->calls[k].at, p->calls[k].corr);
        return NULL;
    }
    tl_cat_walk w;
    uint32_t cats = p->pass != LINK_DEVICE ? TL_CATBIT(TL_CAT_RUNTIME) | TL_CATBIT(TL_CAT_DRIVER)
                                           : TL_DEVICE_WORK; /* (GPU annotations: not launched) */
    for (size_t i = walk_from(&w, p->t, cats, p->lo); i < p->hi; i = tl_cat_walk_step(&w, i)) {
        tl_event *e = &ev[i];
        if (p->pass != LINK_DEVICE) {
            if (is_call(e))
                link_call(p, ev, i, e->corr);
            continue;
        }
        if (!e->corr || !tl_cat_is_device_work(e->cat))
            continue;
        struct link_pair *slot = link_slot(p->m, e->corr);
        if (!slot || slot->call == TL_NONE)
            continue;
        e->link = slot->call;
        /* the call links to its first device event in event order (LINK_BACK) */
        int32_t cur = __atomic_load_n(&slot->dev, __ATOMIC_RELAXED);
        while ((cur == TL_NONE || (int32_t)i < cur) &&
               !__atomic_compare_exchange_n(&slot->dev, &cur, (int32_t)i, 1, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
            ;
    }
    return NULL;
}

/* Run a pass of link_range in k parts of about equal size: of the n calls listed (LINK_CALLS,
 * LINK_BACK, when the nesting listed them), else of the events. */
static void link_ranges(tl_trace *t, link_map *m, int pass, const struct call_ref *calls, size_t n,
                        int k)
{
    link_part parts[64];
    if (pass == LINK_DEVICE || !calls) {
        calls = NULL;
        n = t->nev;
    }
    for (int j = 0; j < k; j++)
        parts[j] = (link_part){
            t,     m,   n / (size_t)k * (size_t)j, j + 1 == k ? n : n / (size_t)k * (size_t)(j + 1),
            calls, pass};
    tl_run_each(link_range, parts, sizeof *parts, k);
}

/* Map correlation id -> runtime/driver call, then link device work to it. Profilers hand out
 * correlation ids from a counter, so the map is an array indexed by id - smallest id when the
 * ids are that dense, and a hash table otherwise; the passes run in threads (the hash table is
 * filled by one). c: the calls counted (and listed) by the nesting pass, or NULL to count them
 * here. */
static int compute_links(tl_trace *t, const finish_counts *c)
{
    finish_counts own = FINISH_COUNTS_INIT;
    if (!c) {
        for (size_t i = 0; i < t->nev; i++)
            count_event(&own, &t->ev[i]);
        c = &own;
    }
    size_t ncalls = c->calls;
    if (!ncalls)
        return 0;
    link_map m = {0};
    m.lo = c->corr_lo;
    m.hi = c->corr_hi;
    m.dense = (uint64_t)m.hi - (uint64_t)m.lo < (uint64_t)ncalls * 4;
    int k = t->nev < PERMUTE_WALK_MAX ? 1 : tl_trace_threads(t);
    k = k > 64 ? 64 : k;
    if (m.dense) {
        size_t n = (size_t)((uint64_t)m.hi - (uint64_t)m.lo) + 1;
        if (!(m.at = tl_big_alloc(n * sizeof *m.at)))
            return -1;
        memset(m.at, 0xff, n * sizeof *m.at); /* TL_NONE */
        link_ranges(t, &m, LINK_CALLS, c->call_at, ncalls, k);
    } else {
        m.nslots = 16;
        while (m.nslots < ncalls * 2)
            m.nslots *= 2;
        if (!(m.slots = tl_big_alloc(m.nslots * sizeof *m.slots)))
            return -1;
        for (size_t i = 0; i < m.nslots; i++)
            m.slots[i] = (struct link_slot){0, {TL_NONE, TL_NONE}};
        size_t n = c->call_at ? ncalls : t->nev;
        for (size_t j = 0; j < n; j++) {
            size_t i = c->call_at ? c->call_at[j].at : j;
            if (!is_call(&t->ev[i]))
                continue;
            struct link_slot *slot = hash_slot(&m, t->ev[i].corr);
            if (slot->p.call == TL_NONE || call_better(t->ev, (int32_t)i, slot->p.call))
                *slot = (struct link_slot){t->ev[i].corr, {(int32_t)i, TL_NONE}};
        }
    }
    link_ranges(t, &m, LINK_DEVICE, NULL, 0, k);
    link_ranges(t, &m, LINK_BACK, c->call_at, ncalls, k);
    free(m.at);
    free(m.slots);
    return 0;
}

/* sort_mem in a thread of its own, beside the passes over the events (which do not read the
 * memory table): 0.2 s of the finish of 2 GB on the 16-core machine */
typedef struct mem_sorter {
    tl_trace *t;
    int rc;
} mem_sorter;

static void *sort_mem_main(void *arg)
{
    mem_sorter *m = arg;
    m->rc = sort_mem(m->t);
    return NULL;
}

#define MEM_SORT_THREAD_MIN 100000 /* memory events; fewer are sorted in a few ms */

int tl_trace_finish(tl_trace *t)
{
    tl_trace_memo_drop(t);
    if (t->finished)
        return 0;
    if (t->nev > (size_t)INT32_MAX)
        return -1;
    mem_sorter ms = {t, 0};
    tl_runner mr;
    int apart = t->nmem >= MEM_SORT_THREAD_MIN && tl_trace_threads(t) > 1;
    tl_run_apart(&mr, sort_mem_main, &ms, apart);
    finish_counts c = FINISH_COUNTS_INIT;
    double t0 = tl_now_s(), t1 = t0, t2 = t0, t3;
    if (sort_events(t) != 0 || (t1 = tl_now_s(), compute_nesting(t, &c)) != 0 ||
        (t2 = tl_now_s(), compute_links(t, &c)) != 0) {
        free(c.call_at);
        tl_run_wait(&mr); /* here too when not apart: its table is left in order */
        return -1;
    }
    free(c.call_at);
    t3 = tl_now_s();
    t->span0_ = c.span0 > c.span1 ? 0 : c.span0;
    t->span1_ = c.span0 > c.span1 ? 0 : c.span1;
    /* a copy or memset without a name (a hand-made or damaged .tally) is named as PyTorch and
     * the export name it, so that the views and an export of the trace agree */
    for (size_t i = 0; i < t->nev && c.unnamed; i++) {
        tl_event *e = &t->ev[i];
        if (e->name || (e->cat != TL_CAT_MEMCPY && e->cat != TL_CAT_MEMSET))
            continue;
        const char *nm = tl_copy_default_name(e);
        e->name = tl_intern(&t->strings, nm, strlen(nm));
    }
    tl_run_wait(&mr);
    if (ms.rc != 0)
        return -1;
    if (getenv("TALLY_READ_STATS")) /* where the finish goes (docs/PERFORMANCE.md) */
        fprintf(stderr,
                "tally: finish: %.3f s sorting and moving, %.3f s nesting, %.3f s linking, "
                "%.3f s the rest (%zu events: %llu in tracks merged in place, %llu permuted; "
                "the memory table sorted %s)\n",
                t1 - t0, t2 - t1, t3 - t2, tl_now_s() - t3, t->nev,
                (unsigned long long)t->read_stats.merged,
                (unsigned long long)t->read_stats.permuted, apart ? "beside them" : "in the rest");
    t->finished = 1;
    t->finish_known_ = 1;
    /* The room reserved for events the file did not hold (the reader reserves by its size)
     * goes back: on huge pages the last one held up to 2 MB past the last event (0.02x of a
     * 92 MB trace, and its report's peak varied by as much from run to run). */
    if (t->cap_ev * sizeof *t->ev >= BIG_MIN)
        tl_discard_pages(t->ev + t->nev, (t->cap_ev - t->nev) * sizeof *t->ev);
    return 0;
}

int tl_trace_relink(tl_trace *t)
{
    int known = t->finish_known_; /* the links change; the order, span, steps and runs do not */
    tl_trace_memo_drop(t);
    t->finish_known_ = known;
    for (size_t i = 0; i < t->nev; i++)
        t->ev[i].link = TL_NONE;
    return compute_links(t, NULL);
}
