/*
 * fuzz_job_summary.c — libFuzzer target for the job summaries a node's `tally report DIR
 * --format json` writes and the merge reads back (analysis/job_summary.c): any bytes after
 * {"job_summary": must either read or fail with one line "FILE: offset N: expected ...", never
 * crash, hang or leak; what reads is put through the job's tables (straggler margins, skews),
 * which must not overflow on whatever numbers the file holds.
 *
 *   cmake -DTALLY_FUZZ=ON -DCMAKE_C_COMPILER=clang ... && ./fuzz_job_summary corpus/
 * A seed corpus: tests/fuzz/corpus_job_summary/ (job reports of made-up jobs).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/job.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void remove_input(void)
{
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/fuzz_job_summary.%d.json", (int)getpid());
        atexit(remove_input); /* libFuzzer ends a timed run with exit() */
    }
    static const char head[] = "{\"job_summary\": ";
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(head, 1, sizeof head - 1, f) != sizeof head - 1 ||
        fwrite(data, 1, size, f) != size || fclose(f) != 0)
        __builtin_trap();
    tl_error err;
    memset(&err, 0, sizeof err);
    char *const paths[] = {path};
    tl_job job;
    if (tl_job_load(&job, paths, 1, 1, 0, &err) != 0) {
        /* a failure says where, on one line */
        if (strchr(err.msg, '\n') ||
            (!strstr(err.msg, ": offset ") && !strstr(err.msg, "out of memory") &&
             !strstr(err.msg, "two traces of rank")))
            __builtin_trap();
        return 0;
    }
    tl_table *tab = tl_job_views(&job, 20, &err);
    tl_table_free(tab);
    tl_job_free(&job);
    return 0;
}
