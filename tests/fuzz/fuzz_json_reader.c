/*
 * fuzz_json_reader.c — libFuzzer target for the Chrome/Kineto/Paddle JSON reader: any bytes must
 * either read or fail with a one-line "NAME:LINE:COL: ..." error, never crash, hang or leak. A
 * trace that reads is then finished and put through the short report and the ops and gaps
 * views, which must not crash on whatever the reader let through.
 *
 *   cmake -DTALLY_FUZZ=ON -DCMAKE_C_COMPILER=clang ... && ./fuzz_json_reader corpus/
 * A seed corpus: tests/fuzz/corpus_json_reader/ (small Kineto, Paddle and Chrome traces).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analysis/views.h"
#include "report/summary.h"
#include "trace/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* "fuzz.json:LINE:COL: " */
static int has_position(const char *msg)
{
    const char *p = msg + 10;
    if (strncmp(msg, "fuzz.json:", 10) != 0)
        return 0;
    for (int k = 0; k < 2; k++) {
        if (*p < '0' || *p > '9')
            return 0;
        while (*p >= '0' && *p <= '9')
            p++;
        if (*p++ != ':')
            return 0;
    }
    return *p == ' ';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null_out;
    if (!null_out && !(null_out = fopen("/dev/null", "w")))
        __builtin_trap();
    tl_trace t;
    tl_trace_init(&t);
    tl_error err;
    memset(&err, 0, sizeof err);
    if (tl_read_json_mem(&t, (const char *)data, size, "fuzz.json", &err) != 0) {
        /* a failure always says where, on one line */
        if ((!has_position(err.msg) && !strstr(err.msg, "out of memory")) || strchr(err.msg, '\n'))
            __builtin_trap();
        tl_trace_free(&t);
        return 0;
    }
    if (tl_trace_finish(&t) != 0)
        __builtin_trap();
    tl_summary_print(null_out, &t);
    tl_table *ops = tl_view_ops(&t, NULL, &err);
    tl_table_free(ops);
    tl_table *gaps = tl_view_gaps(&t, NULL, &err);
    tl_table_free(gaps);
    tl_trace_free(&t);
    return 0;
}
