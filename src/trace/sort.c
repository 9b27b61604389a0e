/*
 * sort.c — see sort.h.
 */
#include "trace/sort.h"

#include <string.h>

static void sift_down(int32_t *v, size_t root, size_t n, tl_before_fn before, const void *ctx)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && before(ctx, v[c], v[c + 1]) < 0)
            c++;
        if (before(ctx, v[root], v[c]) >= 0)
            return;
        int32_t s = v[root];
        v[root] = v[c];
        v[c] = s;
        root = c;
    }
}

static void heap_sort(int32_t *v, size_t n, tl_before_fn before, const void *ctx)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(v, i, n, before, ctx);
    for (size_t i = n - 1; i > 0; i--) {
        int32_t s = v[0];
        v[0] = v[i];
        v[i] = s;
        sift_down(v, 0, i, before, ctx);
    }
}

static void quick_sort(int32_t *v, size_t n, int depth, tl_before_fn before, const void *ctx)
{
    while (n > 16) {
        if (depth-- == 0) {
            heap_sort(v, n, before, ctx);
            return;
        }
        size_t a = 0, b = n / 2, c = n - 1, m;
        if (before(ctx, v[a], v[b]) < 0)
            m = before(ctx, v[b], v[c]) < 0 ? b : before(ctx, v[a], v[c]) < 0 ? c : a;
        else
            m = before(ctx, v[a], v[c]) < 0 ? a : before(ctx, v[b], v[c]) < 0 ? c : b;
        int32_t pivot = v[m];
        v[m] = v[n - 1];
        v[n - 1] = pivot;
        size_t lo = 0;
        for (size_t i = 0; i + 1 < n; i++)
            if (before(ctx, v[i], pivot) < 0) {
                int32_t s = v[i];
                v[i] = v[lo];
                v[lo++] = s;
            }
        v[n - 1] = v[lo];
        v[lo] = pivot;
        /* the smaller side by recursion, the larger by the loop: a stack of log n frames */
        if (lo < n - 1 - lo) {
            quick_sort(v, lo, depth, before, ctx);
            v += lo + 1;
            n -= lo + 1;
        } else {
            quick_sort(v + lo + 1, n - lo - 1, depth, before, ctx);
            n = lo;
        }
    }
    for (size_t i = 1; i < n; i++) {
        int32_t s = v[i];
        size_t j = i;
        for (; j > 0 && before(ctx, s, v[j - 1]) < 0; j--)
            v[j] = v[j - 1];
        v[j] = s;
    }
}

void tl_sort_index(int32_t *v, size_t n, tl_before_fn before, const void *ctx)
{
    int depth = 0;
    for (size_t m = n; m > 1; m >>= 1)
        depth += 2;
    quick_sort(v, n, depth, before, ctx);
}

void tl_permute(void *base, size_t n, size_t size, int32_t *perm, void *tmp)
{
    char *b = base;
    for (size_t i = 0; i < n; i++) {
        if (perm[i] < 0 || (size_t)perm[i] == i)
            continue;
        /* position j takes the element at perm[j]; a visited position's perm is ~perm */
        memcpy(tmp, b + i * size, size);
        size_t j = i;
        for (;;) {
            size_t k = (size_t)perm[j];
            perm[j] = ~perm[j];
            if (k == i) {
                memcpy(b + j * size, tmp, size);
                break;
            }
            memcpy(b + j * size, b + k * size, size);
            j = k;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (perm[i] < 0)
            perm[i] = ~perm[i];
}
