/*
 * cmd_export.c — `tally export FILE [-o OUT]`: read a trace of any supported format and write it
 * as Chrome trace JSON with PyTorch's conventions (gzip when OUT ends in ".gz"), for Perfetto,
 * chrome://tracing and the tools that read PyTorch traces. Without -o, OUT is FILE's name as
 * PyTorch names its traces, FILE.pt.trace.json.gz, the only names TensorBoard's plugin lists.
 *
 * Nothing read is lost: a JSON trace is loaded with keep_raw, so every element of traceEvents
 * and every top-level member is written as it was read (model.h); a .tally file is streamed
 * (tally_export.c).
 *
 * With --format sqlite, or an OUT ending in .sqlite or .db, it writes a SQLite database to query
 * instead (report/sqlite_export.c, docs/sqlite.md), from the loaded model of any input.
 *
 * With --background it returns at once and converts in a detached process: that is how a
 * profiled program that asked for JSON gets it (the library's default trace-ready handler
 * starts `tally export --background`), without a trace model inside the program.
 *
 * Exit status: 0; 1 when the input cannot be read or the output cannot be written; 2 on a
 * usage error.
 */
#include "analysis/job.h"
#include "trace/now.h"
#include "cli/commands.h"
#include "cli/runner.h"
#include "report/sqlite_export.h"
#include "trace/tally_export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The state of one invocation. */
struct export_args {
    const char *in[CLI_JOB_MAX_ARGS + 1]; /* the input; a job's inputs (NULL after the last) */
    const char *out;
    int background;
    int format; /* EXPORT_*; -1: chosen by OUT's ending */
};
enum { EXPORT_CHROME, EXPORT_SQLITE };
static const char *const export_formats[] = {"chrome", "sqlite", NULL};
#define CLI_STATE struct export_args

static const cli_option options[] = {
    CLI_OPTION("output", 'o', CLI_STRING, out, "OUT",
               "the file to write; gzip-compressed when it ends in .gz; '-' writes\n"
               "uncompressed JSON to standard output (default: FILE.pt.trace.json.gz\n"
               "beside FILE, its .tally/.json/.gz/.trace/.pt endings replaced)"),
    CLI_WORDS("format", format, "F", export_formats,
              "chrome (Chrome trace JSON) or sqlite (a SQLite database to query,\n"
              "docs/sqlite.md); default: sqlite when OUT ends in .sqlite or .db"),
    CLI_OPTION("background", 0, CLI_FLAG, background, NULL,
               "return at once and convert in a detached process (what a profiled\n"
               "program asking for JSON starts)"),
};

static const cli_command command = {
    .verb = "export",
    .operands = "FILE [FILE...]",
    .what = "an input file",
    .operands_off = offsetof(CLI_STATE, in),
    .operands_max = CLI_JOB_MAX_ARGS,
    .about = "Write a trace (.tally, PyTorch or Paddle JSON, Chrome trace, .json.gz) as Chrome\n"
             "trace JSON following PyTorch's conventions, or as a SQLite database to query\n"
             "(tally export FILE -o OUT.sqlite: ranges, kernels, copies, memory, steps and the\n"
             "views kernel_summary, ops_summary, step_times). A folder of ranks, or several\n"
             "files, go into one database with a rank column: tally export DIR -o job.sqlite.",
    CLI_TABLE,
};

/* The default OUT for in: its name without the endings of a trace, plus ".pt.trace.json.gz"
 * (PyTorch's and TensorBoard's convention), or ".export.pt.trace.json.gz" when that would be in
 * itself; ".sqlite" for a database. Returns 0, or -1 when the name does not fit. */
static int default_output(const char *in, int format, char *out, size_t cap)
{
    static const char *const endings[] = {".gz", ".json", ".tally", ".trace", ".pt"};
    size_t n = strlen(in);
    for (size_t i = 0; i < sizeof endings / sizeof endings[0]; i++) {
        size_t k = strlen(endings[i]);
        const char *slash = strrchr(in, '/');
        size_t name_at = slash ? (size_t)(slash - in) + 1 : 0;
        if (n > name_at + k && memcmp(in + n - k, endings[i], k) == 0)
            n -= k;
    }
    if (format == EXPORT_SQLITE) {
        int w = snprintf(out, cap, "%.*s.sqlite", (int)n, in);
        return w >= 0 && (size_t)w < cap && strcmp(out, in) != 0 ? 0 : -1;
    }
    int w = snprintf(out, cap, "%.*s.pt.trace.json.gz", (int)n, in);
    if (w >= 0 && (size_t)w < cap && strcmp(out, in) == 0)
        w = snprintf(out, cap, "%.*s.export.pt.trace.json.gz", (int)n, in);
    return w >= 0 && (size_t)w < cap ? 0 : -1;
}

/* True when name ends in suffix. */
static int ends_with(const char *name, const char *suffix)
{
    size_t n = strlen(name), k = strlen(suffix);
    return n >= k && !strcmp(name + n - k, suffix);
}

/* Load in and write it to out as a SQLite database under its own rank. */
static int export_sqlite(const char *in, const char *out, size_t *nev)
{
    if (!strcmp(out, "-")) {
        fprintf(stderr, "tally export: a SQLite database cannot go to standard output; give -o "
                        "OUT.sqlite\n");
        return 2;
    }
    tl_error err = {{0}};
    tl_trace t;
    tl_trace_init(&t);
    t.keep_raw = 1; /* each event's original args object goes into its args column */
    int status = cli_load(command.verb, &t, in, 1);
    if (status == 0) {
        tl_sqlite *db = tl_sqlite_open(out, &err);
        tl_sqlite_progress(db, 1);
        /* a failed add is reported again by close, which then deletes the file */
        if (db)
            tl_sqlite_add_trace(db, &t, tl_sqlite_trace_rank(&t), &err);
        if (!db || tl_sqlite_close(db, &err) != 0)
            status = cli_fail(command.verb, &err);
    }
    *nev = t.nev;
    tl_trace_free(&t);
    return status;
}

/* A job (a folder of ranks, or several traces) into one database, each trace under its rank as
 * `tally report DIR` numbers them (analysis/job.h): the ranks a trace or its path names first,
 * then the others in file order. The traces are read one after another. */
static int export_job(const char *const *args, const char *out)
{
    const char *verb = command.verb;
    tl_error err = {{0}};
    int nargs = 0;
    while (args[nargs])
        nargs++;
    char **files = NULL;
    size_t n = 0;
    if (tl_job_paths(args, nargs, &files, &n, &err) != 0)
        return cli_fail(verb, &err);
    int64_t *ranks = calloc(n, sizeof *ranks);
    tl_sqlite *db = ranks ? tl_sqlite_open(out, &err) : NULL;
    int status = 0;
    if (!ranks)
        tl_error_setc(&err, TL_ERR_NOMEM, "out of memory");
    char *later = calloc(n ? n : 1, 1); /* rank unknown: added in pass 1 */
    if (!later && status == 0) {
        tl_error_setc(&err, TL_ERR_NOMEM, "out of memory");
        status = -1;
    }
    /* pass 0: the traces whose rank is known; pass 1: the rest, numbered after them */
    for (int pass = 0; db && later && status == 0 && pass < 2; pass++) {
        if (pass == 1)
            tl_job_number_ranks(ranks, n);
        for (size_t i = 0; i < n && status == 0; i++) {
            if (pass == 1 && !later[i])
                continue;
            if (pass == 0 && tl_job_is_summary(files[i])) {
                tl_error_setc(&err, TL_ERR_USAGE,
                              "%s is a job report (ranks' summaries), not a trace: export the "
                              "traces",
                              files[i]);
                status = -1;
                break;
            }
            tl_trace t;
            tl_trace_init(&t);
            t.keep_raw = 1;
            if ((status = cli_load(verb, &t, files[i], 1)) != 0) {
                tl_trace_free(&t);
                break;
            }
            const char *from;
            if (pass == 0 && (ranks[i] = tl_job_trace_rank(&t, files[i], &from)) < 0)
                later[i] = 1;
            int64_t r = ranks[i];
            if (r >= 0) {
                for (size_t k = 0; k < n && status == 0; k++)
                    if (k != i && ranks[k] == r && (k < i || pass == 1)) {
                        tl_error_setc(&err, TL_ERR_INPUT, "two traces of rank %lld: %s and %s",
                                      (long long)r, files[k], files[i]);
                        status = -1;
                    }
                if (status == 0 && tl_sqlite_add_trace(db, &t, r, &err) != 0)
                    status = -1;
            }
            tl_trace_free(&t);
        }
    }
    free(later);
    if (status > 0) { /* cli_load printed its error */
        tl_sqlite_close(db, &err);
    } else if (!db || tl_sqlite_close(db, &err) != 0 || status != 0) {
        status = cli_fail(verb, &err);
    } else {
        fprintf(stderr, "tally export: %zu ranks written to %s\n", n, out);
    }
    free(ranks);
    tl_job_paths_free(files, n);
    return status;
}

int cmd_export(int argc, char **argv)
{
    struct export_args a = {.format = -1};
    int rc = cli_parse(&command, argc, argv, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    if (a.format < 0)
        a.format = a.out && (ends_with(a.out, ".sqlite") || ends_with(a.out, ".db"))
                       ? EXPORT_SQLITE
                       : EXPORT_CHROME;
    struct stat st;
    if (a.in[1] || (stat(a.in[0], &st) == 0 && S_ISDIR(st.st_mode))) {
        if (!a.out || a.format != EXPORT_SQLITE) {
            fprintf(stderr, "tally export: a folder of ranks or several traces go into one SQLite "
                            "database: give -o JOB.sqlite\n");
            return 2;
        }
        return export_job(a.in, a.out);
    }
    char out[4096];
    if (!a.out) {
        if (!strcmp(a.in[0], "-")) {
            fprintf(stderr, "tally export: -o OUT is required when reading standard input\n");
            return 2;
        }
        if (default_output(a.in[0], a.format, out, sizeof out) != 0) {
            fprintf(stderr, "tally export: %s: the name is too long; give -o OUT\n", a.in[0]);
            return 2;
        }
        a.out = out;
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
    double t0 = tl_now_s();
    tl_trace t;
    tl_trace_init(&t);
    t.keep_raw = 1; /* a JSON input is written as it was read: every event, field and member */
    int status;
    size_t nev = 0;
    if (a.format == EXPORT_SQLITE) {
        status = export_sqlite(a.in[0], a.out, &nev);
    } else if (tl_is_tally_file(a.in[0])) { /* streamed in bounded memory, no trace model */
        tl_error err = {{0}};
        status =
            tl_tally_export(a.in[0], a.out, &nev, &err) != 0 ? cli_fail(command.verb, &err) : 0;
    } else {
        status = cli_load(command.verb, &t, a.in[0], 1);
        if (status == 0)
            status = cli_write_chrome(command.verb, &t, a.out);
        nev = t.nev;
    }
    double dt = tl_now_s() - t0;
    if (status == 0 && strcmp(a.out, "-") != 0 && dt > 1.0)
        fprintf(stderr, "tally export: %zu events written to %s in %.1f s\n", nev, a.out, dt);
    tl_trace_free(&t);
    return status;
}
