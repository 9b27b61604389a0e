/*
 * fuzz_tally_reader.c — libFuzzer target for the .tally reader: any bytes must either read or
 * fail with a one-line "NAME: offset N: ..." error, never crash, hang or leak.
 *
 *   cmake -DTALLY_FUZZ=ON -DCMAKE_C_COMPILER=clang ... && ./fuzz_tally_reader corpus/
 * A seed corpus: any .tally file the recorder wrote (e.g. from `tally demo`).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_error err;
    memset(&err, 0, sizeof err);
    if (tl_read_tally_mem(&t, data, size, "fuzz.tally", &err) != 0) {
        /* a failure always says where */
        if (strncmp(err.msg, "fuzz.tally: offset ", 19) != 0 || strchr(err.msg, '\n'))
            __builtin_trap();
    }
    tl_trace_free(&t);
    return 0;
}
