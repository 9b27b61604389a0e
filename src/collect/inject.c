/*
 * inject.c — how an unmodified program gets a session, and how a linked one gets the GPU.
 *
 * Unmodified programs (`tally run`, or the variables set by hand): NVTX_INJECTION64_PATH and
 * CUDA_INJECTION64_PATH name libtally.so. NVTX calls InitializeInjectionNvtx2 (nvtx.c) at each
 * NVTX copy's first call; the CUDA driver calls InitializeInjection inside cuInit. Whichever
 * comes first starts the session (settings from the TALLY_* environment) with
 * tally__start_injected; InitializeInjection then starts CUPTI. With TALLY_RANK_DIRS=1 (set by
 * `tally run`) the output goes to $TALLY_OUTPUT_DIR/rank<N>/ when the launcher gave this process
 * a rank (torchrun, Open MPI, Slurm), so every rank writes its own folder.
 *
 * Linked programs: tally_start calls tally__collect_start. With TALLY_GPU=1 it starts CUPTI
 * directly. It also points NVTX_INJECTION64_PATH at this very library (when it is a shared
 * library and the variable is unset), so NVTX copies that initialise later reach us; such an
 * NVTX init then only installs callbacks and never starts a session of its own.
 */
#include "collect/collect.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <tally.h>

#include "record/internal.h"
#include "record/recorder.h"

#define EXPORT __attribute__((visibility("default")))

static atomic_int g_linked;   /* a session was started by the program itself (tally_start) */
static atomic_int g_injected; /* we started a session from an injection entry point */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* mkdir -p */
static int make_dirs(const char *path)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return -1;
            buf[i] = c;
        }
    }
    return 0;
}

/* Per-rank output folder: $TALLY_OUTPUT_DIR/rank<N> when TALLY_RANK_DIRS=1 and a rank is known. */
static void rank_dir(void)
{
    const char *on = getenv("TALLY_RANK_DIRS");
    if (!on || strcmp(on, "1") != 0)
        return;
    int rank = tally__env_rank();
    if (rank < 0)
        return;
    const char *dir = getenv("TALLY_OUTPUT_DIR");
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/rank%d", dir && *dir ? dir : ".", rank);
    if (make_dirs(path) == 0)
        setenv("TALLY_OUTPUT_DIR", path, 1);
}

/* Start the session of an injected process, once, unless the program runs its own. */
void tally__inject_session(void)
{
    int saved = errno;
    /* NVTX_INJECTION64_PATH inherited from a linked parent that set it for itself (below):
     * this process did not ask to be profiled. */
    const char *owner = getenv("TALLY_NVTX_OWNER_PID");
    if (owner && atoll(owner) != (long long)getpid()) {
        errno = saved;
        return;
    }
    pthread_mutex_lock(&g_lock);
    if (!atomic_load(&g_linked) && !atomic_load(&g_injected) && !tally_running()) {
        atomic_store(&g_injected, 1);
        rank_dir();
        int rc = tally__start_injected();
        if (rc != 0 && rc != TALLY_ESTATE)
            fprintf(stderr, "tally: could not start the session: %s\n", tally_strerror(rc));
    }
    pthread_mutex_unlock(&g_lock);
    errno = saved;
}

/* CUDA_INJECTION64_PATH entry point, called by the driver inside cuInit, once per process. */
EXPORT int InitializeInjection(void)
{
    int saved = errno;
    if (tally__program_is_static()) {
        errno = saved;
        return 1;
    }
    if (getenv("TALLY_CUPTI_DEBUG"))
        fprintf(stderr, "tally: InitializeInjection (CUDA), session %s\n",
                tally_running() ? "running" : "not running");
    tally__inject_session();
    tally__cupti_start();
    errno = saved;
    return 1; /* never make CUDA fail because of us */
}

int tally__program_is_static(void)
{
    static int answer = -1;
    if (answer >= 0)
        return answer;
    int saved = errno;
    answer = 0;
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    Elf64_Ehdr eh;
    if (fd >= 0 && pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
        !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
        eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 && eh.e_phnum < 4096) {
        int interp = 0;
        for (unsigned i = 0; i < eh.e_phnum && !interp; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) !=
                (ssize_t)sizeof ph)
                break;
            interp = ph.p_type == PT_INTERP;
        }
        answer = !interp;
    }
    if (fd >= 0)
        close(fd);
    if (answer) {
        static const char msg[] = "tally: this program is statically linked: tally cannot be "
                                  "injected into it and records nothing (link it with -ltally)\n";
        if (write(2, msg, sizeof msg - 1) < 0)
            answer = 1;
    }
    errno = saved;
    return answer;
}

/* Path of this library when it is a shared object, else NULL. */
static const char *self_so(char *buf, size_t cap)
{
    if (tally__self_path(buf, cap) != 0)
        return NULL;
    const char *base = strrchr(buf, '/');
    base = base ? base + 1 : buf;
    return strstr(base, ".so") ? buf : NULL;
}

int tally__self_path(char *buf, size_t cap)
{
    Dl_info info;
    if (!dladdr((void *)tally__self_path, &info) || !info.dli_fname || !*info.dli_fname)
        return -1;
    char real[PATH_MAX];
    const char *p = realpath(info.dli_fname, real) ? real : info.dli_fname;
    if (strlen(p) >= cap)
        return -1;
    strcpy(buf, p);
    return 0;
}

void tally__collect_start(void)
{
    int saved = errno;
    if (!atomic_load(&g_injected))
        atomic_store(&g_linked, 1);
    /* NVTX copies that have not initialised yet will find us. */
    if (!getenv("NVTX_INJECTION64_PATH")) {
        char path[PATH_MAX];
        if (self_so(path, sizeof path)) {
            char pid[32];
            snprintf(pid, sizeof pid, "%lld", (long long)getpid());
            setenv("TALLY_NVTX_OWNER_PID", pid, 1);
            setenv("NVTX_INJECTION64_PATH", path, 0);
        }
    }
    const char *gpu = getenv("TALLY_GPU");
    if (gpu && strcmp(gpu, "1") == 0)
        tally__cupti_start();
    errno = saved;
}

void tally__collect_stop(void)
{
    tally__cupti_flush();
}
