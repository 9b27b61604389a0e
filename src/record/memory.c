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

/* What the table knows of a block. Its address is in the shard's key array, apart: a probe reads
 * 8-byte keys, 8 to a cache line, and touches the block's info once, where it found it. */
typedef struct block {
    uint64_t bytes;
    int32_t device;
    uint32_t category;
    char *name; /* owned, or NULL */
} block;

typedef struct shard {
    _Atomic int lock;
    uint64_t *key; /* the block's address; 0 empty, TOMBSTONE removed */
    block *val;
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
    uint64_t *nk = calloc(ncap, sizeof *nk);
    block *nv = malloc(ncap * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    uint32_t used = 0;
    for (uint32_t i = 0; i < s->cap; i++) {
        if (s->key[i] <= TOMBSTONE)
            continue;
        uint32_t h = (uint32_t)(mix(s->key[i]) >> 6) & (ncap - 1);
        while (nk[h])
            h = (h + 1) & (ncap - 1);
        nk[h] = s->key[i];
        nv[h] = s->val[i];
        used++;
    }
    free(s->key);
    free(s->val);
    s->key = nk;
    s->val = nv;
    s->cap = ncap;
    s->used = used;
    return 0;
}

/* Under s->lock: the slot of ptr, or -1. */
static int64_t find(const shard *s, uint64_t ptr, uint64_t h)
{
    if (!s->cap)
        return -1;
    uint32_t mask = s->cap - 1;
    for (uint32_t i = (uint32_t)(h >> 6) & mask, k = 0; k < s->cap; i = (i + 1) & mask, k++) {
        if (s->key[i] == ptr)
            return i;
        if (!s->key[i])
            return -1;
    }
    return -1;
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
    if (make_room(s) == 0) {
        /* one probe: the entry of ptr, else the first free slot (a tombstone or the empty slot
         * that ends the probe) */
        uint32_t mask = s->cap - 1, i = (uint32_t)(h >> 6) & mask, hole = UINT32_MAX;
        for (;; i = (i + 1) & mask) {
            uint64_t k = s->key[i];
            if (k == ptr || !k)
                break;
            if (k == TOMBSTONE && hole == UINT32_MAX)
                hole = i;
        }
        if (s->key[i] == ptr) { /* allocated again before it was freed */
            atomic_fetch_add_explicit(&reused, 1, memory_order_relaxed);
            free(s->val[i].name);
        } else if (hole != UINT32_MAX) {
            i = hole; /* a tombstone, counted in used already */
        } else {
            s->used++;
        }
        s->key[i] = ptr;
        s->val[i] = (block){bytes, device, cat, copy};
        copy = NULL;
    }
    tally__spin_unlock(&s->lock);
    if (copy) /* the table had no room: the block is recorded, not tracked */
        free(copy);
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
    int64_t i = ptr > TOMBSTONE ? find(s, ptr, h) : -1;
    block gone = {0, 0, 0, NULL};
    if (i >= 0) {
        gone = s->val[i];
        s->key[i] = TOMBSTONE;
    }
    tally__spin_unlock(&s->lock);
    if (i < 0)
        atomic_fetch_add_explicit(&bad_frees, 1, memory_order_relaxed);
    else if (tally__recording == TALLY__GATE_ON)
        tally__record_memory(ptr, -(int64_t)gone.bytes, gone.device, gone.category, -1, -1);
    if (gone.name)
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
    int64_t i = find(s, ptr, h);
    char *old = NULL;
    if (i >= 0) {
        s->val[i].category = cat;
        if (name) {
            char *copy = strdup(name);
            if (copy) {
                old = s->val[i].name;
                s->val[i].name = copy;
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
            const block *b = &s->val[i];
            if (s->key[i] <= TOMBSTONE)
                continue;
            uint32_t cat = b->category | TALLY__MEM_LIVE;
            if (b->name)
                tally__record_memory_named(s->key[i], (int64_t)b->bytes, b->device, cat, b->name,
                                           strlen(b->name));
            else
                tally__record_memory(s->key[i], (int64_t)b->bytes, b->device, cat, -1, -1);
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
