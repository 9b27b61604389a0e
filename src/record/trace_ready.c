/*
 * trace_ready.c — the default trace-ready handler: what the profiled program does with a
 * finished window when it names no handler of its own.
 *
 * It runs inside the host, so it is cheap and never builds a trace model: it prints the window's
 * summary from the counters the recorder kept while recording (steps, batch and reader cost,
 * throughput, what was lost) and the one command that gives the full report. When the program
 * asked for Chrome JSON (TALLY_WRITE=json or json.gz), the conversion runs in a separate `tally
 * export` process started here and left to finish on its own: the host neither waits for it nor
 * holds the trace in memory. Output goes to stderr only, errno is kept, nothing is fatal.
 */
#include "record/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* "1.2 MB" */
static void fmt_bytes(char *out, size_t cap, double b)
{
    const char *u[] = {"B", "kB", "MB", "GB", "TB"};
    int i = 0;
    while (b >= 1000.0 && i < 4) {
        b /= 1000.0;
        i++;
    }
    snprintf(out, cap, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

static int executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int tally__find_cli(char *out, size_t cap)
{
    const char *env = getenv("TALLY_BIN");
    if (env && *env) {
        if (!executable(env))
            return -1;
        snprintf(out, cap, "%s", env);
        return 0;
    }
    /* beside the library (a build tree), or in ../bin (an installed prefix) */
    char dir[PATH_MAX];
    if (tally__self_path(dir, sizeof dir) == 0) {
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = 0;
#ifndef TALLY_LIB_TO_BIN
#define TALLY_LIB_TO_BIN "../bin" /* set by CMake from the install directories */
#endif
            const char *cand[] = {"%s/tally", "%s/" TALLY_LIB_TO_BIN "/tally"};
            for (int i = 0; i < 2; i++) {
                if (snprintf(out, cap, cand[i], dir) < (int)cap && executable(out))
                    return 0;
            }
        }
    }
    /* on PATH */
    const char *path = getenv("PATH");
    if (!path)
        return -1;
    for (const char *p = path; *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n && snprintf(out, cap, "%.*s/tally", (int)n, p) < (int)cap && executable(out))
            return 0;
        p += n + (e != NULL);
    }
    return -1;
}

/* The Python package's interpreter and folder (tally__set_cli_python), "" when not set. Set at
 * import, read when a window is written. */
static char py_exe[PATH_MAX], py_pkg[PATH_MAX];

void tally__set_cli_python(const char *python, const char *package_parent)
{
    int ok = python && package_parent && *python && strlen(python) < sizeof py_exe &&
             strlen(package_parent) < sizeof py_pkg;
    snprintf(py_exe, sizeof py_exe, "%s", ok ? python : "");
    snprintf(py_pkg, sizeof py_pkg, "%s", ok ? package_parent : "");
}

/* python3 -c PY_MAIN PACKAGE_PARENT ARGS...: the package's own command line (__main__.py), found
 * where the package is whatever the child's sys.path */
#define PY_MAIN                                                                                    \
    "import sys, runpy; sys.path.insert(0, sys.argv.pop(1)); "                                     \
    "runpy.run_module('tally', run_name='__main__')"

/* Start `tally export --background PATH -o OUT`: the export forks away at once, so the child we
 * wait for here exits within milliseconds and no zombie is left behind. The command is
 * $TALLY_BIN, else, inside the Python package, the package's own (python3 -m tally), else the
 * tally binary beside this library, in ../bin or on PATH. */
static int spawn_export(const char *tally_path, const char *out)
{
    char cli[PATH_MAX];
    const char *tb = getenv("TALLY_BIN");
    int python = !(tb && *tb) && py_exe[0];
    if (!python && tally__find_cli(cli, sizeof cli) != 0) {
        fprintf(stderr,
                "tally: the tally command was not found (set TALLY_BIN), so %s was not written; "
                "run: tally export %s -o %s\n",
                out, tally_path, out);
        return TALLY_ENOTSUP;
    }
    if (python)
        snprintf(cli, sizeof cli, "%s", py_exe);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    /* never the program's stdin or stdout */
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    char *bin_argv[] = {cli, "export", "--background", (char *)tally_path, "-o", (char *)out, NULL};
    char *py_argv[] = {
        cli,  "-c",        PY_MAIN, py_pkg, "export", "--background", (char *)tally_path,
        "-o", (char *)out, NULL};
    char **argv = python ? py_argv : bin_argv;
    pid_t pid;
    int rc = posix_spawn(&pid, cli, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        fprintf(stderr, "tally: cannot start %s: %s; run: tally export %s -o %s\n", cli,
                strerror(rc), tally_path, out);
        return TALLY_EIO;
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return 0;
}

TALLY_API int tally_default_trace_ready(const tally_window *w, void *user)
{
    (void)user;
    if (!w || !w->path)
        return TALLY_EINVAL;
    int saved = errno;
    int rc = 0;
    const char *base = w->base_path ? w->base_path : w->path;
    char json[PATH_MAX + 16];
    const char *exts[2] = {NULL, NULL};
    /* PyTorch's ending: TensorBoard's profiler plugin lists only *.pt.trace.json[.gz] */
    if (w->write & TALLY_WRITE_JSON)
        exts[0] = ".pt.trace.json";
    if (w->write & TALLY_WRITE_JSON_GZ)
        exts[1] = ".pt.trace.json.gz";
    for (int i = 0; i < 2; i++) {
        if (!exts[i])
            continue;
        snprintf(json, sizeof json, "%s%s", base, exts[i]);
        int r = spawn_export(w->path, json);
        if (r != 0 && rc == 0)
            rc = r;
    }
    if (w->write & TALLY_WRITE_SUMMARY)
        tally__print_window_summary(stderr, w);
    if (w->write & TALLY_WRITE_SUMMARY) {
        struct stat st;
        char size[32] = "";
        if (stat(w->path, &st) == 0)
            fmt_bytes(size, sizeof size, (double)st.st_size);
        fprintf(stderr, "tally: trace %s (%s)", w->path, size);
        if (exts[0] || exts[1])
            fprintf(stderr, "; Chrome JSON %s%s being written beside it", base,
                    exts[1] ? exts[1] : exts[0]);
        fprintf(stderr, "\ntally: full report: tally report %s\n", w->path);
    }
    errno = saved;
    return rc;
}
