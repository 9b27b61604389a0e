/*
 * main.c — the tally command: one table of verbs, dispatched by name (perf's commands[]).
 * `tally VERB --help` prints the verb's help; an unknown verb gets the nearest one suggested;
 * at exit, stdout must have been written and closed without error (a full disk or a closed pipe
 * is a failure, not silence).
 */
#include "cli/commands.h"
#include "cli/runner.h"
#include "record/env_check.h"
#include "trace/model.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally.h>

const char *cli_argv0 = "tally";

static const struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"report", cmd_report, "print the summary views of a trace (.tally, PyTorch, Paddle JSON)"},
    {"ops", cmd_ops, "the operator table of a trace, as torch's key_averages().table()"},
    {"gaps", cmd_gaps, "GPU idle time, its causes, and kernel launch statistics"},
    {"memory", cmd_memory, "memory per device: peak, timeline, what the peak holds, leaks"},
    {"diff", cmd_diff, "compare two traces: step time and per-row deltas"},
    {"export", cmd_export, "write a trace as Chrome trace JSON (.json or .json.gz)"},
    {"run", cmd_run, "profile an unmodified program (NVTX, CUDA) and report"},
    {"demo", cmd_demo, "profile the built-in Llama-style workload and report"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: tally [--version] [--help] <verb> [options] [args]\n\nverbs:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'tally <verb> --help' describes a verb.\n");
}

static int close_stdout(int status)
{
#ifdef TALLY_CLI_IN_MODULE /* python3 -m tally: the interpreter owns standard output, not us */
    if (fflush(stdout) != 0 || ferror(stdout)) {
#else
    if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
#endif
        if (errno == EPIPE)
            return status;
        fprintf(stderr, "tally: error writing output: %s\n", strerror(errno));
        return status ? status : 1;
    }
    return status;
}

int main(int argc, char **argv)
{
    cli_argv0 = argv[0];
#ifndef TALLY_CLI_IN_MODULE /* in the Python module the process is the interpreter's */
    tl_malloc_for_one_trace();
    cli_catch_cut_files();
#endif
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *verb = argv[1];
    if (!strcmp(verb, "--help") || !strcmp(verb, "-h") || !strcmp(verb, "help")) {
        if (argc > 2 && strcmp(verb, "help") == 0) {
            char *args[] = {argv[2], "--help", NULL};
            for (size_t i = 0; i < NCOMMANDS; i++)
                if (!strcmp(commands[i].name, argv[2]))
                    return close_stdout(commands[i].fn(2, args));
        }
        usage(stdout);
        return close_stdout(0);
    }
    if (!strcmp(verb, "--version") || !strcmp(verb, "-V") || !strcmp(verb, "version")) {
        printf("tally %s\n", tally_version_string());
        return close_stdout(0);
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(commands[i].name, verb))
            return close_stdout(commands[i].fn(argc - 1, argv + 1));

    const char *best = tally__nearest_name(verb, &commands[0].name, NCOMMANDS, sizeof commands[0]);
    if (best)
        fprintf(stderr, "tally: unknown verb '%s'; did you mean '%s'?\n", verb, best);
    else
        fprintf(stderr, "tally: unknown verb '%s'; 'tally --help' lists the verbs\n", verb);
    return 2;
}

/* The libtally.so that `tally run` injects: beside this binary (a build tree), then where the
 * install puts it relative to the binary (TALLY_BIN_TO_LIB, from the install bindir to the install
 * libdir, e.g. "../lib" or "../lib/x86_64-linux-gnu"; set by CMake), then the build folder this
 * binary was compiled in (TALLY_LIBDIR). */
const char *cli_libtally_path(void)
{
#ifndef TALLY_BIN_TO_LIB
#define TALLY_BIN_TO_LIB "../lib"
#endif
    static char path[PATH_MAX + 64];
#ifdef TALLY_CLI_IN_MODULE
    /* python3 -m tally: this code lives in the Python module tally._tally, which holds the
     * recorder and the injection entry points too: inject the module itself. */
    Dl_info info;
    if (dladdr((void *)cli_libtally_path, &info) && info.dli_fname &&
        realpath(info.dli_fname, path))
        return path;
    return NULL;
#endif
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            const char *cands[] = {"%s/libtally.so", "%s/" TALLY_BIN_TO_LIB "/libtally.so"};
            for (int i = 0; i < 2; i++) {
                snprintf(path, sizeof path, cands[i], self);
                if (access(path, R_OK) == 0)
                    return path;
            }
        }
    }
#ifdef TALLY_LIBDIR
    snprintf(path, sizeof path, "%s/libtally.so", TALLY_LIBDIR);
    if (access(path, R_OK) == 0)
        return path;
#endif
    return NULL;
}
