/*
 * cmd_run.c — `tally run [options] -- PROGRAM ARGS`: profile an unmodified program.
 *
 * The program is not rebuilt and not linked with tally. We point NVTX_INJECTION64_PATH and
 * CUDA_INJECTION64_PATH at libtally.so; NVTX and the CUDA driver load it and call its entry
 * points (src/collect/), which start a session configured by the TALLY_* variables set here.
 * The child writes its own trace when it exits (one per process: torchrun workers and other
 * children each write theirs, in rank<N>/ folders when the launcher gives ranks). Afterwards
 * every new Chrome trace gets the ".pt.trace.json.gz" ending that TensorBoard's profiler
 * plugin looks for, and we exit with the program's status (128+signal when it was killed),
 * having passed SIGINT, SIGTERM and SIGHUP on to it.
 *
 * Exit status: the program's; 2 on a usage error; 127 when the program cannot be started.
 */
#include "cli/commands.h"
#include "record/schedule.h"
#include "report/summary.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: tally run [-o DIR] [--name PATTERN] [--schedule SPEC] [--step-range NAME]\n"
    "                 [--write LIST] [--gpu|--no-gpu] [--no-nvtx] [--quiet] -- PROGRAM [ARGS]\n";

enum opt_id {
    OPT_OUTPUT,
    OPT_NAME,
    OPT_SCHEDULE,
    OPT_STEP_RANGE,
    OPT_WRITE,
    OPT_NO_GPU,
    OPT_NO_NVTX,
    OPT_QUIET,
    OPT_HELP
};

static const struct option_def {
    enum opt_id id;
    const char *name; /* long form, without "--" */
    char short_name;  /* 0 = none */
    const char *arg;  /* argument name, NULL = flag */
    const char *help;
} options[] = {
    {OPT_OUTPUT, "output", 'o', "DIR", "write traces under DIR (default: the current folder)"},
    {OPT_NAME, "name", 0, "PATTERN", "file names, with {host} {pid} {rank} {time}"},
    {OPT_SCHEDULE, "schedule", 0, "SPEC",
     "steps to record: \"wait=1,warmup=1,active=3,repeat=1\" or \"3:10\""},
    {OPT_STEP_RANGE, "step-range", 0, "NAME", "a step ends where an NVTX range named NAME ends"},
    {OPT_WRITE, "write", 0, "LIST", "outputs: tally,json,json.gz,summary (default all but json)"},
    {OPT_NO_GPU, "no-gpu", 0, NULL, "do not record GPU activity (no CUDA injection)"},
    {OPT_NO_NVTX, "no-nvtx", 0, NULL, "do not record NVTX ranges"},
    {OPT_QUIET, "quiet", 'q', NULL, "print nothing but errors (no summary)"},
    {OPT_HELP, "help", 'h', NULL, "this help"},
};
#define NOPTIONS (sizeof options / sizeof options[0])

static void help(FILE *f)
{
    fputs(usage, f);
    fputs("\nRuns PROGRAM with libtally injected through NVTX_INJECTION64_PATH and\n"
          "CUDA_INJECTION64_PATH: its NVTX ranges (PyTorch's emit_nvtx ops become operators\n"
          "with their input shapes), CUDA kernels, copies, memsets, API calls and device\n"
          "allocations are recorded, with no change to the program. Every process writes\n"
          "DIR/[rank<N>/]tally-<host>-<pid>.tally and a Chrome trace ending .pt.trace.json.gz\n"
          "(TensorBoard's profiler plugin reads it), and prints its summary at exit.\n"
          "Exits with the program's status (128+signal when killed).\n"
          "\noptions:\n",
          f);
    for (size_t i = 0; i < NOPTIONS; i++) {
        char left[48];
        if (options[i].short_name)
            snprintf(left, sizeof left, "-%c, --%s%s%s", options[i].short_name, options[i].name,
                     options[i].arg ? " " : "", options[i].arg ? options[i].arg : "");
        else
            snprintf(left, sizeof left, "    --%s%s%s", options[i].name, options[i].arg ? " " : "",
                     options[i].arg ? options[i].arg : "");
        fprintf(f, "  %-26s %s\n", left, options[i].help);
    }
    fputs("\nOther TALLY_* variables in the environment (TALLY_MEMORY_CAP, ...) pass through.\n"
          "See docs/run.md.\n",
          f);
}

/* The state of one invocation. */
struct run_state {
    const char *output;
    const char *name;
    const char *schedule;
    const char *step_range;
    const char *write;
    int no_gpu, no_nvtx, quiet;
    unsigned write_set; /* TALLY_WRITE_* that tally run makes after the program */
    char **argv; /* the program and its arguments */
    time_t started;
};

static volatile sig_atomic_t g_child;

static void forward_signal(int sig)
{
    if (g_child > 0)
        kill((pid_t)g_child, sig);
}

static int parse(struct run_state *st, int argc, char **argv)
{
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == 0)
            break; /* the program */
        const struct option_def *o = NULL;
        const char *val = NULL;
        for (size_t k = 0; k < NOPTIONS && !o; k++) {
            if (a[1] == '-') {
                size_t n = strlen(options[k].name);
                if (!strncmp(a + 2, options[k].name, n) && (a[2 + n] == 0 || a[2 + n] == '=')) {
                    o = &options[k];
                    if (a[2 + n] == '=')
                        val = a + 3 + n;
                }
            } else if (options[k].short_name && a[1] == options[k].short_name) {
                o = &options[k];
                if (a[2])
                    val = a + 2;
            }
        }
        if (!o) {
            fprintf(stderr, "tally run: unknown option '%s' ('tally run --help' lists them)\n", a);
            return -1;
        }
        if (o->arg && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tally run: option '%s' expects %s\n", a, o->arg);
                return -1;
            }
            val = argv[++i];
        } else if (!o->arg && val) {
            fprintf(stderr, "tally run: option '%s' takes no value\n", a);
            return -1;
        }
        switch (o->id) {
        case OPT_OUTPUT:
            st->output = val;
            break;
        case OPT_NAME:
            st->name = val;
            break;
        case OPT_SCHEDULE:
            st->schedule = val;
            break;
        case OPT_STEP_RANGE:
            st->step_range = val;
            break;
        case OPT_WRITE:
            st->write = val;
            break;
        case OPT_NO_GPU:
            st->no_gpu = 1;
            break;
        case OPT_NO_NVTX:
            st->no_nvtx = 1;
            break;
        case OPT_QUIET:
            st->quiet = 1;
            break;
        case OPT_HELP:
            help(stdout);
            return 1;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "tally run: no program given\n%s", usage);
        return -1;
    }
    st->argv = argv + i;
    return 0;
}

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

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* After the program: one new trace, converted to Chrome JSON with the .pt.trace.json[.gz]
 * ending that TensorBoard's profiler plugin looks for, and its short report on stderr. The
 * program itself only wrote the .tally file: nothing of this ran inside it. */
static int finish_trace(const struct run_state *st, const char *path)
{
    int want_summary = (st->write_set & TALLY_WRITE_SUMMARY) && !st->quiet;
    int want_json = st->write_set & (TALLY_WRITE_JSON | TALLY_WRITE_JSON_GZ);
    if (!st->quiet)
        fprintf(stderr, "tally run: wrote %s\n", path);
    if (!want_summary && !want_json)
        return 0;
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    int rc = 0;
    if (tl_load(&t, path, 1, &err) != 0) {
        fprintf(stderr, "tally run: %s\n", err.msg);
        tl_trace_free(&t);
        return 1;
    }
    size_t n = strlen(path) - strlen(".tally");
    const char *exts[2] = {(st->write_set & TALLY_WRITE_JSON) ? ".pt.trace.json" : NULL,
                           (st->write_set & TALLY_WRITE_JSON_GZ) ? ".pt.trace.json.gz" : NULL};
    for (int i = 0; i < 2; i++) {
        if (!exts[i])
            continue;
        char to[PATH_MAX + 32];
        snprintf(to, sizeof to, "%.*s%s", (int)n, path, exts[i]);
        if (tl_write_chrome(&t, to, &err) != 0) {
            fprintf(stderr, "tally run: %s\n", err.msg[0] ? err.msg : to);
            rc = 1;
        } else if (!st->quiet) {
            fprintf(stderr, "tally run: wrote %s\n", to);
        }
    }
    if (want_summary) {
        fprintf(stderr, "\n%s\n", path);
        tl_summary_print(stderr, &t);
    }
    tl_trace_free(&t);
    return rc;
}

/* The .tally files in dir (and its rank<N>/ folders) newer than the start. Returns how many. */
static int collect_outputs(const struct run_state *st, const char *dir, int depth, int *failed)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0)
            continue;
        if (S_ISDIR(sb.st_mode)) {
            if (depth == 0 && !strncmp(de->d_name, "rank", 4))
                found += collect_outputs(st, path, 1, failed);
            continue;
        }
        if (sb.st_mtime < st->started || !ends_with(de->d_name, ".tally"))
            continue;
        found++;
        if (finish_trace(st, path) != 0)
            *failed = 1;
    }
    closedir(d);
    return found;
}

static int driver_present(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h)
        return 0;
    dlclose(h);
    return 1;
}

static int run(struct run_state *st)
{
    const char *lib = cli_libtally_path();
    if (!lib) {
        fprintf(stderr, "tally run: libtally.so not found next to %s or in ../lib\n", cli_argv0);
        return 2;
    }
    char libabs[PATH_MAX];
    if (!realpath(lib, libabs)) {
        fprintf(stderr, "tally run: %s: %s\n", lib, strerror(errno));
        return 2;
    }
    const char *out = st->output ? st->output : ".";
    if (make_dirs(out) != 0) {
        fprintf(stderr, "tally run: cannot create output folder %s: %s\n", out, strerror(errno));
        return 2;
    }
    char outabs[PATH_MAX];
    if (!realpath(out, outabs)) {
        fprintf(stderr, "tally run: %s: %s\n", out, strerror(errno));
        return 2;
    }
    if (!st->no_gpu && !driver_present())
        fprintf(stderr, "tally run: no CUDA driver (libcuda.so.1) on this machine; recording "
                        "NVTX and host activity only\n");

    st->started = time(NULL) - 1; /* mtime has 1 s resolution on some file systems */
    fflush(stdout);
    fflush(stderr);
    int fail[2]; /* close-on-exec: the child writes errno here when exec fails */
    if (pipe2(fail, O_CLOEXEC) != 0) {
        fprintf(stderr, "tally run: pipe: %s\n", strerror(errno));
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "tally run: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        close(fail[0]);
        if (!st->no_nvtx)
            setenv("NVTX_INJECTION64_PATH", libabs, 1);
        if (!st->no_gpu)
            setenv("CUDA_INJECTION64_PATH", libabs, 1);
        setenv("TALLY_OUTPUT_DIR", outabs, 1);
        setenv("TALLY_RANK_DIRS", "1", 1);
        if (st->name)
            setenv("TALLY_NAME", st->name, 1);
        if (st->schedule)
            setenv("TALLY_SCHEDULE", st->schedule, 1);
        if (st->step_range)
            setenv("TALLY_STEP_RANGE", st->step_range, 1);
        /* the program writes the .tally file only; JSON and the report are made here after */
        setenv("TALLY_WRITE", "tally", 1);
        if (st->quiet)
            setenv("TALLY_QUIET", "1", 1);
        execvp(st->argv[0], st->argv);
        int e = errno;
        if (write(fail[1], &e, sizeof e) < 0)
            _exit(127);
        _exit(127);
    }
    close(fail[1]);
    int exec_errno = 0;
    ssize_t got;
    while ((got = read(fail[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR)
        ;
    close(fail[0]);
    if (got == (ssize_t)sizeof exec_errno) {
        waitpid(pid, NULL, 0);
        fprintf(stderr, "tally run: cannot run %s: %s\n", st->argv[0], strerror(exec_errno));
        return 127;
    }
    g_child = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "tally run: waitpid: %s\n", strerror(errno));
            return 2;
        }
    }
    g_child = 0;
    int rc;
    if (WIFEXITED(status))
        rc = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        rc = 128 + WTERMSIG(status);
    else
        rc = 1;
    int failed = 0;
    int n = collect_outputs(st, outabs, 0, &failed);
    if (failed && rc == 0)
        rc = 1;
    if (n == 0 && !st->quiet)
        fprintf(stderr,
                "tally run: no trace was written (the program made no NVTX or CUDA call%s)\n",
                WIFSIGNALED(status) ? ", or it was killed" : "");
    if (WIFSIGNALED(status) && !st->quiet)
        fprintf(stderr, "tally run: %s was killed by signal %d\n", st->argv[0], WTERMSIG(status));
    return rc;
}

int cmd_run(int argc, char **argv)
{
    struct run_state st;
    memset(&st, 0, sizeof st);
    int p = parse(&st, argc, argv);
    if (p != 0)
        return p > 0 ? 0 : 2;
    const char *w = st.write ? st.write : getenv("TALLY_WRITE");
    st.write_set = TALLY_WRITE_TALLY | TALLY_WRITE_JSON_GZ | TALLY_WRITE_SUMMARY;
    if (w && tally__parse_write(w, &st.write_set) != 0) {
        fprintf(stderr,
                "tally run: %s '%s': expected a comma-separated list of tally, json, json.gz, "
                "summary\n",
                st.write ? "--write" : "TALLY_WRITE", w);
        return 2;
    }
    return run(&st);
}
