/*
 * bench_crash_loss.c — what a program that dies loses of its trace.
 *
 * A child process records on its main thread 3 short ranges every 3 ms (noting in memory shared
 * with this process when each group completed) and, on a worker thread, bursts of ranges at
 * about a million a second; after --seconds it dies: killed with SIGKILL by this process, or by
 * its own segfault or abort. Then this process reads the child's .tally file and counts the
 * main-thread ranges in it against those the child completed up to 100 ms before it died.
 *
 * Prints, per death: the ranges expected (completed >= 100 ms before death), found, their ratio,
 * and the loss window (time from the newest main-thread range in the file to the death); then
 * medians. With --check it exits 1 unless every death kept >= 95 % of the expected ranges (the
 * integration test record_crash.sh runs it that way).
 *
 *   bench_crash_loss [--signal kill|segv|abort|all] [--repeat N] [--seconds S] [--check]
 */
#include "trace/model.h"

#include <tally.h>

#include "bench_util.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_GROUPS 100000

/* Memory shared by the child and this process. */
typedef struct shared {
    _Atomic int64_t groups;      /* main-thread groups of 3 ranges completed */
    int64_t done_ns[MAX_GROUPS]; /* when each completed (CLOCK_MONOTONIC) */
    _Atomic int64_t death_ns;    /* when the child died (or was about to) */
    _Atomic int ready;           /* the child is recording */
} shared;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
    struct timespec t = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    while (nanosleep(&t, &t) != 0)
        ;
}

static const tally_srcloc main_a = {"main.load", __FILE__, "main", __LINE__, TALLY_DATALOADER};
static const tally_srcloc main_b = {"main.forward", __FILE__, "main", __LINE__, TALLY_FORWARD};
static const tally_srcloc main_c = {"main.backward", __FILE__, "main", __LINE__, TALLY_BACKWARD};
static const tally_srcloc work = {"worker.op", __FILE__, "worker", __LINE__, TALLY_OPERATOR};

static void *worker(void *arg)
{
    (void)arg;
    tally_thread_name("worker");
    for (;;) {
        for (int i = 0; i < 1000; i++) {
            tally_push(&work);
            tally_pop();
        }
        sleep_ns(1000000);
    }
    return NULL;
}

enum death { DIE_KILL, DIE_SEGV, DIE_ABORT };
static const char *death_name[] = {"SIGKILL", "SIGSEGV", "abort"};

static void child(shared *sh, const char *dir, enum death how, double seconds)
{
    /* a crash here is the point: no core file, no sanitizer report of it */
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    tally_config c = bench_config(dir, "crash", NULL);
    if (tally_start(&c) != 0)
        _exit(3);
    pthread_t th;
    pthread_create(&th, NULL, worker, NULL);
    atomic_store(&sh->ready, 1);
    int64_t t0 = now_ns(), end = t0 + (int64_t)(seconds * 1e9);
    for (int64_t g = 0; g < MAX_GROUPS; g++) {
        TALLY_SCOPE("main.step", TALLY_USER) {}
        tally_push(&main_a);
        tally_pop();
        tally_push(&main_b);
        tally_pop();
        tally_push(&main_c);
        tally_pop();
        sh->done_ns[g] = now_ns();
        atomic_store(&sh->groups, g + 1);
        if (how != DIE_KILL && sh->done_ns[g] >= end) {
            atomic_store(&sh->death_ns, now_ns());
            if (how == DIE_ABORT)
                abort();
            volatile int *volatile nowhere = NULL;
            *nowhere = 1; /* a real segfault */
        }
        sleep_ns(3000000);
    }
    _exit(0);
}

/* The one .tally file in dir, or NULL. */
static char *find_trace(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char *found = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n > 6 && !strcmp(de->d_name + n - 6, ".tally")) {
            free(found);
            size_t len = strlen(dir) + n + 2;
            found = malloc(len);
            snprintf(found, len, "%s/%s", dir, de->d_name);
        }
    }
    closedir(d);
    return found;
}

typedef struct result {
    int64_t expected, found;
    double loss_ms; /* death - end of the newest main-thread range in the file */
    int ok;
} result;

static int run_once(enum death how, double seconds, result *r)
{
    memset(r, 0, sizeof *r);
    char dir[] = "/tmp/tally-crash-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("bench_crash_loss: mkdtemp");
        return -1;
    }
    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return -1;
    pid_t pid = fork();
    if (pid == 0)
        child(sh, dir, how, seconds);
    if (pid < 0)
        return -1;
    if (how == DIE_KILL) {
        while (!atomic_load(&sh->ready))
            sleep_ns(1000000);
        sleep_ns((int64_t)(seconds * 1e9));
        atomic_store(&sh->death_ns, now_ns());
        kill(pid, SIGKILL);
    }
    int st;
    waitpid(pid, &st, 0);
    int64_t death = atomic_load(&sh->death_ns);
    int64_t groups = atomic_load(&sh->groups);
    int64_t expected_groups = 0;
    while (expected_groups < groups && sh->done_ns[expected_groups] <= death - 100000000)
        expected_groups++;
    r->expected = 3 * expected_groups;

    char *path = find_trace(dir);
    int rc = 0;
    if (!path) {
        fprintf(stderr, "bench_crash_loss: %s: the child left no .tally file\n", death_name[how]);
        rc = -1;
    } else {
        tl_trace t;
        tl_trace_init(&t);
        tl_error err;
        memset(&err, 0, sizeof err);
        if (tl_load(&t, path, 0, &err) != 0) {
            fprintf(stderr, "bench_crash_loss: %s: %s\n", death_name[how], err.msg);
            rc = -1;
        } else {
            int64_t newest = INT64_MIN;
            for (size_t i = 0; i < t.nev; i++) {
                const tl_event *e = &t.ev[i];
                const char *name = tl_str(&t.strings, e->name);
                if (t.tracks[e->track].tid != pid || strncmp(name, "main.", 5) != 0 ||
                    !strcmp(name, "main.step") || (e->flags & TL_EV_UNCLOSED))
                    continue;
                r->found++;
                if (e->ts + e->dur > newest)
                    newest = e->ts + e->dur;
            }
            /* the trace's clock is CLOCK_MONOTONIC's, in ns */
            r->loss_ms = newest == INT64_MIN ? -1 : (double)(death - newest) / 1e6;
        }
        tl_trace_free(&t);
        unlink(path);
        free(path);
    }
    rmdir(dir);
    munmap(sh, sizeof *sh);
    r->ok = rc == 0 && r->found >= r->expected * 95 / 100;
    return rc;
}

int main(int argc, char **argv)
{
    int repeat = 3, check = 0, first = DIE_KILL, last = DIE_ABORT;
    double seconds = 2.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check"))
            check = 1;
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--signal") && i + 1 < argc) {
            const char *s = argv[++i];
            if (!strcmp(s, "kill"))
                first = last = DIE_KILL;
            else if (!strcmp(s, "segv"))
                first = last = DIE_SEGV;
            else if (!strcmp(s, "abort"))
                first = last = DIE_ABORT;
            else if (strcmp(s, "all") != 0) {
                fprintf(stderr, "bench_crash_loss: --signal expects kill, segv, abort or all\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_crash_loss [--signal kill|segv|abort|all] "
                            "[--repeat N] [--seconds S] [--check]\n");
            return 2;
        }
    }
    if (repeat < 1 || repeat > 1000 || !(seconds > 0.2 && seconds < 300)) {
        fprintf(stderr, "bench_crash_loss: --repeat 1..1000, --seconds 0.2..300\n");
        return 2;
    }
    const char *flush = getenv("TALLY_FLUSH_MS");
    printf("bench_crash_loss: %d death(s) of each kind after %.1f s; flush interval %s ms\n",
           repeat, seconds, flush ? flush : "50 (default)");
    printf("  %-8s %9s %9s %8s %10s\n", "death", "expected", "found", "kept", "loss_ms");
    int failed = 0;
    for (int how = first; how <= last; how++) {
        double *loss = calloc((size_t)repeat, sizeof *loss), *kept = calloc((size_t)repeat, 8);
        for (int k = 0; k < repeat; k++) {
            result r;
            if (run_once((enum death)how, seconds, &r) != 0 || !r.ok)
                failed = 1;
            kept[k] = r.expected ? 100.0 * (double)r.found / (double)r.expected : 0;
            loss[k] = r.loss_ms;
            printf("  %-8s %9lld %9lld %7.1f%% %10.1f%s\n", death_name[how], (long long)r.expected,
                   (long long)r.found, kept[k], r.loss_ms, r.ok ? "" : "   <- below 95%");
            fflush(stdout);
        }
        qsort(loss, (size_t)repeat, sizeof *loss, bench_cmp_double);
        qsort(kept, (size_t)repeat, sizeof *kept, bench_cmp_double);
        printf("  %-8s median kept %.1f%%, median loss window %.1f ms [%.1f-%.1f]\n",
               death_name[how], kept[repeat / 2], loss[repeat / 2], loss[0], loss[repeat - 1]);
        free(loss);
        free(kept);
    }
    return check && failed ? 1 : 0;
}
