/*
 * record_test_util.h — what the recorder's tests share: reading back a .tally file with the
 * reader's error on stderr. (The session settings they use are bench_config in bench_util.h.)
 */
#ifndef TALLY_RECORD_TEST_UTIL_H
#define TALLY_RECORD_TEST_UTIL_H
#include <stdio.h>

#include "../../bench/bench_util.h"
#include "trace/model.h"

/* Read the .tally file at path into t (initialised here); 0 on success. */
static inline int record_load(tl_trace *t, const char *path)
{
    tl_error err = {{0}};
    tl_trace_init(t);
    int rc = tl_read_tally(t, path, &err);
    if (rc != 0)
        fprintf(stderr, "read failed: %s\n", err.msg);
    return rc;
}
#endif
