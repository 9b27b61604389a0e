/*
 * memory.c — tally_alloc / tally_free: allocations with what they hold and a name, the live set
 * they make, and the MEMORY records of them.
 *
 * A free names only its address, so the recorder keeps the live allocations in a table: 64
 * shards by address hash, each an open-addressing array under its own spin lock (two threads
 * allocating at once rarely meet in one shard; a lock is held for a probe or two). The table is
 * kept whether or not a window is open: what was allocated before a window is in it, so that a
 * free inside the window has its size, and the window begins with one LIVE record per block
 * alive at that moment (parameters allocated before tally_start are in every window's file).
 * A free of an address the table does not hold, and an allocation at an address it already
 * holds, are counted (tally_get_stats, the file's STATS), never fatal.
 *
 * A name (a dotted path) is copied once, at the allocation, into the table; the records carry it
 * as a STR NAME record before the MEMORY record.
 */
#include "record/internal.h"
#include "record/recorder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SHARDS    64
#define TOMBSTONE UINT64_C(1)

typedef struct block {
    uint64_t ptr; /* 0 empty, TOMBSTONE removed */
    uint64_t bytes;
    int32_t device;
    uint32_t category;
    char *name; /* owned, or NULL */
} block;

typedef struct shard {
    _Atomic int lock;
    block *tab;
    uint32_t cap, used; /* used: live + tombstones */
} shard;

static shard M[SHARDS];
static _Atomic uint64_t bad_frees, reused, bad_sizes;

static inline uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    return x;
}

/* Under s->lock: room for one more entry (grows at half full). 0, or -1 out of memory. */
static int make_room(shard *s)
{
    if (s->cap && (s->used + 1) * 2 <= s->cap)
        return 0;
    uint32_t ncap = s->cap ? s->cap * 2 : 256;
    block *nt = calloc(ncap, sizeof *nt);
    if (!nt)
        return -1;
    uint32_t used = 0;
    for (uint32_t i = 0; i < s->cap; i++) {
        block *b = &s->tab[i];
        if (b->ptr <= TOMBSTONE)
            continue;
        uint32_t h = (uint32_t)(mix(b->ptr) >> 6) & (ncap - 1);
        while (nt[h].ptr)
            h = (h + 1) & (ncap - 1);
        nt[h] = *b;
        used++;
    }
    free(s->tab);
    s->tab = nt;
    s->cap = ncap;
    s->used = used;
    return 0;
}

/* Under s->lock: the entry of ptr, or NULL. */
static block *find(shard *s, uint64_t ptr, uint64_t h)
{
    if (!s->cap)
        return NULL;
    for (uint32_t i = (uint32_t)(h >> 6) & (s->cap - 1), k = 0; k < s->cap;
         i = (i + 1) & (s->cap - 1), k++) {
        if (s->tab[i].ptr == ptr)
            return &s->tab[i];
        if (!s->tab[i].ptr)
            return NULL;
    }
    return NULL;
}

static void record(uint64_t ptr, int64_t bytes, int32_t device, uint32_t category, const char *name)
{
    if (name) {
        tally__record_memory_named(ptr, bytes, device, category, name, strlen(name));
    } else {
        tally__record_memory(ptr, bytes, device, category, -1, -1);
    }
}

TALLY_API void tally_alloc(const void *p, uint64_t bytes, int device, int category,
                           const char *name)
{
    uint64_t ptr = (uint64_t)(uintptr_t)p;
    if (ptr <= TOMBSTONE)
        return;
    if (bytes > (uint64_t)INT64_MAX) {
        atomic_fetch_add_explicit(&bad_sizes, 1, memory_order_relaxed);
        return;
    }
    int saved = errno;
    uint32_t cat = category >= 0 && category < TALLY_MEM_CATEGORY_COUNT ? (uint32_t)category : 0;
    char *copy = name ? strdup(name) : NULL;
    uint64_t h = mix(ptr);
    shard *s = &M[h & (SHARDS - 1)];
    tally__spin_lock(&s->lock);
    block *b = find(s, ptr, h);
    if (b) { /* allocated again before it was freed */
        atomic_fetch_add_explicit(&reused, 1, memory_order_relaxed);
        free(b->name);
    } else if (make_room(s) == 0) {
        uint32_t i = (uint32_t)(h >> 6) & (s->cap - 1);
        while (s->tab[i].ptr > TOMBSTONE)
            i = (i + 1) & (s->cap - 1);
        if (!s->tab[i].ptr)
            s->used++;
        b = &s->tab[i];
    }
    if (b) {
        b->ptr = ptr;
        b->bytes = bytes;
        b->device = device;
        b->category = cat;
        b->name = copy;
        copy = NULL;
    }
    tally__spin_unlock(&s->lock);
    free(copy); /* the table had no room: the block is recorded, not tracked */
    if (tally__recording == TALLY__GATE_ON)
        record(ptr, (int64_t)bytes, device, cat, name);
    errno = saved;
}

TALLY_API void tally_free(const void *p)
{
    uint64_t ptr = (uint64_t)(uintptr_t)p;
    if (!ptr) /* free(NULL) */
        return;
    int saved = errno;
    uint64_t h = mix(ptr);
    shard *s = &M[h & (SHARDS - 1)];
    tally__spin_lock(&s->lock);
    block *b = find(s, ptr, h);
    block gone = {0, 0, 0, 0, NULL};
    if (b) {
        gone = *b;
        b->ptr = TOMBSTONE;
        b->name = NULL;
    }
    tally__spin_unlock(&s->lock);
    if (!b)
        atomic_fetch_add_explicit(&bad_frees, 1, memory_order_relaxed);
    else if (tally__recording == TALLY__GATE_ON)
        tally__record_memory(ptr, -(int64_t)gone.bytes, gone.device, gone.category, -1, -1);
    free(gone.name);
    errno = saved;
}

TALLY_API void tally_label_memory(const void *p, uint64_t bytes, int device, int category,
                                  const char *name)
{
    uint64_t ptr = (uint64_t)(uintptr_t)p;
    if (ptr <= TOMBSTONE || bytes > (uint64_t)INT64_MAX)
        return;
    int saved = errno;
    uint32_t cat = category >= 0 && category < TALLY_MEM_CATEGORY_COUNT ? (uint32_t)category : 0;
    uint64_t h = mix(ptr);
    shard *s = &M[h & (SHARDS - 1)];
    tally__spin_lock(&s->lock);
    block *b = find(s, ptr, h);
    char *old = NULL;
    if (b) {
        b->category = cat;
        if (name) {
            char *copy = strdup(name);
            if (copy) {
                old = b->name;
                b->name = copy;
            }
        }
    }
    tally__spin_unlock(&s->lock);
    free(old);
    if (tally__recording == TALLY__GATE_ON)
        tally__record_memory_named(ptr, (int64_t)bytes, device, cat | TALLY__MEM_LABEL,
                                   name ? name : "", name ? strlen(name) : 0);
    errno = saved;
}

void tally__memory_snapshot(void)
{
    for (int k = 0; k < SHARDS; k++) {
        shard *s = &M[k];
        tally__spin_lock(&s->lock);
        for (uint32_t i = 0; i < s->cap; i++) {
            block *b = &s->tab[i];
            if (b->ptr <= TOMBSTONE)
                continue;
            uint32_t cat = b->category | TALLY__MEM_LIVE;
            if (b->name)
                tally__record_memory_named(b->ptr, (int64_t)b->bytes, b->device, cat, b->name,
                                           strlen(b->name));
            else
                tally__record_memory(b->ptr, (int64_t)b->bytes, b->device, cat, -1, -1);
        }
        tally__spin_unlock(&s->lock);
    }
}

void tally__memory_counts(tally__mem_counts *c)
{
    c->bad_frees = atomic_load(&bad_frees);
    c->reused = atomic_load(&reused);
    c->bad_sizes = atomic_load(&bad_sizes);
}
