/*
 * cmd_run.c — `tally run [options] -- PROGRAM ARGS`: profile an unmodified program.
 *
 * The program is not rebuilt and not linked with tally. We point NVTX_INJECTION64_PATH and
 * CUDA_INJECTION64_PATH at libtally.so; NVTX and the CUDA driver load it and call its entry
 * points (src/collect/), which start a session configured by the TALLY_* variables set here.
 * The child writes its own trace when it exits (one per process: torchrun workers and other
 * children each write theirs, in rank<N>/ folders when the launcher gives ranks). Afterwards
 * every new trace is converted to Chrome JSON with the ".pt.trace.json.gz" ending that
 * TensorBoard's profiler plugin looks for and its report printed, and we exit with the
 * program's status (128+signal when it was killed), having passed SIGINT, SIGTERM and SIGHUP
 * on to it.
 *
 * Everything is checked before the program starts: the options, and every TALLY_* setting the
 * program will see (the names against the one list in src/record/env_check.c, the values with
 * the library's own tally_config_from_env), so that a typo fails here, in one line, instead of
 * inside the program at its first NVTX call. A statically linked program cannot load
 * libtally.so (NVTX would dlopen it into a process without a dynamic loader and crash): it is
 * run as it is, unprofiled, with a line saying so.
 *
 * Exit status: the program's; 2 on a usage error or a bad setting; 127 when the program cannot
 * be started.
 */
#include "cli/commands.h"
#include "cli/runner.h"
#include "record/env_check.h"
#include "record/schedule.h"
#include "report/summary.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
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

/* The state of one invocation. */
struct run_state {
    const char *output;
    const char *name;
    const char *schedule;
    const char *step_range;
    unsigned write; /* --write: what tally run makes after the program; 0 = not given */
    int no_gpu, no_nvtx, quiet;
    char **argv;   /* the program and its arguments */
    int is_static; /* the program is statically linked: no injection */
    /* The .tally files of the output folder before the program started: one found again
     * unchanged is not the program's (a trace copied there a second before, an earlier run's) */
    struct tally_before {
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtim, ctim;
    } * before;
    size_t nbefore;
    int snapshot; /* collect_outputs only notes what is there */
};
#define CLI_STATE struct run_state

static int parse_write(const char *value, void *field)
{
    return tally__parse_write(value, field);
}

static const cli_option options[] = {
    CLI_OPTION("output", 'o', CLI_STRING, output, "DIR",
               "write traces under DIR (default: the current folder)"),
    CLI_OPTION("name", 0, CLI_STRING, name, "PATTERN",
               "file names, with {host} {pid} {rank} {time} (TALLY_NAME)"),
    CLI_OPTION("schedule", 0, CLI_STRING, schedule, "SPEC",
               "steps to record (TALLY_SCHEDULE): \"wait=1,warmup=1,active=3,repeat=1\"\n"
               "or \"3:10\""),
    CLI_OPTION("step-range", 0, CLI_STRING, step_range, "NAME",
               "a step ends where an NVTX range named NAME ends (TALLY_STEP_RANGE)"),
    CLI_PARSED("write", write, "LIST", parse_write,
               "a comma-separated list of tally, json, json.gz, summary",
               "outputs: tally,json,json.gz,summary (default all but json; TALLY_WRITE)"),
    CLI_OPTION("no-gpu", 0, CLI_FLAG, no_gpu, NULL,
               "do not record GPU activity (no CUDA injection)"),
    CLI_OPTION("no-nvtx", 0, CLI_FLAG, no_nvtx, NULL, "do not record NVTX ranges"),
    CLI_OPTION("quiet", 'q', CLI_FLAG, quiet, NULL, "print nothing but errors (no summary)"),
};

static void settings_help(FILE *f)
{
    fputs("Other TALLY_* variables in the environment (TALLY_MEMORY_CAP, ...) pass through. Every\n"
          "setting is checked before PROGRAM starts: an unknown TALLY_* name or a bad value is\n"
          "an error (exit status 2). A statically linked PROGRAM cannot be injected: it runs\n"
          "unprofiled. See docs/run.md.\n",
          f);
}

static const cli_command command = {
    .verb = "run",
    .operands = "PROGRAM [ARGS]",
    .what = "a program to run",
    .operands_off = offsetof(CLI_STATE, argv),
    .program_follows = 1,
    .about = "Runs PROGRAM with libtally injected through NVTX_INJECTION64_PATH and\n"
             "CUDA_INJECTION64_PATH: its NVTX ranges (PyTorch's emit_nvtx ops become operators\n"
             "with their input shapes), CUDA kernels, copies, memsets, API calls and device\n"
             "allocations are recorded, with no change to the program. Every process writes\n"
             "DIR/[rank<N>/]tally-<host>-<pid>.tally; after the program, tally converts each to\n"
             "a Chrome trace ending .pt.trace.json.gz (TensorBoard's profiler plugin reads it)\n"
             "and prints its summary. Exits with the program's status (128+signal when killed).",
    CLI_TABLE,
    .more_help = settings_help,
};

static volatile sig_atomic_t g_child;

static void forward_signal(int sig)
{
    if (g_child > 0)
        kill((pid_t)g_child, sig);
}

/* ---- the settings check ----------------------------------------------------------------- */

/* tally_config_from_env on the settings now in the environment. It prints its one-line reason
 * on stderr: caught here into msg (without its "tally: " and newline) so that the caller can
 * say it in its own words. Returns 0, or -1 with msg set. */
static int session_check(char *msg, size_t cap)
{
    tally_config cfg;
    memset(&cfg, 0, sizeof cfg);
    msg[0] = 0;
    int p[2], saved = -1;
    fflush(stderr);
    /* non-blocking: the message is one short line, far below a pipe's capacity */
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
        saved = dup(2);
        if (saved >= 0 && dup2(p[1], 2) < 0) {
            close(saved);
            saved = -1;
        }
        close(p[1]);
        if (saved < 0) /* not caught: the message goes to stderr as it is */
            close(p[0]);
    }
    int rc = tally_config_from_env(&cfg);
    if (saved >= 0) {
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        ssize_t n = read(p[0], msg, cap - 1);
        msg[n > 0 ? n : 0] = 0;
        msg[strcspn(msg, "\n")] = 0;
        if (!strncmp(msg, "tally: ", 7))
            memmove(msg, msg + 7, strlen(msg + 7) + 1);
        close(p[0]);
    }
    if (rc == 0 && msg[0]) /* not an error: pass it on */
        fprintf(stderr, "tally run: %s\n", msg);
    if (rc != 0 && !msg[0])
        snprintf(msg, cap, "the TALLY_* settings are not valid: %s", tally_strerror(rc));
    return rc == 0 ? 0 : -1;
}

/* Every TALLY_* setting the program would see now: 0, or -1 with one line in msg. */
static int settings_check(char *msg, size_t cap)
{
    return tally__env_check(msg, cap) != 0 || session_check(msg, cap) != 0 ? -1 : 0;
}

/* The settings the options give the program. */
static const struct {
    const char *option;
    const char *variable;
    size_t off; /* the option's value in struct run_state */
} option_settings[] = {
    {"--name", "TALLY_NAME", offsetof(CLI_STATE, name)},
    {"--schedule", "TALLY_SCHEDULE", offsetof(CLI_STATE, schedule)},
    {"--step-range", "TALLY_STEP_RANGE", offsetof(CLI_STATE, step_range)},
};

/* Set the program's settings in this process (tally run is single-threaded until it forks:
 * the child inherits them), checking after each, so that an error names what the user typed:
 * first the inherited TALLY_* variables, then each option. Returns 0, or 2 after one line. */
static int set_settings(struct run_state *st)
{
    char msg[512];
    if (settings_check(msg, sizeof msg) != 0) {
        fprintf(stderr, "tally run: %s\n", msg);
        return 2;
    }
    /* what tally run makes after the program: --write, else TALLY_WRITE (checked above) */
    const char *w = getenv("TALLY_WRITE");
    if (!st->write && (!w || tally__parse_write(w, &st->write) != 0))
        st->write = TALLY_WRITE_TALLY | TALLY_WRITE_JSON_GZ | TALLY_WRITE_SUMMARY;
    for (size_t i = 0; i < sizeof option_settings / sizeof option_settings[0]; i++) {
        const char *value = *(const char *const *)((const char *)st + option_settings[i].off);
        if (!value)
            continue;
        setenv(option_settings[i].variable, value, 1);
        if (settings_check(msg, sizeof msg) == 0)
            continue;
        /* the library names the variable ("TALLY_SCHEDULE=\"x\": expected ..."): say the
         * option instead */
        char said[256];
        snprintf(said, sizeof said, "%s=\"%s\": ", option_settings[i].variable, value);
        const char *why = !strncmp(msg, said, strlen(said)) ? msg + strlen(said) : msg;
        fprintf(stderr, "tally run: %s '%s': %s\n", option_settings[i].option, value, why);
        return 2;
    }
    if (st->quiet)
        setenv("TALLY_QUIET", "1", 1);
    /* the program writes the .tally file only; JSON and the report are made here after */
    setenv("TALLY_WRITE", "tally", 1);
    setenv("TALLY_RANK_DIRS", "1", 1);
    return 0;
}

/* ---- statically linked programs ------------------------------------------------------------ */

static int executable_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, X_OK) == 0;
}

/* The file execvp would run for name: name itself when it has a '/', else the first executable
 * of that name in a PATH folder. 0, or -1 when there is none. */
static int resolve_program(const char *name, char *out, size_t cap)
{
    if (strchr(name, '/'))
        return snprintf(out, cap, "%s", name) < (int)cap && executable_file(out) ? 0 : -1;
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin"; /* glibc's execvp default */
    for (const char *p = path;;) {
        size_t n = strcspn(p, ":");
        int len = n ? (int)n : 1;
        if (snprintf(out, cap, "%.*s/%s", len, n ? p : ".", name) < (int)cap &&
            executable_file(out))
            return 0;
        if (!p[n])
            return -1;
        p += n + 1;
    }
}

/* Does the ELF file have a program interpreter (the dynamic loader)? 1 yes, 0 no, -1 when it is
 * not an ELF file we can read. */
static int elf_has_interp(int fd, const unsigned char *head, size_t n)
{
    if (n < sizeof(Elf32_Ehdr) || memcmp(head, ELFMAG, SELFMAG) != 0)
        return -1;
    int is64 = head[EI_CLASS] == ELFCLASS64;
    if (is64 && n < sizeof(Elf64_Ehdr))
        return -1;
    Elf64_Ehdr eh64;
    Elf32_Ehdr eh32;
    memcpy(is64 ? (void *)&eh64 : (void *)&eh32, head, is64 ? sizeof eh64 : sizeof eh32);
    uint64_t off = is64 ? eh64.e_phoff : eh32.e_phoff;
    unsigned num = is64 ? eh64.e_phnum : eh32.e_phnum;
    unsigned size = is64 ? eh64.e_phentsize : eh32.e_phentsize;
    if (size < (is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
        return -1;
    for (unsigned i = 0; i < num; i++) {
        Elf64_Phdr ph64;
        Elf32_Phdr ph32;
        void *ph = is64 ? (void *)&ph64 : (void *)&ph32;
        size_t want = is64 ? sizeof ph64 : sizeof ph32;
        if (pread(fd, ph, want, (off_t)(off + (uint64_t)i * size)) != (ssize_t)want)
            return -1;
        if ((is64 ? ph64.p_type : ph32.p_type) == PT_INTERP)
            return 1;
    }
    return 0;
}

/* 1 when the program at path is statically linked (an ELF file without a program interpreter);
 * a "#!" script is judged by its interpreter ("#!/usr/bin/env NAME" by NAME on PATH). 0 when it
 * is dynamically linked or cannot be told. */
static int statically_linked(const char *path, int depth)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    unsigned char head[512];
    ssize_t n = pread(fd, head, sizeof head - 1, 0);
    int interp = n > 0 ? elf_has_interp(fd, head, (size_t)n) : -1;
    close(fd);
    if (interp >= 0)
        return !interp;
    if (n < 3 || head[0] != '#' || head[1] != '!' || depth >= 4)
        return 0;
    head[n] = 0;
    char *line = (char *)head + 2, *save = NULL;
    line[strcspn(line, "\n")] = 0;
    const char *word = strtok_r(line, " \t", &save);
    if (word && !strcmp(strrchr(word, '/') ? strrchr(word, '/') + 1 : word, "env"))
        while ((word = strtok_r(NULL, " \t", &save)) && word[0] == '-')
            ; /* env's options: the program is the first other word */
    char next[PATH_MAX];
    return word && resolve_program(word, next, sizeof next) == 0 &&
           statically_linked(next, depth + 1);
}

/* ---- after the program ------------------------------------------------------------------- */

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
    int want_summary = (st->write & TALLY_WRITE_SUMMARY) && !st->quiet;
    int want_json = st->write & (TALLY_WRITE_JSON | TALLY_WRITE_JSON_GZ);
    if (!st->quiet)
        fprintf(stderr, "tally run: wrote %s\n", path);
    if (!want_summary && !want_json)
        return 0;
    tl_trace t;
    tl_trace_init(&t);
    int rc = cli_load(command.verb, &t, path, 1);
    size_t n = strlen(path) - strlen(".tally");
    const char *exts[2] = {(st->write & TALLY_WRITE_JSON) ? ".pt.trace.json" : NULL,
                           (st->write & TALLY_WRITE_JSON_GZ) ? ".pt.trace.json.gz" : NULL};
    for (int i = 0; i < 2 && rc == 0; i++) {
        if (!exts[i])
            continue;
        char to[PATH_MAX + 32];
        snprintf(to, sizeof to, "%.*s%s", (int)n, path, exts[i]);
        if (cli_write_chrome(command.verb, &t, to) != 0)
            rc = 1;
        else if (!st->quiet)
            fprintf(stderr, "tally run: wrote %s\n", to);
    }
    if (want_summary && t.nev) {
        fprintf(stderr, "\n%s\n", path);
        tl_summary_print(stderr, &t);
    }
    tl_trace_free(&t);
    return rc;
}

static int same_time(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* Whether sb is a file of st->before, unchanged since. */
static int there_before(const struct run_state *st, const struct stat *sb)
{
    for (size_t i = 0; i < st->nbefore; i++) {
        const struct tally_before *b = &st->before[i];
        if (b->dev == sb->st_dev && b->ino == sb->st_ino && b->size == sb->st_size &&
            same_time(b->mtim, sb->st_mtim) && same_time(b->ctim, sb->st_ctim))
            return 1;
    }
    return 0;
}

/* The .tally files under dir (and its rank* folders): with st->snapshot, noted in st->before;
 * else each one the program wrote (new, or changed since the snapshot) finished: how many. */
static int collect_outputs(struct run_state *st, const char *dir, int depth, int *failed)
{
    /* in the names' order (w0, w1, ..., w10), not the folder's: windows listed as recorded */
    struct dirent **list = NULL;
    int nlist = scandir(dir, &list, NULL, versionsort);
    if (nlist < 0)
        return 0;
    int found = 0;
    for (int li = 0; li < nlist; li++) {
        const struct dirent *de = list[li];
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
        if (!ends_with(de->d_name, ".tally"))
            continue;
        if (st->snapshot) {
            struct tally_before *nb = realloc(st->before, (st->nbefore + 1) * sizeof *nb);
            if (nb) {
                st->before = nb;
                st->before[st->nbefore++] =
                    (struct tally_before){sb.st_dev, sb.st_ino, sb.st_size, sb.st_mtim, sb.st_ctim};
            }
            continue;
        }
        if (there_before(st, &sb))
            continue;
        found++;
        if (finish_trace(st, path) != 0)
            *failed = 1;
    }
    for (int li = 0; li < nlist; li++)
        free(list[li]);
    free(list);
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

/* ---- the run -------------------------------------------------------------------------------- */

/* Start the program and wait for it: 0 with its wait status in *wstatus, or the exit status of
 * tally run when it could not be started (127; 2 on a system error), after one line. */
static int spawn_and_wait(struct run_state *st, const char *lib, int *wstatus)
{
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
        if (!st->no_nvtx && !st->is_static)
            setenv("NVTX_INJECTION64_PATH", lib, 1);
        if (!st->no_gpu && !st->is_static)
            setenv("CUDA_INJECTION64_PATH", lib, 1);
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

    while (waitpid(pid, wstatus, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "tally run: waitpid: %s\n", strerror(errno));
            return 2;
        }
    }
    g_child = 0;
    return 0;
}

static int run(struct run_state *st)
{
    const char *lib = cli_libtally_path();
    if (!lib) {
        fprintf(stderr,
                "tally run: libtally.so not found next to %s or in the library folder of its "
                "installation\n",
                cli_argv0);
        return 2;
    }
    char libabs[PATH_MAX];
    if (!realpath(lib, libabs)) {
        fprintf(stderr, "tally run: %s: %s\n", lib, strerror(errno));
        return 2;
    }
    int bad = set_settings(st);
    if (bad)
        return bad;
    char prog[PATH_MAX];
    st->is_static =
        resolve_program(st->argv[0], prog, sizeof prog) == 0 && statically_linked(prog, 0);
    if (st->is_static)
        fprintf(stderr,
                "tally run: %s is statically linked: tally cannot be injected into it; running "
                "it unprofiled (link it with -ltally to record it)\n",
                st->argv[0]);
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
    setenv("TALLY_OUTPUT_DIR", outabs, 1);
    if (!st->no_gpu && !st->is_static && !driver_present())
        fprintf(stderr, "tally run: no CUDA driver (libcuda.so.1) on this machine; recording "
                        "NVTX and host activity only\n");

    int failed = 0;
    st->snapshot = 1;
    collect_outputs(st, outabs, 0, &failed);
    st->snapshot = 0;
    int status = 0;
    int rc = spawn_and_wait(st, libabs, &status);
    if (rc != 0) {
        free(st->before);
        return rc;
    }
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
    int n = collect_outputs(st, outabs, 0, &failed);
    free(st->before);
    st->before = NULL;
    st->nbefore = 0;
    if (failed && rc == 0)
        rc = 1;
    if (n == 0 && !st->quiet && !st->is_static)
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
    int rc = cli_parse(&command, argc, argv, &st);
    if (rc != CLI_CONTINUE)
        return rc;
    return run(&st);
}
