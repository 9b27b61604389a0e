/*
 * fuzz_tally_reader.c — libFuzzer target for the .tally reader and the streaming export: any
 * bytes must either read or fail with a one-line "NAME: offset N: ..." error, never crash, hang
 * or leak; and the streaming export (tally_export.c, no trace model) must agree with the reader:
 * it fails when the reader fails, and otherwise writes as many events as the model holds; and
 * the decoding in parts (three threads) must give the decoding in order's model (one thread):
 * the same events field by field and the same strings, or the same error.
 *
 *   cmake -DTALLY_FUZZ=ON -DCMAKE_C_COMPILER=clang ... && ./fuzz_tally_reader corpus/
 * Seed corpus: tests/fuzz/corpus_tally_reader (test_tally_reader --write-seeds DIR writes it).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "trace/model.h"
#include "trace/tally_export.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        __builtin_trap();
    tl_trace t;
    tl_trace_init(&t);
    tl_error err;
    memset(&err, 0, sizeof err);
    int rc = tl_read_tally_mem(&t, data, size, "fuzz.tally", &err);
    if (rc != 0) {
        /* a failure always says where */
        if (strncmp(err.msg, "fuzz.tally: offset ", 19) != 0 || strchr(err.msg, '\n'))
            __builtin_trap();
    }
    tl_error serr;
    memset(&serr, 0, sizeof serr);
    size_t nev = 0;
    int src = tl_tally_export_mem(data, size, "fuzz.tally", sink, &nev, &serr);
    if ((src != 0) != (rc != 0) || (rc == 0 && nev != t.nev))
        __builtin_trap();
    if (src != 0 && strcmp(serr.msg, err.msg) != 0)
        __builtin_trap();
    tl_trace_free(&t);

    tl_trace a, b;
    tl_error ea, eb;
    memset(&ea, 0, sizeof ea);
    memset(&eb, 0, sizeof eb);
    tl_trace_init(&a);
    tl_trace_init(&b);
    a.read_threads = 1;
    b.read_threads = 3;
    int ra = tl_read_tally_mem(&a, data, size, "fuzz.tally", &ea);
    int rb = tl_read_tally_mem(&b, data, size, "fuzz.tally", &eb);
    if (ra != rb || (ra != 0 && strcmp(ea.msg, eb.msg) != 0))
        __builtin_trap();
    if (ra == 0) {
        if (a.nev != b.nev || a.strings.count != b.strings.count || a.nmem != b.nmem)
            __builtin_trap();
        for (size_t i = 0; i < a.nev; i++)
            if (memcmp(&a.ev[i], &b.ev[i], sizeof a.ev[i]) != 0)
                __builtin_trap();
        for (uint32_t i = 0; i < a.strings.count; i++)
            if (strcmp(a.strings.str[i], b.strings.str[i]) != 0)
                __builtin_trap();
    }
    tl_trace_free(&a);
    tl_trace_free(&b);
    return 0;
}
