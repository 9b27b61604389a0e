/*
 * shim_cut.c — LD_PRELOAD'ed by file_cut_short.sh: the first time a file whose name ends in
 * TALLY_TEST_CUT_NAME is mapped, it is truncated to TALLY_TEST_CUT_TO bytes just before, the way
 * a training run that rewrites its trace cuts it under a reader, without a race to win.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static atomic_int cut;

static int is_target(int fd, const char *suffix)
{
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    size_t k = strlen(suffix);
    return n > 0 && (size_t)n >= k && !memcmp(target + n - (ssize_t)k, suffix, k);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    static void *(*real)(void *, size_t, int, int, int, off_t);
    if (!real)
        real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    const char *name = getenv("TALLY_TEST_CUT_NAME"), *to = getenv("TALLY_TEST_CUT_TO");
    if (fd >= 0 && name && to && is_target(fd, name) && atomic_exchange(&cut, 1) == 0) {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        int w = open(link, O_WRONLY);
        if (w >= 0) {
            if (ftruncate(w, (off_t)atoll(to)) != 0)
                perror("shim_cut: ftruncate");
            close(w);
        }
    }
    return real(addr, len, prot, flags, fd, off);
}
