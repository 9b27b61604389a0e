/*
 * test_cupti_start.c — the CUPTI collector's loader degrades cleanly: with no libcupti, or
 * with the real libcupti but no CUDA driver (CUPTI answers CUPTI_ERROR_UNKNOWN), starting it
 * returns TALLY_ENOTSUP, says so in exactly one line on stderr, keeps errno, and a second start
 * is silent. Each case runs in a child process (the collector starts once per process).
 */
#include "collect/collect.h"
#include "testlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tally.h>

/* Runs tally__cupti_start twice in a child with TALLY_CUPTI_PATH=path; returns the first
 * result, the child's stderr in err. */
static int start_in_child(const char *path, char *err, size_t cap, int *second, int *errno_kept)
{
    int out[2], res[2];
    if (pipe(out) != 0 || pipe(res) != 0)
        return 99;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], 2);
        close(out[0]);
        close(res[0]);
        if (path)
            setenv("TALLY_CUPTI_PATH", path, 1);
        errno = 1234;
        int r[3];
        r[0] = tally__cupti_start();
        r[2] = errno == 1234;
        r[1] = tally__cupti_start();
        if (write(res[1], r, sizeof r) != (ssize_t)sizeof r)
            _exit(3);
        _exit(0); /* no atexit handlers: nothing of the child's libcupti to tear down */
    }
    close(out[1]);
    close(res[1]);
    size_t n = 0;
    ssize_t k;
    while (n + 1 < cap && (k = read(out[0], err + n, cap - 1 - n)) > 0)
        n += (size_t)k;
    err[n] = 0;
    int r[3] = {99, 99, 0};
    if (read(res[0], r, sizeof r) != (ssize_t)sizeof r)
        r[0] = 98;
    close(out[0]);
    close(res[0]);
    waitpid(pid, NULL, 0);
    *second = r[1];
    *errno_kept = r[2];
    return r[0];
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

TEST(missing_library)
{
    char err[2048];
    int second, kept;
    int r = start_in_child("/nonexistent/libcupti.so", err, sizeof err, &second, &kept);
    CHECK_EQ_INT(r, TALLY_ENOTSUP);
    CHECK_EQ_INT(second, TALLY_ENOTSUP);
    CHECK(kept);
    CHECK_EQ_INT(lines(err), 1);
    CHECK(strstr(err, "tally: ") == err);
}

TEST(real_cupti_without_driver)
{
#if defined(TALLY_HAVE_CUPTI)
    void *drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    void *drv2 = drv ? drv : dlopen("libcuda.so.1", RTLD_LAZY);
    if (drv2)
        TEST_SKIP("a CUDA driver is present");
    void *cupti = dlopen("libcupti.so.13", RTLD_LAZY);
    if (!cupti)
        cupti = dlopen("/usr/local/cuda/lib64/libcupti.so", RTLD_LAZY);
    if (!cupti)
        TEST_SKIP("no libcupti here");
    /* left open: closing it unloads the libstdc++ it brought, whose emergency exception pool
     * (72 KB) LeakSanitizer then reports as leaked */
    char err[2048];
    int second, kept;
    int r = start_in_child(NULL, err, sizeof err, &second, &kept);
    CHECK_EQ_INT(r, TALLY_ENOTSUP);
    CHECK_EQ_INT(second, TALLY_ENOTSUP);
    CHECK(kept);
    CHECK_EQ_INT(lines(err), 1);
    CHECK(strstr(err, "GPU activity is not recorded") != NULL);
#else
    TEST_SKIP("built without the CUPTI headers");
#endif
}

int main(void)
{
    RUN(missing_library);
    RUN(real_cupti_without_driver);
    return test_summary();
}
