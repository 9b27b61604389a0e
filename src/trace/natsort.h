/*
 * natsort.h — one natural merge sort, instantiated per element type: the trace model sorts a
 * track's events with it, the interval sets of the views their intervals. Both inputs come
 * mostly in order (a track's events, one track's intervals after another's), where it costs
 * next to nothing.
 *
 *   TL_NATURAL_MERGE_SORT(name, T, CTX, before)
 *
 * defines `static T *name(T *a, T *tmp, size_t n, CTX ctx)`, where before(const T *x,
 * const T *y, CTX ctx) is a strict order; tmp holds n elements. It returns a or tmp, whichever
 * holds the sorted result, or NULL when out of memory (a is then partly sorted). Stable.
 */
#ifndef TALLY_TRACE_NATSORT_H
#define TALLY_TRACE_NATSORT_H

#include <stdlib.h>
#include <string.h>

#define TL_NATSORT_MIN_RUN 32 /* shorter runs are extended by insertion sort */

/* Find the runs already in order (reversing strictly descending ones, which keeps equal
 * elements in order), extend short ones to TL_NATSORT_MIN_RUN by insertion, then merge
 * neighbouring runs pairwise: n * log2(runs) comparisons. */
#define TL_NATURAL_MERGE_SORT(NAME, T, CTX, BEFORE)                                                \
    static T *NAME(T *a, T *tmp, size_t n, CTX ev)                                                 \
    {                                                                                              \
        size_t *run = malloc((n / TL_NATSORT_MIN_RUN + 2) * sizeof *run); /* run starts, then n */ \
        if (!run)                                                                                  \
            return NULL;                                                                           \
        size_t nruns = 0;                                                                          \
        for (size_t i = 0; i < n;) {                                                               \
            size_t j = i + 1;                                                                      \
            if (j < n && BEFORE(&a[j], &a[i], ev)) {                                               \
                while (j < n && BEFORE(&a[j], &a[j - 1], ev))                                      \
                    j++;                                                                           \
                for (size_t l = i, r = j - 1; l < r; l++, r--) {                                   \
                    T x = a[l];                                                                    \
                    a[l] = a[r];                                                                   \
                    a[r] = x;                                                                      \
                }                                                                                  \
            } else {                                                                               \
                while (j < n && BEFORE(&a[j - 1], &a[j], ev))                                      \
                    j++;                                                                           \
            }                                                                                      \
            if (j - i < TL_NATSORT_MIN_RUN &&                                                      \
                j < n) { /* insertion sort up to TL_NATSORT_MIN_RUN */                             \
                size_t e = i + TL_NATSORT_MIN_RUN < n ? i + TL_NATSORT_MIN_RUN : n;                \
                for (; j < e; j++) {                                                               \
                    T x = a[j];                                                                    \
                    size_t k = j;                                                                  \
                    while (k > i && BEFORE(&x, &a[k - 1], ev)) {                                   \
                        a[k] = a[k - 1];                                                           \
                        k--;                                                                       \
                    }                                                                              \
                    a[k] = x;                                                                      \
                }                                                                                  \
            }                                                                                      \
            run[nruns++] = i;                                                                      \
            i = j;                                                                                 \
        }                                                                                          \
        run[nruns] = n;                                                                            \
        T *src = a, *dst = tmp;                                                                    \
        while (nruns > 1) {                                                                        \
            size_t w = 0, r = 0;                                                                   \
            for (; r + 1 < nruns; r += 2) {                                                        \
                const T *x = src + run[r], *xe = src + run[r + 1];                                 \
                const T *y = xe, *ye = src + run[r + 2];                                           \
                T *o = dst + run[r];                                                               \
                while (x < xe && y < ye)                                                           \
                    *o++ = BEFORE(y, x, ev) ? *y++ : *x++;                                         \
                memcpy(o, x, (size_t)(xe - x) * sizeof *o);                                        \
                o += xe - x;                                                                       \
                memcpy(o, y, (size_t)(ye - y) * sizeof *o);                                        \
                run[w++] = run[r];                                                                 \
            }                                                                                      \
            if (r < nruns) { /* an odd run out is carried over */                                  \
                memcpy(dst + run[r], src + run[r], (run[r + 1] - run[r]) * sizeof *dst);           \
                run[w++] = run[r];                                                                 \
            }                                                                                      \
            run[w] = n;                                                                            \
            nruns = w;                                                                             \
            T *sw = src;                                                                           \
            src = dst;                                                                             \
            dst = sw;                                                                              \
        }                                                                                          \
        free(run);                                                                                 \
        return src;                                                                                \
    }

#endif
