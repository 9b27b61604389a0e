/*
 * runner.h — what the verbs that read traces share, so that each cmd_<verb>.c keeps only what
 * differs (its options, its views, its help).
 *
 * cli_main is the one parse -> load -> views -> render path of `tally report`, `ops`, `gaps` and
 * `diff`: parse the command line (options.h), check it, load each trace (with progress) and
 * finish it, compute the verb's tables, open -o OUT or stdout, write the traces' loss warnings
 * and the tables with tl_out, close and check for write errors, free. Errors carry their kind
 * (tl_error.code) up to here, where cli_status turns it into the exit status once: a usage
 * error is 2, anything else 1.
 */
#ifndef TALLY_CLI_RUNNER_H
#define TALLY_CLI_RUNNER_H

#include "cli/options.h"
#include "report/table.h"
#include "trace/model.h"

#include <stddef.h>

/* The part of a verb's state that the runner reads. The verb's state struct starts with it: a
 * pointer to it is a pointer to the state, which the verb's hooks get back. */
typedef struct cli_job {
    const char *files[2]; /* the traces to load (the verb's operands); files[1] NULL for one */
    const char *out;      /* -o OUT; NULL or "-" = standard output */
    int fmt;              /* --format: a tl_format */
    int unit;             /* --unit: a tl_unit */
    int wide;             /* --wide: text names printed whole */
    int html;             /* --html: out gets the report as a page (tally report) */
    int read_threads;     /* -j: threads that parse each trace (0: TALLY_THREADS or the cores) */
    /* The verb's part, one of the two. views: the tables to write after the traces' loss
     * warnings (NULL with err set on failure). render: writes the whole output itself (tally
     * report: tl_report_write, which writes the warnings too); 0, or -1 with err set. */
    tl_table *(*views)(const tl_trace *traces, void *state, tl_error *err);
    int (*render)(FILE *f, const tl_trace *traces, void *state, tl_error *err);
    /* Optional: a usage check before the traces are read (a misspelt view); 0, or -1 with err
     * set. */
    int (*check)(void *state, tl_error *err);
    /* Optional: after the check, a verb that does its own work for these operands (tally
     * report of a folder of ranks) returns its exit status; CLI_CONTINUE goes on to load
     * files[]. */
    int (*takeover)(void *state);
} cli_job;

/* The rows of --unit, --wide, --format and -o, in the table of a verb whose state (CLI_STATE)
 * starts with a cli_job named job. */
#define CLI_RENDER_OPTIONS                                                                         \
    CLI_WORDS("unit", job.unit, "UNIT", cli_unit_words,                                            \
              "text times in auto (default), ns, us, ms or s"),                                    \
        CLI_OPTION("wide", 0, CLI_FLAG, job.wide, NULL,                                            \
                   "text: print names whole (default: cut at 60 characters)"),                     \
        CLI_WORDS("format", job.fmt, "FMT", cli_format_words, "text (default), csv or json"),      \
        CLI_OPTION("output", 'o', CLI_STRING, job.out, "OUT",                                      \
                   "write to OUT instead of standard output")

/* tally report of a job: the operands (a folder tree of ranks, or several trace files) read
 * with `threads` threads (0: the cores), the job's tables written as job asks (format, unit,
 * -o). cmd_job.c. Returns the exit status. */
#define CLI_JOB_MAX_ARGS 4096
int cli_report_job(const char *const *paths, const cli_job *job, int threads);

/* The command of a verb that reads traces into the cli_job of its state (CLI_STATE): operands
 * "FILE" (or "A B"), what they are, its about text and more help. */
#define CLI_TRACE_COMMAND(verb_, operands_, what_, about_, more_help_)                             \
    {                                                                                              \
        .verb = verb_, .operands = operands_, .what = what_,                                       \
        .operands_off = offsetof(CLI_STATE, job.files), .about = about_, CLI_TABLE,                \
        .more_help = more_help_                                                                    \
    }

/* Parse the command line of c into the verb's state (which starts with job), then run the job.
 * Returns the exit status; every failure has printed one line "tally VERB: ...". */
int cli_main(const cli_command *c, int argc, char **argv, cli_job *job);

/* The exit status of a failure of this kind: 2 for TL_ERR_USAGE, else 1. */
int cli_status(const tl_error *err);

/* Print "tally VERB: <err->msg>" and return cli_status(err). */
int cli_fail(const char *verb, const tl_error *err);

/* Open path for writing (NULL or "-": standard output). NULL after printing "tally VERB:
 * cannot write PATH: why". */
FILE *cli_open_out(const char *verb, const char *path);
/* Close what cli_open_out gave (standard output stays open: main checks it at exit). Returns
 * status, or 1 after printing "tally VERB: error writing PATH" when the writes failed and
 * status was 0. */
int cli_close_out(const char *verb, FILE *f, const char *path, int status);

/* A trace is read through mappings of its file (.tally, and the windows of a parallel JSON
 * read): when another program cuts the file short meanwhile, the pages past its new end fault
 * (SIGBUS). For the tally command: such a fault prints one line, "tally VERB: PATH: the file was
 * cut short while it was read ...", and exits with status 1 instead of crashing. */
void cli_catch_cut_files(void);

/* tl_load, then tl_trace_finish when the reader did not. Returns 0, or the exit status after
 * printing the error. progress: a progress line on stderr for long reads. */
int cli_load(const char *verb, tl_trace *t, const char *path, int progress);

/* Write t as Chrome trace JSON to out, gzip-compressed when out ends in ".gz", under a
 * temporary name renamed into place so that no reader sees half a file; "-" writes plain JSON
 * to standard output. Returns 0, or 1 after printing the error. */
int cli_write_chrome(const char *verb, const tl_trace *t, const char *out);

#endif
