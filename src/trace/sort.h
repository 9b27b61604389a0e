/*
 * sort.h — sorting a million rows without a second copy of them: an index sorted in place, and
 * the rows moved into its order in place.
 */
#ifndef TALLY_TRACE_SORT_H
#define TALLY_TRACE_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Negative when index a goes before index b (a != b). The order must be total: a caller whose
 * keys tie breaks the tie by the indices themselves, so that the result is the one a stable
 * sort gives. */
typedef int (*tl_before_fn)(const void *ctx, int32_t a, int32_t b);

/* Sort v[0, n) in place by before: a quicksort (median-of-three pivots, insertion sort of short
 * runs, the smaller side first) that turns to a heapsort past 2 log2 n levels, so O(n log n)
 * with no memory but a stack of log n frames. */
void tl_sort_index(int32_t *v, size_t n, tl_before_fn before, const void *ctx);

/* Move the n elements of size bytes at base so that element k becomes the one that was at
 * perm[k] (perm: a permutation of 0..n-1), a cycle at a time with one element held in tmp (size
 * bytes). perm serves as the cycles' marks and is as it was when this returns. */
void tl_permute(void *base, size_t n, size_t size, int32_t *perm, void *tmp);

#endif
