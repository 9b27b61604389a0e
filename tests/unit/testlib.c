#include "testlib.h"

#include <unistd.h>

#include <stdlib.h>
#include <zlib.h>

int test_failures;
int test_checks;
int test_skipped;
const char *test_current = "";

int test_summary(void)
{
    printf("%d checks: %d passed, %d failed", test_checks, test_checks - test_failures,
           test_failures);
    if (test_skipped)
        printf(", %d tests skipped", test_skipped);
    putchar('\n');
    return test_failures ? 1 : test_skipped ? TEST_SKIPPED : 0;
}

int test_have_shared_traces(void)
{
#ifdef TALLY_SHARED_DIR
    if (access(TALLY_SHARED_DIR "/traces/README.md", R_OK) == 0)
        return 1;
    fprintf(stderr,
            "skipped: no real traces under %s/traces (configure with "
            "-DTALLY_SHARED_DIR=...)\n",
            TALLY_SHARED_DIR);
#endif
    return 0;
}

char *test_read_file(const char *path, size_t *len)
{
    gzFile f = gzopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        int r = gzread(f, buf + n, (unsigned)(cap - n));
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    gzclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}
