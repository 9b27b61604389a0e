/*
 * u64map.h — a hash map from a 64-bit key to a 64-bit value, for the .tally decoder and the
 * streaming export: call-site ids to sites, begin/end handles to open ranges, correlation ids.
 *
 * Open addressing with linear probing in one array of (key, value) pairs and a byte per slot
 * saying whether it is used, so any key (0 included) can be stored; removal shifts the entries
 * after the hole back (no tombstones), so a map that keeps only what is open stays small.
 */
#ifndef TALLY_TRACE_U64MAP_H
#define TALLY_TRACE_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct tl_u64map {
    struct tl_u64pair {
        uint64_t key, val;
    } * pair;
    uint8_t *used; /* 1 where pair[i] holds an entry */
    size_t cap;    /* slots: a power of two, or 0 */
    size_t n;      /* entries */
} tl_u64map;

/* Every bit of the key moves every bit of the hash (MurmurHash3's finalizer): keys that differ
 * only in high bits (correlation ids that are multiples of 2^44, addresses) spread over the low
 * bits that pick a slot, instead of all probing from one. */
static inline size_t tl_u64map_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return (size_t)x;
}

/* The slot of key, or of the empty slot where it would go (m->cap > 0). */
static inline size_t tl_u64map_slot(const tl_u64map *m, uint64_t key)
{
    size_t mask = m->cap - 1, h = tl_u64map_mix(key) & mask;
    while (m->used[h] && m->pair[h].key != key)
        h = (h + 1) & mask;
    return h;
}

/* Store val for key (replacing a value stored before). Returns 0, or -1 when out of memory. */
int tl_u64map_put(tl_u64map *m, uint64_t key, uint64_t val);

/* The value stored for key, or NULL. Valid until the next put or del. (Inline: the decoder
 * looks up a call site per event.) */
static inline uint64_t *tl_u64map_get(const tl_u64map *m, uint64_t key)
{
    if (!m->n)
        return NULL;
    size_t h = tl_u64map_slot(m, key);
    return m->used[h] ? &m->pair[h].val : NULL;
}
/* Remove key; returns 1 when it was there. */
int tl_u64map_del(tl_u64map *m, uint64_t key);
/* Remove every entry, keeping the memory. */
void tl_u64map_clear(tl_u64map *m);
void tl_u64map_free(tl_u64map *m);

#endif
