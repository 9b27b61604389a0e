/*
 * grow_array.h — one way to grow an array by doubling, for the .tally decoder and the streaming
 * export (their call sites, runs, stacks and pools).
 */
#ifndef TALLY_TRACE_GROW_ARRAY_H
#define TALLY_TRACE_GROW_ARRAY_H

#include <stdlib.h>
#include <string.h>

/* Make room for n elements of elem bytes in the array whose address is parr (a T **) and whose
 * capacity is *cap, doubling it from 64. Returns 0, or -1 when out of memory (nothing changes). */
static inline int tl_grow_array(void *parr, size_t *cap, size_t n, size_t elem)
{
    if (n <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < n)
        nc *= 2;
    void *p;
    memcpy(&p, parr, sizeof p);
    void *np = realloc(p, nc * elem);
    if (!np)
        return -1;
    memcpy(parr, &np, sizeof np);
    *cap = nc;
    return 0;
}

#endif
