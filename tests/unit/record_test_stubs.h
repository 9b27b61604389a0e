/*
 * record_test_stubs.h — weak fallbacks for tl_load and tl_write_chrome, so the recorder's tests
 * link while the JSON reader/writer (another part) is not in the library. A real definition in
 * the library wins over these.
 */
#ifndef TALLY_RECORD_TEST_STUBS_H
#define TALLY_RECORD_TEST_STUBS_H
#include "trace/model.h"

__attribute__((weak)) int tl_load(tl_trace *t, const char *path, int progress, tl_error *err)
{
    (void)progress;
    return tl_read_tally(t, path, err);
}

__attribute__((weak)) int tl_write_chrome(const tl_trace *t, const char *path, tl_error *err)
{
    (void)t;
    tl_error_set(err, "%s: no Chrome writer in this build", path);
    return -1;
}
#endif
