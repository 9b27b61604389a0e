/*
 * fuzz_views.c — libFuzzer target for everything after the JSON reader: any bytes that read as a
 * trace go through every registered view (tl_view_defs) in text, CSV and JSON, the Chrome
 * export, and the diff of the trace with itself, all to /dev/null. None of them may crash,
 * hang, leak or overflow (the CI builds this with UBSan, whose reports abort); a view may fail
 * only with an error message, and the diff of a trace with itself must succeed.
 *
 *   cmake -DTALLY_FUZZ=ON -DCMAKE_C_COMPILER=clang ... && ./fuzz_views corpus/
 * Seed corpus: tests/fuzz/corpus_views (small traces with steps, kernels, copies, memory,
 * flows and communication, so that every view has rows to compute).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analysis/insight.h"
#include "report/summary.h"
#include "trace/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null_out;
    if (!null_out && !(null_out = fopen("/dev/null", "w")))
        __builtin_trap();
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    if (tl_read_json_mem(&t, (const char *)data, size, "fuzz.json", &err) != 0 ||
        tl_trace_finish(&t) != 0) {
        tl_trace_free(&t);
        return 0;
    }
    static const tl_format fmts[] = {TL_FMT_TEXT, TL_FMT_CSV, TL_FMT_JSON};
    for (int v = 0; v < tl_nview_defs; v++)
        for (size_t f = 0; f < sizeof fmts / sizeof *fmts; f++) {
            tl_report_opts o;
            memset(&o, 0, sizeof o);
            o.views = tl_view_defs[v].name;
            o.fmt = fmts[f];
            o.unit = TL_UNIT_AUTO;
            o.header = 1;
            err.msg[0] = 0;
            /* a view fails only with a message (out of memory) */
            if (tl_report_write(null_out, &t, &o, &err) != 0 && !err.msg[0])
                __builtin_trap();
        }
    err.msg[0] = 0;
    if (tl_write_chrome_file(&t, null_out, &err) != 0 && !err.msg[0])
        __builtin_trap();
    tl_view_opts vo;
    memset(&vo, 0, sizeof vo);
    err.msg[0] = 0;
    tl_table *d = tl_view_diff(&t, &t, NULL, &vo, &err);
    if (!d && !strstr(err.msg, "out of memory"))
        __builtin_trap();
    tl_table_free(d);
    tl_trace_free(&t);
    return 0;
}
