/*
 * shim_enospc.c — LD_PRELOAD'ed by diskfull.sh: makes the disk "full" for .tally files after
 * TALLY_TEST_FULL_AFTER bytes (pwrite then writes what fits and fails with ENOSPC), the way a
 * real full disk behaves, without needing one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Atomic long long written;

static int is_trace(int fd)
{
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    return n > 6 && !memcmp(target + n - 6, ".tally", 6);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset)
{
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real)
        real = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    const char *lim = getenv("TALLY_TEST_FULL_AFTER");
    if (lim && is_trace(fd)) {
        long long room = atoll(lim) - atomic_load(&written);
        if (room <= 0) {
            errno = ENOSPC;
            return -1;
        }
        if ((long long)count > room)
            count = (size_t)room;
    }
    ssize_t w = real(fd, buf, count, offset);
    if (w > 0 && lim && is_trace(fd))
        atomic_fetch_add(&written, w);
    return w;
}
