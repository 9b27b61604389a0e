/*
 * runner.c — load -> views -> render for the verbs that read traces (runner.h), and the
 * loading, writing and exit-status helpers that `tally export`, `tally run` and `tally demo`
 * share with them.
 */
#include "cli/runner.h"
#include "report/summary.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_status(const tl_error *err)
{
    return err && err->code == TL_ERR_USAGE ? 2 : 1;
}

int cli_fail(const char *verb, const tl_error *err)
{
    fprintf(stderr, "tally %s: %s\n", verb, err && err->msg[0] ? err->msg : "failed");
    return cli_status(err);
}

FILE *cli_open_out(const char *verb, const char *path)
{
    if (!path || !strcmp(path, "-"))
        return stdout;
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "tally %s: cannot write %s: %s\n", verb, path, strerror(errno));
    return f;
}

int cli_close_out(const char *verb, FILE *f, const char *path, int status)
{
    if (f == stdout)
        return status;
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "tally %s: error writing %s: %s\n", verb, path, strerror(errno));
        if (!status)
            status = 1;
    }
    return status;
}

/* What cli_load reads, for on_sigbus' message; NULL: an input (a folder's ranks, in threads). */
static const char *volatile loading_verb, *volatile loading_path;

static void put_err(const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(2, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* A page of a mapped input past the file's end: another program cut the file short while it
 * was read. One line and status 1; any other SIGBUS gets its default action (the handler is
 * reset, and the access faults again). */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if (si && si->si_code == BUS_ADRERR) {
        const char *verb = loading_verb, *path = loading_path;
        put_err("tally");
        if (verb) {
            put_err(" ");
            put_err(verb);
        }
        put_err(": ");
        put_err(path ? path : "an input file");
        put_err(": " TL_CUT_SHORT_TEXT "\n");
        _exit(1);
    }
}

void cli_catch_cut_files(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

/* Transparent huge pages only for a trace whose arrays are big: where the system makes every
 * anonymous 2 MB stretch a huge page (THP "always"), a small trace's half-used arrays and the
 * parts of a parallel read each held whole 2 MB pages (a 31 MB trace: 10.7-11.0 MB at -j 2
 * against 9.5 without, a 10 MB one 7.9 against 6.2), where speed is no matter. A plain JSON
 * trace's arrays are ~a fifth of the file, a .gz's ~twice it, a .tally's ~four times: under 16
 * MB of them, none; above, the system's default again (a later, bigger input). The CLI's own
 * process only: set after any program it runs has been started, and never in the library. */
static void huge_pages_for(const char *path)
{
#ifdef PR_SET_THP_DISABLE
    struct stat st;
    if (!path || !strcmp(path, "-") || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return;
    size_t n = strlen(path);
    uint64_t size = (uint64_t)st.st_size;
    uint64_t arrays = n > 3 && !strcmp(path + n - 3, ".gz")      ? size * 2
                      : n > 6 && !strcmp(path + n - 6, ".tally") ? size * 4
                                                                 : size / 5;
    prctl(PR_SET_THP_DISABLE, arrays < ((uint64_t)16 << 20) ? 1 : 0, 0, 0, 0);
#else
    (void)path;
#endif
}

int cli_load(const char *verb, tl_trace *t, const char *path, int progress)
{
    huge_pages_for(path);
    tl_error err = {{0}};
    loading_verb = verb;
    loading_path = path;
    int rc = tl_load(t, path, progress, &err);
    loading_verb = loading_path = NULL;
    if (rc != 0)
        return cli_fail(verb, &err);
    if (!t->finished && tl_trace_finish(t) != 0) {
        tl_error_setc(&err, TL_ERR_NOMEM, "%s: out of memory", path);
        return cli_fail(verb, &err);
    }
    tl_malloc_for_views(t);
    return 0;
}

int cli_write_chrome(const char *verb, const tl_trace *t, const char *out)
{
    tl_error err = {{0}};
    if (!strcmp(out, "-"))
        return tl_write_chrome_file(t, stdout, &err) != 0 ? cli_fail(verb, &err) : 0;
    /* a device or a pipe (/dev/null, a fifo) is written in place: never renamed over */
    struct stat st;
    if (stat(out, &st) == 0 && !S_ISREG(st.st_mode))
        return tl_write_chrome(t, out, &err) != 0 ? cli_fail(verb, &err) : 0;
    size_t n = strlen(out);
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%d%s", out, (int)getpid(),
                 n > 3 && !strcmp(out + n - 3, ".gz") ? ".gz" : "") >= (int)sizeof tmp) {
        tl_error_setc(&err, TL_ERR_IO, "%s: path too long", out);
        return cli_fail(verb, &err);
    }
    int rc = tl_write_chrome(t, tmp, &err);
    if (rc == 0 && rename(tmp, out) != 0) {
        tl_error_setc(&err, TL_ERR_IO, "%s: %s", out, strerror(errno));
        rc = -1;
    }
    if (rc != 0) {
        unlink(tmp);
        tl_error_for_path(&err, tmp, out);
        return cli_fail(verb, &err);
    }
    return 0;
}

/* The traces' loss warnings (dropped records, ranges never closed, ...), where tally report
 * puts them: in the text output, under "messages" in JSON, on stderr for CSV. */
struct warnings {
    tl_out *out;
    const char *file; /* prefixed when the verb reads two traces */
};

static void warn(const char *line, void *arg)
{
    const struct warnings *w = arg;
    const char *sep = w->file ? ": " : "";
    if (w->out->fmt == TL_FMT_CSV)
        fprintf(stderr, "tally: %s%s%s\n", w->file ? w->file : "", sep, line);
    else
        tl_out_text(w->out, "%s%s%s", w->file ? w->file : "", sep, line);
}

static void write_tables(FILE *f, const char *verb, const cli_job *job, const tl_trace *t, int n,
                         tl_table *tab)
{
    tl_out o;
    tl_out_begin(&o, f, (tl_format)job->fmt, (tl_unit)job->unit);
    o.wide = job->wide;
    if (job->fmt == TL_FMT_JSON) {
        /* the metadata of the trace ("trace"), or of both ("traces": [A, B]) */
        char *meta[2] = {NULL, NULL};
        for (int k = 0; k < n; k++)
            meta[k] = tl_trace_meta_json(&t[k]);
        if (n == 1) {
            tl_out_json(&o, "trace", meta[0]);
        } else if (meta[0] && meta[1]) {
            size_t len = strlen(meta[0]) + strlen(meta[1]) + 8;
            char *both = malloc(len);
            if (both) {
                snprintf(both, len, "[%s, %s]", meta[0], meta[1]);
                tl_out_json(&o, "traces", both);
            }
            free(both);
        }
        free(meta[0]);
        free(meta[1]);
    }
    int nwarn = 0;
    for (int k = 0; k < n; k++) {
        struct warnings w = {&o, n > 1 ? job->files[k] : NULL};
        nwarn += tl_trace_warnings(&t[k], warn, &w);
    }
    if (nwarn && job->fmt == TL_FMT_TEXT)
        tl_out_text(&o, "%s", "");
    /* the accelerator named as the trace names it (both traces, when two) */
    if (n == 1 || (n == 2 && !strcmp(tl_accel_name(&t[0]), tl_accel_name(&t[1]))))
        tl_table_name_accel(tab, tl_accel_name(&t[0])); /* (out of memory: left as it was) */
    for (const tl_table *x = tab; x; x = x->next)
        tl_out_table(&o, x);
    tl_out_end(&o);
    /* csv has no notes: why a table holds nothing to read goes to stderr */
    for (const tl_table *x = tab; x && job->fmt == TL_FMT_CSV; x = x->next)
        if (x->why_empty > 0 && x->why_empty <= x->nnotes)
            fprintf(stderr, "tally %s: %s\n", verb, x->notes[x->why_empty - 1]);
}

int cli_main(const cli_command *c, int argc, char **argv, cli_job *job)
{
    const char *verb = c->verb;
    void *state = job;
    tl_error err = {{0}};
    int status = cli_parse(c, argc, argv, state);
    if (status != CLI_CONTINUE)
        return status;
    /* usage errors first: say so before reading a big file */
    if (job->check && job->check(state, &err) != 0)
        return cli_fail(verb, &err);
    if (job->files[0] && job->files[1] && !strcmp(job->files[0], "-") &&
        !strcmp(job->files[1], "-")) {
        tl_error_setc(
            &err, TL_ERR_USAGE,
            "'-' (standard input) given twice: it is read once; give one trace as a file");
        return cli_fail(verb, &err);
    }
    if (job->takeover && (status = job->takeover(state)) != CLI_CONTINUE)
        return status;
    tl_trace t[2];
    int n = 0;
    tl_table *tab = NULL;
    FILE *out = stdout;
    status = 0;
    for (; n < 2 && job->files[n]; n++) {
        tl_trace_init(&t[n]);
        t[n].read_threads = job->read_threads;
        if ((status = cli_load(verb, &t[n], job->files[n], 1)) != 0) {
            n++; /* freed below too */
            goto done;
        }
    }
    /* computed before -o OUT is opened: a bad sort key leaves an existing OUT alone */
    if (job->views && !(tab = job->views(t, state, &err))) {
        status = cli_fail(verb, &err);
        goto done;
    }
    if (!(out = cli_open_out(verb, job->out))) {
        status = 1;
        goto done;
    }
    if (job->render) {
        if (job->render(out, t, state, &err) != 0)
            status = cli_fail(verb, &err);
    } else {
        write_tables(out, verb, job, t, n, tab);
    }
    status = cli_close_out(verb, out, job->out, status);
done:
    tl_table_free(tab);
    for (int k = 0; k < n; k++)
        tl_trace_free(&t[k]);
    return status;
}
