/*
 * shared_trace.h — what the tests on the real traces (../shared/traces) share: loading one by
 * name into a finished trace model.
 */
#ifndef TALLY_TEST_SHARED_TRACE_H
#define TALLY_TEST_SHARED_TRACE_H

#include <stdio.h>
#include <unistd.h>

#include "testlib.h"
#include "trace/model.h"

/* Load ../shared/traces/NAME into t (initialised here; the caller frees it, also on failure)
 * and finish it. 0, or -1: a load that fails is a failed check; a file that is not there is
 * one too, unless missing_ok (then -1 quietly). */
static inline int shared_trace_load(tl_trace *t, const char *name, int missing_ok)
{
    /* the trace borrows its path (t->path): kept past the call, for the last few traces */
    static char paths[8][1024];
    static int next;
    char *path = paths[next++ % 8];
    snprintf(path, sizeof paths[0], "%s/traces/%s", TALLY_SHARED_DIR, name);
    tl_trace_init(t);
    if (missing_ok && access(path, R_OK) != 0)
        return -1;
    tl_error err = {{0}};
    int rc = tl_load(t, path, 0, &err);
    if (rc != 0)
        fprintf(stderr, "  %s: %s\n", name, err.msg);
    CHECK_EQ_INT(rc, 0);
    if (rc == 0 && !t->finished)
        CHECK_EQ_INT(tl_trace_finish(t), 0);
    return rc;
}

#endif
