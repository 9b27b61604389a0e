/*
 * test_cli_load.c — the command line's load (src/cli/runner.c): a trace whose arrays are small
 * is read without transparent huge pages (on a system that makes every 2 MB stretch one, a
 * small trace's half-used arrays each held whole huge pages), a big one with the system's
 * default; the choice follows the input, as a later, bigger input of the same process asks.
 */
#include "cli/runner.h"
#include "testlib.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

static const char small_json[] =
    "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"step\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":5}]}";

/* A file at path: text, then zeros up to size bytes (a sparse file: nothing written). */
static int make_file(const char *path, const char *text, off_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    ssize_t n = (ssize_t)strlen(text);
    int ok = write(fd, text, (size_t)n) == n && ftruncate(fd, size > n ? size : n) == 0;
    close(fd);
    return ok ? 0 : -1;
}

#ifdef PR_GET_THP_DISABLE
/* Load path as the command line does (a trace of one event when good says so): whether this
 * process then has transparent huge pages off. */
static int load_then_thp_off(const char *path, int good)
{
    tl_trace t;
    tl_trace_init(&t);
    int rc = cli_load("report", &t, path, 0);
    CHECK(good ? rc == 0 && t.nev == 1 : rc != 0);
    tl_trace_free(&t);
    return prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
}
#endif

TEST(small_traces_are_read_without_huge_pages_big_ones_with_the_default)
{
#ifndef PR_GET_THP_DISABLE
    TEST_SKIP("no PR_GET_THP_DISABLE");
#else
    char dir[] = "/tmp/tally_cli_load_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char small[256], big[256], bigtally[256];
    snprintf(small, sizeof small, "%s/small.json", dir);
    snprintf(big, sizeof big, "%s/big.json", dir);            /* 200 MB: arrays of ~40 MB */
    snprintf(bigtally, sizeof bigtally, "%s/big.tally", dir); /* 8 MB .tally: ~32 MB */
    CHECK(make_file(small, small_json, 0) == 0);
    CHECK(make_file(big, small_json, (off_t)200 << 20) == 0);
    CHECK(make_file(bigtally, "x", (off_t)8 << 20) == 0);
    /* the big ones are not traces (zeros past the text): the load fails, its choice stands */
    CHECK_EQ_INT(load_then_thp_off(small, 1), 1);
    CHECK_EQ_INT(load_then_thp_off(big, 0), 0);
    CHECK_EQ_INT(load_then_thp_off(small, 1), 1);
    CHECK_EQ_INT(load_then_thp_off(bigtally, 0), 0);
    unlink(small);
    unlink(big);
    unlink(bigtally);
    rmdir(dir);
#endif
}

int main(void)
{
    RUN(small_traces_are_read_without_huge_pages_big_ones_with_the_default);
    return test_summary();
}
