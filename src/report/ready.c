/*
 * ready.c — the default trace-ready handler: what happens to a finished active window when
 * the program names no handler of its own.
 *
 * The recorder has already closed the window's .tally file. This reads it back with the same
 * loader the command line uses, writes the Chrome trace JSON (plain and/or gzip) next to it,
 * and prints the short report on stderr. It runs inside the profiled program, so it never
 * exits, never writes to stdout, keeps errno, and reports a failure with one line on stderr
 * and a negative TALLY_E* code.
 */
#include <tally.h>

#include "report/summary.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* base_path + ext, or NULL when out of memory. */
static char *with_ext(const char *base, const char *ext)
{
    size_t n = strlen(base) + strlen(ext) + 1;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s%s", base, ext);
    return p;
}

static int write_json(const tl_trace *t, const char *base, const char *ext)
{
    char *path = with_ext(base, ext);
    if (!path)
        return TALLY_ENOMEM;
    tl_error err = {{0}};
    int rc = 0;
    if (tl_write_chrome(t, path, &err) != 0) {
        fprintf(stderr, "tally: %s\n", err.msg[0] ? err.msg : path);
        rc = TALLY_EIO;
    }
    free(path);
    return rc;
}

TALLY_API int tally_default_trace_ready(const tally_window *window, void *user)
{
    (void)user;
    if (!window || !window->path)
        return TALLY_EINVAL;
    int saved_errno = errno;
    unsigned want = window->write;
    if (!(want & (TALLY_WRITE_JSON | TALLY_WRITE_JSON_GZ | TALLY_WRITE_SUMMARY)))
        return 0;
    const char *base = window->base_path ? window->base_path : window->path;

    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    int rc = 0;
    if (tl_load(&t, window->path, 0, &err) != 0) {
        fprintf(stderr, "tally: cannot read back %s: %s\n", window->path, err.msg);
        rc = TALLY_EIO;
        goto out;
    }
    if ((want & TALLY_WRITE_JSON) && rc == 0)
        rc = write_json(&t, base, ".json");
    if ((want & TALLY_WRITE_JSON_GZ) && rc == 0)
        rc = write_json(&t, base, ".json.gz");
    if (want & TALLY_WRITE_SUMMARY) {
        tl_summary_print(stderr, &t);
        fprintf(stderr, "tally: trace %s", window->path);
        if (want & TALLY_WRITE_JSON)
            fprintf(stderr, ", %s.json", base);
        if (want & TALLY_WRITE_JSON_GZ)
            fprintf(stderr, ", %s.json.gz", base);
        fprintf(stderr, "\n");
        if (window->dropped && !t.dropped)
            fprintf(stderr, "tally: warning: %llu records dropped in this window\n",
                    (unsigned long long)window->dropped);
    }
out:
    tl_trace_free(&t);
    errno = saved_errno;
    return rc;
}
