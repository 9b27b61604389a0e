/*
 * test_u64map.c — the decoder's 64-bit hash map (src/trace/u64map.c) against a plain array:
 * random puts, gets and removals over keys that collide in their home slots (so that removal
 * has runs to shift back), key 0 and the largest key included.
 */
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "trace/u64map.h"

#define NKEYS 512

TEST(matches_an_array_under_random_puts_and_removals)
{
    static uint64_t keys[NKEYS], vals[NKEYS];
    static int present[NKEYS];
    for (size_t i = 0; i < NKEYS; i++)
        keys[i] = i * 4096; /* mixed, yet many share low bits */
    keys[1] = UINT64_MAX;
    tl_u64map m = {0};
    srand(7);
    size_t n = 0;
    int bad = 0;
    for (int step = 0; step < 200000; step++) {
        size_t i = (size_t)rand() % NKEYS;
        int op = rand() % 3;
        if (op == 0) {
            uint64_t v = (uint64_t)rand() << 20 | (uint64_t)step;
            CHECK_EQ_INT(tl_u64map_put(&m, keys[i], v), 0);
            n += !present[i];
            present[i] = 1;
            vals[i] = v;
        } else if (op == 1) {
            bad += tl_u64map_del(&m, keys[i]) != present[i];
            n -= present[i];
            present[i] = 0;
        }
        uint64_t *got = tl_u64map_get(&m, keys[i]);
        bad += present[i] ? !got || *got != vals[i] : got != NULL;
        if (step % 1000 == 0) /* every key, now and then */
            for (size_t k = 0; k < NKEYS; k++) {
                got = tl_u64map_get(&m, keys[k]);
                bad += present[k] ? !got || *got != vals[k] : got != NULL;
            }
        bad += m.n != n;
    }
    CHECK_EQ_INT(bad, 0);
    tl_u64map_clear(&m);
    CHECK_EQ_INT(m.n, 0);
    CHECK(tl_u64map_get(&m, keys[3]) == NULL);
    CHECK_EQ_INT(tl_u64map_put(&m, 0, 42), 0);
    CHECK(tl_u64map_get(&m, 0) && *tl_u64map_get(&m, 0) == 42);
    tl_u64map_free(&m);
    CHECK(tl_u64map_get(&m, 0) == NULL && tl_u64map_del(&m, 0) == 0);
}

int main(void)
{
    RUN(matches_an_array_under_random_puts_and_removals);
    return test_summary();
}
