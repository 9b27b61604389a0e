/*
 * test_sort.c — tl_sort_index gives the one order its comparison defines, on every shape of
 * input and never in quadratic time (an adversary that makes up the keys as the sort asks
 * drives a plain quicksort to n^2 / 2 comparisons); tl_permute moves rows into that order and
 * gives the permutation back.
 */
#include "trace/sort.h"

#include "testlib.h"

#include <stdlib.h>

/* keys with ties, broken by the index: a total order */
typedef struct keyed {
    const int *key;
    long calls;
} keyed;

static int by_key(const void *ctx, int32_t a, int32_t b)
{
    keyed *k = (keyed *)ctx;
    k->calls++;
    if (k->key[a] != k->key[b])
        return k->key[a] < k->key[b] ? -1 : 1;
    return a < b ? -1 : 1;
}

static const int *qkey;
static int by_key_q(const void *pa, const void *pb)
{
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    if (qkey[a] != qkey[b])
        return qkey[a] < qkey[b] ? -1 : 1;
    return (a > b) - (a < b);
}

static uint64_t rng = 88172645463325252ull;
static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* Every shape, against qsort of the same total order. */
TEST(sorts_every_shape_as_the_order_says)
{
    static const size_t sizes[] = {0, 1, 2, 3, 16, 17, 18, 100, 1000, 65537};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        int *key = malloc((n ? n : 1) * sizeof *key);
        int32_t *v = malloc((n ? n : 1) * sizeof *v), *ref = malloc((n ? n : 1) * sizeof *ref);
        for (int shape = 0; shape < 7; shape++) {
            for (size_t i = 0; i < n; i++) {
                switch (shape) {
                case 0:
                    key[i] = (int)(next_u32() % 1000000);
                    break; /* random */
                case 1:
                    key[i] = (int)(next_u32() % 3);
                    break; /* many ties */
                case 2:
                    key[i] = 7;
                    break; /* all equal */
                case 3:
                    key[i] = (int)i;
                    break; /* sorted */
                case 4:
                    key[i] = -(int)i;
                    break; /* reversed */
                case 5:
                    key[i] = (int)(i < n / 2 ? i : n - i);
                    break; /* organ pipe */
                default:
                    key[i] = (int)(i % 2 ? i : n - i);
                    break; /* interleaved */
                }
                v[i] = ref[i] = (int32_t)i;
            }
            /* start from a shuffled index as well as from the identity */
            for (int shuffled = 0; shuffled < 2; shuffled++) {
                if (shuffled)
                    for (size_t i = n; i > 1; i--) {
                        size_t j = next_u32() % i;
                        int32_t s = v[i - 1];
                        v[i - 1] = v[j];
                        v[j] = s;
                    }
                keyed k = {key, 0};
                tl_sort_index(v, n, by_key, &k);
                qkey = key;
                qsort(ref, n, sizeof *ref, by_key_q);
                int same = 1;
                for (size_t i = 0; i < n; i++)
                    same &= v[i] == ref[i];
                if (!same)
                    fprintf(stderr, "  n %zu shape %d shuffled %d: not the order\n", n, shape,
                            shuffled);
                CHECK(same);
            }
        }
        free(key);
        free(v);
        free(ref);
    }
}

/* McIlroy's adversary ("A killer adversary for quicksort", 1999): every key is "gas" until the
 * sort compares two gas keys, when one is frozen to the next solid value; the pivot candidate
 * is the gas key last compared. A quicksort that only compares is driven to ~n^2 / 2
 * comparisons; this one must stay within a few n log2 n (it turns to a heapsort). */
typedef struct adversary {
    int *val;
    int gas, nsolid;
    int32_t candidate;
    long calls;
} adversary;

static int adversary_before(const void *ctx, int32_t x, int32_t y)
{
    adversary *a = (adversary *)ctx;
    a->calls++;
    if (a->val[x] == a->gas && a->val[y] == a->gas)
        a->val[x == a->candidate ? x : y] = a->nsolid++;
    if (a->val[x] == a->gas)
        a->candidate = x;
    else if (a->val[y] == a->gas)
        a->candidate = y;
    if (a->val[x] != a->val[y])
        return a->val[x] < a->val[y] ? -1 : 1;
    return x < y ? -1 : 1;
}

TEST(an_adversary_cannot_make_it_quadratic)
{
    enum { N = 200000 };
    adversary a = {malloc(N * sizeof(int)), N, 0, 0, 0};
    int32_t *v = malloc(N * sizeof *v);
    for (int i = 0; i < N; i++) {
        a.val[i] = a.gas;
        v[i] = i;
    }
    tl_sort_index(v, N, adversary_before, &a);
    double nlogn = (double)N * 17.6; /* log2(200000) */
    fprintf(stderr, "  %ld comparisons for %d keys (%.1f n log2 n)\n", a.calls, N,
            (double)a.calls / nlogn);
    CHECK((double)a.calls < 6 * nlogn); /* quadratic: ~2e10 */
    /* and sorted by the values it made up */
    int ok = 1;
    for (int i = 1; i < N; i++)
        ok &= a.val[v[i - 1]] < a.val[v[i]] || (a.val[v[i - 1]] == a.val[v[i]] && v[i - 1] < v[i]);
    CHECK(ok);
    free(a.val);
    free(v);
}

typedef struct row {
    int64_t a;
    int32_t b;
    char c[24];
} row;

TEST(permute_moves_rows_and_gives_the_permutation_back)
{
    static const size_t sizes[] = {0, 1, 2, 5, 1000, 100003};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        row *r = malloc((n ? n : 1) * sizeof *r);
        int32_t *perm = malloc((n ? n : 1) * sizeof *perm);
        for (size_t i = 0; i < n; i++) {
            r[i] = (row){(int64_t)i * 3, (int32_t)i, {0}};
            snprintf(r[i].c, sizeof r[i].c, "r%zu", i);
            perm[i] = (int32_t)i;
        }
        for (size_t i = n; i > 1; i--) { /* fixed points, 2-cycles and long cycles alike */
            if (next_u32() % 4 == 0)
                continue;
            size_t j = next_u32() % i;
            int32_t s = perm[i - 1];
            perm[i - 1] = perm[j];
            perm[j] = s;
        }
        int32_t *keep = malloc((n ? n : 1) * sizeof *keep);
        for (size_t i = 0; i < n; i++)
            keep[i] = perm[i];
        row tmp;
        tl_permute(r, n, sizeof *r, perm, &tmp);
        int ok = 1;
        for (size_t i = 0; i < n; i++) {
            char want[24];
            snprintf(want, sizeof want, "r%d", keep[i]);
            ok &= r[i].a == (int64_t)keep[i] * 3 && r[i].b == keep[i] &&
                  strcmp(r[i].c, want) == 0 && perm[i] == keep[i];
        }
        CHECK(ok);
        free(r);
        free(perm);
        free(keep);
    }
}

int main(void)
{
    RUN(sorts_every_shape_as_the_order_says);
    RUN(an_adversary_cannot_make_it_quadratic);
    RUN(permute_moves_rows_and_gives_the_permutation_back);
    return test_summary();
}
