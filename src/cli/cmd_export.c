/*
 * cmd_export.c — `tally export FILE -o OUT.json[.gz]`: read a trace of any supported format and
 * write it as Chrome trace JSON with PyTorch's conventions (gzip when OUT ends in ".gz"), for
 * Perfetto, chrome://tracing and the tools that read PyTorch traces.
 *
 * With --background it returns at once and converts in a detached process: that is how a
 * profiled program that asked for JSON gets it (the library's default trace-ready handler
 * starts `tally export --background`), without a trace model inside the program.
 *
 * Exit status: 0; 1 when the input cannot be read or the output cannot be written; 2 on a
 * usage error.
 */
#include "cli/commands.h"
#include "cli/runner.h"
#include "trace/tally_export.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The state of one invocation. */
struct export_args {
    const char *in;
    const char *out;
    int background;
};
#define CLI_STATE struct export_args

static const cli_option options[] = {
    CLI_OPTION("output", 'o', CLI_STRING, out, "OUT",
               "the file to write (required); gzip-compressed when it ends in .gz;\n"
               "'-' writes uncompressed JSON to standard output"),
    CLI_OPTION("background", 0, CLI_FLAG, background, NULL,
               "return at once and convert in a detached process (what a profiled\n"
               "program asking for JSON starts)"),
};

static const cli_command command = {
    .verb = "export",
    .operands = "FILE",
    .what = "an input file",
    .operands_off = offsetof(CLI_STATE, in),
    .about = "Write a trace (.tally, PyTorch or Paddle JSON, Chrome trace, .json.gz) as Chrome\n"
             "trace JSON following PyTorch's conventions.",
    CLI_TABLE,
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cmd_export(int argc, char **argv)
{
    struct export_args a = {0};
    int rc = cli_parse(&command, argc, argv, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    if (!a.out) {
        fprintf(stderr, "tally export: -o OUT is required (the file to write, or '-')\n");
        return 2;
    }
    if (a.background && strcmp(a.out, "-") != 0) {
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
    int status;
    size_t nev = 0;
    if (tl_is_tally_file(a.in)) { /* streamed in bounded memory, no trace model */
        tl_error err = {{0}};
        status = tl_tally_export(a.in, a.out, &nev, &err) != 0 ? cli_fail(command.verb, &err) : 0;
    } else {
        status = cli_load(command.verb, &t, a.in, 1);
        if (status == 0)
            status = cli_write_chrome(command.verb, &t, a.out);
        nev = t.nev;
    }
    double dt = now_s() - t0;
    if (status == 0 && strcmp(a.out, "-") != 0 && dt > 1.0)
        fprintf(stderr, "tally export: %zu events written to %s in %.1f s\n", nev, a.out, dt);
    tl_trace_free(&t);
    return status;
}
