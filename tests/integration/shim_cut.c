/*
 * shim_cut.c — LD_PRELOAD'ed by file_cut_short.sh: the first time a file whose name ends in
 * TALLY_TEST_CUT_NAME is mapped, or read past TALLY_TEST_CUT_TO bytes (not from its start), it is
 * truncated to TALLY_TEST_CUT_TO bytes just before, the way a training run that rewrites its trace
 * cuts it under a reader, without a race to win.
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

/* Cut fd's file if it is the target and not cut yet, and if [off, off + len) goes past the
 * cut (off < 0: a mapping, any range). A read from the file's start never cuts: every loader
 * reads the first bytes to tell the format (the .tally file is cut to 0 when mapped). */
static void maybe_cut(int fd, off_t off, size_t len)
{
    const char *name = getenv("TALLY_TEST_CUT_NAME"), *to = getenv("TALLY_TEST_CUT_TO");
    if (fd < 0 || !name || !to || off == 0 ||
        (off > 0 && (long long)off + (long long)len <= atoll(to)) || atomic_load(&cut) ||
        !is_target(fd, name) || atomic_exchange(&cut, 1))
        return;
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    int w = open(link, O_WRONLY);
    if (w >= 0) {
        if (ftruncate(w, (off_t)atoll(to)) != 0)
            perror("shim_cut: ftruncate");
        close(w);
    }
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    static void *(*real)(void *, size_t, int, int, int, off_t);
    if (!real)
        real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
    maybe_cut(fd, -1, len);
    return real(addr, len, prot, flags, fd, off);
}

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
    static ssize_t (*real)(int, void *, size_t, off_t);
    if (!real)
        real = (ssize_t(*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
    maybe_cut(fd, off, len);
    return real(fd, buf, len, off);
}

ssize_t read(int fd, void *buf, size_t len)
{
    static ssize_t (*real)(int, void *, size_t);
    if (!real)
        real = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    if (!atomic_load(&cut) && getenv("TALLY_TEST_CUT_NAME")) {
        off_t at = lseek(fd, 0, SEEK_CUR);
        if (at >= 0)
            maybe_cut(fd, at, len);
    }
    return real(fd, buf, len);
}
