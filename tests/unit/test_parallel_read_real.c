/*
 * test_parallel_read_real.c — every real trace (../shared/traces, gunzipped into a plain file:
 * the parallel parse reads plain files) read with 1, 2, 3 and 7 threads, with the reader's own
 * parts and with parts of 256 KB (dozens of windows each): the same model and the same default
 * report, byte for byte.
 */
#include "parallel_check.h"
#include "testlib.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TEST(every_shared_trace_reads_the_same_with_any_threads)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/traces", TALLY_SHARED_DIR);
    DIR *d = opendir(dir);
    if (!d)
        TEST_SKIP("no real traces under %s", dir);
    char tmp[] = "/tmp/tally-parallel-real-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    static const int parts[] = {0, 256 << 10};
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && !test_failures) {
        size_t l = strlen(de->d_name);
        if (l < 8 || strcmp(de->d_name + l - 8, ".json.gz") != 0)
            continue;
        char src[2048], dst[2048];
        snprintf(src, sizeof src, "%s/%s", dir, de->d_name);
        snprintf(dst, sizeof dst, "%s/%.*s", tmp, (int)(l - 3), de->d_name);
        size_t len = 0;
        char *text = test_read_file(src, &len);
        CHECK(text != NULL);
        FILE *f = fopen(dst, "w");
        CHECK(f != NULL);
        if (text && f)
            CHECK(fwrite(text, 1, len, f) == len);
        if (f)
            fclose(f);
        free(text);
        test_current = de->d_name;
        check_file(dst, parts, 2, 1);
        unlink(dst);
        n++;
    }
    closedir(d);
    rmdir(tmp);
    CHECK(n >= 10);
    CHECK(windows_read > 100); /* the big ones were read in parallel */
}

int main(void)
{
    RUN(every_shared_trace_reads_the_same_with_any_threads);
    return test_summary();
}
