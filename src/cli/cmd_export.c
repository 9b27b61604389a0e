/*
 * cmd_export.c — `tally export FILE -o OUT.json[.gz]`: read a trace of any supported format and
 * write it as Chrome trace JSON with PyTorch's conventions (gzip when OUT ends in ".gz"), for
 * Perfetto, chrome://tracing and the tools that read PyTorch traces.
 *
 * Exit status: 0; 1 when the input cannot be read or the output cannot be written; 2 on a
 * usage error.
 */
#include "cli/commands.h"
#include "trace/model.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] = "usage: tally export FILE -o OUT.json[.gz] [--background]\n";

static void help(FILE *f)
{
    fputs(usage, f);
    fputs("\nWrite a trace (.tally, PyTorch or Paddle JSON, Chrome trace, .json.gz) as Chrome\n"
          "trace JSON following PyTorch's conventions.\n\noptions:\n"
          "  -o, --output OUT   the file to write; gzip-compressed when it ends in .gz;\n"
          "                     '-' writes uncompressed JSON to standard output\n"
          "  --background       return at once and convert in a detached process (what a\n"
          "                     profiled program asking for JSON starts)\n"
          "  -h, --help         this help\n",
          f);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cmd_export(int argc, char **argv)
{
    const char *in = NULL, *out = NULL;
    int background = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help(stdout);
            return 0;
        }
        if (!strcmp(a, "--background")) {
            background = 1;
            continue;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "tally export: %s needs a file name\n", a);
                return 2;
            }
            out = argv[++i];
        } else if (!strncmp(a, "--output=", 9)) {
            out = a + 9;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "tally export: unknown option '%s'; 'tally export --help' lists them\n",
                    a);
            return 2;
        } else if (in) {
            fprintf(stderr, "tally export: one input file expected, got '%s' and '%s'\n", in, a);
            return 2;
        } else {
            in = a;
        }
    }
    if (!in || !out || !*out) {
        fprintf(stderr, "tally export: %s%s", !in ? "an input file is expected\n" : "",
                !out || !*out ? "-o OUT is required\n" : "");
        fputs(usage, stderr);
        return 2;
    }

    if (background && strcmp(out, "-") != 0) {
        /* the caller (a profiled program) waits for this process only: the work goes on in a
         * grandchild that init adopts, so the caller is never held up and leaves no zombie */
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "tally export: fork: %s\n", strerror(errno));
            return 1;
        }
        if (pid > 0)
            return 0;
        setsid();
    }
    double t0 = now_s();
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    int status = 0;
    if (tl_load(&t, in, 1, &err) != 0) {
        fprintf(stderr, "tally export: %s\n", err.msg);
        status = 1;
        goto done;
    }
    if (!t.finished && tl_trace_finish(&t) != 0) {
        fprintf(stderr, "tally export: %s: out of memory\n", in);
        status = 1;
        goto done;
    }
    int rc;
    char tmp[4096];
    if (!strcmp(out, "-")) {
        rc = tl_write_chrome_file(&t, stdout, &err);
    } else if (snprintf(tmp, sizeof tmp, "%s.tmp%d%s", out, (int)getpid(),
                        strlen(out) > 3 && !strcmp(out + strlen(out) - 3, ".gz") ? ".gz" : "") >=
               (int)sizeof tmp) {
        tl_error_set(&err, "%s: path too long", out);
        rc = -1;
    } else {
        /* written under a temporary name and renamed: a reader never sees half a file */
        rc = tl_write_chrome(&t, tmp, &err);
        if (rc == 0 && rename(tmp, out) != 0) {
            tl_error_set(&err, "%s: %s", out, strerror(errno));
            rc = -1;
        }
        if (rc != 0)
            unlink(tmp);
    }
    if (rc != 0) {
        fprintf(stderr, "tally export: %s\n", err.msg[0] ? err.msg : out);
        status = 1;
        goto done;
    }
    double dt = now_s() - t0;
    if (strcmp(out, "-") != 0 && dt > 1.0)
        fprintf(stderr, "tally export: %zu events written to %s in %.1f s\n", t.nev, out, dt);
done:
    tl_trace_free(&t);
    return status;
}
