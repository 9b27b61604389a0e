/*
 * test_parallel_read.c — the JSON reader's parallel parse gives the model one pass gives, for
 * any number of threads and any cut of the file: every event, string, track and memory row
 * equal, the default report byte for byte, and the same error message for bad input.
 *
 * The traces are made to hit what a part cannot settle alone: B in one part and its E in a
 * later one, E without B, thread names set, reset and emptied in different parts, "CPU
 * functions" appearing half-way (categories of earlier cat-less events depend on it), names as
 * pids ("Spans", ""), tids that are negative numbers, tid -1 beside tid "" (one track in file
 * order), "}, {" inside strings and in args (false cuts), compact and indented layouts, an
 * element longer than a window, counters, memory events and flows. TALLY_READ_PART makes the
 * parts a few hundred bytes so that a small trace is cut in many windows.
 */
#include "parallel_check.h"
#include "testlib.h"
#include "trace/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static unsigned rnd_state;
static unsigned rnd(unsigned n)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 8) % n;
}

static const char *const pids[] = {"1", "2", "\"Spans\"", "\"\"", "3"};
/* the last two are one track in file order (a name's id is -1 - its string id; "" is string 0) */
static const char *const tids[] = {"1", "2", "-549452224", "\"stream 7\"", "7", "-1", "\"\""};
static unsigned ntids = 5;
/* device events whose pid is a name: their device is that name's id, which a part cannot know
 * (the reader reads on in one pass); only some traces have them, the others stay parallel */
static int device_name_pids;
static const char *const cats[] = {"cpu_op",          "kernel", "cuda_runtime",
                                   "user_annotation", "",       "gpu_memcpy",
                                   "python_function", "Trace",  "gpu_user_annotation"};
static const char *const names[] = {"aten::mm",
                                    "k \\\"q\\\" }, {x",
                                    "ProfilerStep#3",
                                    "Memcpy HtoD (Pageable -> Device)",
                                    "void gemm<1, {2}>",
                                    "Optimizer.step#Adam.step",
                                    "caf\\u00e9",
                                    "",
                                    "enumerate(DataLoader)#_next"};

/* Write a trace of n elements to f. layout 0: one element a line; 1: Kineto's indentation; 2:
 * everything on one line. cpu_functions_at: the element from which pids are "CPU functions"
 * (n: never). huge: one element longer than `huge` bytes somewhere. */
static void write_trace(FILE *f, int n, int layout, int cpu_functions_at, size_t huge)
{
    const char *nl = layout == 2 ? "" : "\n";
    fprintf(f, "{\"schemaVersion\": 1,%s\"traceEvents\": [%s", nl, nl);
    int huge_at = huge ? (int)rnd((unsigned)n) : -1;
    int64_t ts = 1000;
    for (int i = 0; i < n; i++) {
        if (i)
            fprintf(f, ",%s", nl);
        ts += rnd(50);
        const char *pid = i >= cpu_functions_at && rnd(2) ? "\"CPU functions\"" : pids[rnd(5)];
        const char *tid = tids[rnd(ntids)];
        unsigned kind = rnd(20);
        if (layout == 1)
            fputs("  {\n    ", f);
        else
            fputs("{", f);
        const char *cat = cats[rnd(9)];
        int device = !strcmp(cat, "kernel") || !strcmp(cat, "gpu_memcpy") ||
                     !strcmp(cat, "gpu_user_annotation") || kind == 18;
        if (device && !device_name_pids && pid[0] == '"')
            pid = "0";
        if (kind < 8) { /* a complete event, args of every shape */
            fprintf(f,
                    "\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %s, \"tid\": %s, ",
                    cat, names[rnd(9)], pid, tid);
            fprintf(f, "%s\"ts\": %lld.%03u, \"dur\": %u", layout == 1 ? "\n    " : "",
                    (long long)ts, rnd(1000), rnd(40));
            unsigned a = rnd(6);
            if (a == 1)
                fprintf(f, ", \"args\": {\"correlation\": %u, \"device\": %u, \"stream\": %u}",
                        rnd(30), rnd(2), 7 + rnd(2));
            else if (a == 2)
                fprintf(f, ", \"args\": {\"Input Dims\": [[2, 3], []], \"x\": [{\"a\": 1}, "
                           "{\"b\": \"}, {\"}]}");
            else if (a == 3)
                fprintf(f, ",%s\"args\": {%s\"External id\": %u%s}", nl, nl, rnd(99), nl);
            else if (a == 4)
                fprintf(f, ", \"args\": {\"correlation\": %u}", rnd(30));
            if (i == huge_at) {
                fputs(", \"args2\": \"", f);
                for (size_t k = 0; k < huge; k++)
                    fputc('a' + (int)(k % 26), f);
                fputc('"', f);
            }
        } else if (kind < 11) {
            fprintf(f, "\"ph\": \"B\", \"name\": \"%s\", \"pid\": %s, \"tid\": %s, \"ts\": %lld",
                    names[rnd(9)], pid, tid, (long long)ts);
        } else if (kind < 14) {
            fprintf(f, "\"ph\": \"E\", \"pid\": %s, \"tid\": %s, \"ts\": %lld", pid, tid,
                    (long long)ts);
        } else if (kind == 14) {
            static const char *const tn[] = {"main", "", "worker }, {", "\\\"q\\\""};
            fprintf(f,
                    "\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %s, \"tid\": %s, "
                    "\"args\": {\"name\": \"%s\"}",
                    pid, tid, tn[rnd(4)]);
        } else if (kind == 15) {
            fprintf(f,
                    "\"ph\": \"C\", \"name\": \"mem\", \"pid\": %s, \"tid\": %s, \"ts\": %lld, "
                    "\"args\": {\"a\": %u%s}",
                    pid, tid, (long long)ts, rnd(9), rnd(2) ? ", \"b\": 2.5" : "");
        } else if (kind == 16) {
            fprintf(f,
                    "\"ph\": \"i\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": %s, \"tid\": "
                    "%s, \"ts\": %lld, \"args\": {\"Addr\": %u, \"Bytes\": %d, \"Total "
                    "Allocated\": %u, \"Device Type\": 1, \"Device Id\": 0}",
                    pid, tid, (long long)ts, 4096 * (1 + rnd(8)), rnd(2) ? 512 : -512, rnd(100000));
        } else if (kind == 17) {
            fprintf(f,
                    "\"ph\": \"%c\", \"id\": %s, \"cat\": \"ac2g\", \"name\": \"ac2g\", \"pid\": "
                    "%s, \"tid\": %s, \"ts\": %lld%s",
                    rnd(2) ? 's' : 'f', rnd(2) ? "5" : "\"ab\"", pid, tid, (long long)ts,
                    rnd(2) ? ", \"bp\": \"e\"" : "");
        } else if (kind == 18) { /* a kernel whose device is its pid */
            fprintf(f,
                    "\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%u\", \"pid\": %s, \"tid\": "
                    "%s, \"ts\": %lld, \"dur\": 3",
                    rnd(3), pid, tid, (long long)ts);
        } else {
            fprintf(f,
                    "\"ph\": \"X\", \"name\": \"plain%u\", \"pid\": %s, \"tid\": %s, \"ts\": "
                    "%lld, \"dur\": 5",
                    rnd(4), pid, tid, (long long)ts);
        }
        fputs(layout == 1 ? "\n  }" : "}", f);
        if (rnd(40) == 0) /* not an event object: skipped by both */
            fprintf(f, ",%s42", nl);
    }
    fprintf(f, "%s],%s\"baseTimeNanoseconds\": 1700000000000000000}%s", nl, nl, nl);
}

static char tmpdir[] = "/tmp/tally-parallel-XXXXXX";

static void make_trace(const char *path, int n, int layout, int cpu_at, size_t huge)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    write_trace(f, n, layout, cpu_at, huge);
    fclose(f);
}

/* A trace of a few MB (40,000 elements, one a line) at tmpdir/mb.json. */
static void make_mb_trace(char *path, size_t size)
{
    snprintf(path, size, "%s/mb.json", tmpdir);
    rnd_state = 4242;
    ntids = 5;
    device_name_pids = 0;
    make_trace(path, 40000, 0, 40000, 0);
}

TEST(random_traces_read_the_same_with_any_threads)
{
    static const int parts[] = {64, 300, 4096};
    char path[256];
    snprintf(path, sizeof path, "%s/t.json", tmpdir);
    for (int round = 0; round < 24 && !test_failures; round++) {
        rnd_state = 7919u * (unsigned)round + 1;
        int n = 50 + (int)rnd(400);
        int cpu_at = round % 3 == 0 ? n / 2 : n;
        ntids = round % 4 == 3 ? 7 : 5;
        device_name_pids = round % 4 == 1;
        make_trace(path, n, round % 3, cpu_at, round % 5 == 4 ? 9000 : 0);
        check_file(path, parts, 3, 0);
    }
}

/* Bad input anywhere: the message one pass gives (file, line, column, what was expected). */
TEST(bad_input_gives_the_one_pass_message)
{
    static const int parts[] = {64, 500};
    char good[256], bad[256];
    snprintf(good, sizeof good, "%s/good.json", tmpdir);
    snprintf(bad, sizeof bad, "%s/bad.json", tmpdir);
    rnd_state = 99;
    make_trace(good, 300, 1, 300, 0);
    size_t len = 0;
    char *text = test_read_file(good, &len);
    CHECK(text != NULL);
    if (!text)
        return;
    static const char *const breaks[] = {"}", ",,", "\"unterminated", "[", "\x01"};
    for (int k = 0; k < 5 * 6 && !test_failures; k++) {
        size_t at = len / 7 * (size_t)(k / 5 + 1); /* six places, five ways each */
        FILE *f = fopen(bad, "w");
        CHECK(f != NULL);
        if (!f)
            break;
        fwrite(text, 1, at, f);
        fputs(breaks[k % 5], f);
        fwrite(text + at, 1, len - at, f);
        fclose(f);
        check_file(bad, parts, 2, 0);
    }
    for (size_t cut = len / 3; cut < len && !test_failures; cut += len / 4) { /* truncated */
        FILE *f = fopen(bad, "w");
        fwrite(text, 1, cut, f);
        fclose(f);
        check_file(bad, parts, 2, 0);
    }
    free(text);
}

/* A file of a few MB read with the reader's own part sizes (no TALLY_READ_PART): big enough to
 * be read in parallel, in more than one window at every thread count (a window is at most 1 MB
 * here), and the same as one thread reads it. */
TEST(a_few_megabytes_read_the_same_with_the_readers_own_parts)
{
    static const int parts[] = {0};
    char path[256];
    make_mb_trace(path, sizeof path);
    size_t len = 0;
    char *text = test_read_file(path, &len);
    free(text);
    CHECK(len >= (3u << 20)); /* over the 2 MB a parallel read needs, and more than a window */
    windows_read = 0;
    check_file(path, parts, 1, 0);
    CHECK(windows_read >= 3 * 2); /* two windows or more at each of 2, 3 and 7 threads */
}

/* The last window is the file's pages mapped when the file ends inside a page (the rest of the
 * page reads as zeros: the lexer's NUL), and read into a buffer when it ends on a page boundary
 * (a byte past it could not be touched): files padded to end a byte before, at and after a
 * multiple of the page size, cut in windows of many sizes, read as one pass reads them. */
TEST(last_window_at_and_beside_a_page_boundary)
{
    static const int parts[] = {300, 1000, 4096};
    long page = sysconf(_SC_PAGESIZE);
    CHECK(page > 0);
    char path[256];
    snprintf(path, sizeof path, "%s/page.json", tmpdir);
    for (int n = 40; n <= 400 && page > 0 && !test_failures; n += 120) {
        rnd_state = 31u * (unsigned)n;
        make_trace(path, n, 1, n, 0);
        size_t len = 0;
        char *text = test_read_file(path, &len);
        CHECK(text != NULL);
        if (!text)
            return;
        size_t end = (len / (size_t)page + 1) * (size_t)page;
        for (size_t want = end - 1; want <= end + 1; want++) {
            FILE *f = fopen(path, "w");
            CHECK(f != NULL);
            if (!f)
                break;
            fwrite(text, 1, len, f);
            for (size_t k = len; k < want; k++) /* blanks after the document */
                fputc(k % 64 ? ' ' : '\n', f);
            fclose(f);
            check_file(path, parts, 3, 0);
        }
        free(text);
    }
}

/* Numbers a part's stand-in for a name's id could equal (INT64_MIN and near it, as a pid, a
 * tid, a stream or a flow id; -1e300 saturates there): read in one pass from there on, the
 * same model. (The fuzz target found the stream.) */
TEST(numbers_like_a_parts_stand_ins_read_the_same)
{
    static const char *const ids[] = {"-1e300", "-9223372036854775808", "-9223372036854775807"};
    static const int parts[] = {64, 200};
    char path[256];
    snprintf(path, sizeof path, "%s/ids.json", tmpdir);
    for (int k = 0; k < 3 * 4; k++) {
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (!f)
            return;
        fputs("{\"traceEvents\": [\n", f);
        for (int i = 0; i < 40; i++) {
            const char *id = i == 20 ? ids[k / 4] : "3";
            switch (k % 4) {
            case 0:
                fprintf(f,
                        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
                        "\"tid\": \"\", \"ts\": %d, \"dur\": 1, \"args\": {\"stream\": %s}},\n",
                        i, id);
                break;
            case 1:
                fprintf(f,
                        "{\"ph\": \"X\", \"name\": \"a\", \"pid\": %s, \"tid\": \"\", \"ts\": %d, "
                        "\"dur\": 1},\n",
                        id, i);
                break;
            case 2:
                fprintf(
                    f,
                    "{\"ph\": \"B\", \"name\": \"b\", \"pid\": \"\", \"tid\": %s, \"ts\": %d},\n",
                    id, i);
                break;
            default:
                fprintf(f,
                        "{\"ph\": \"s\", \"id\": %s, \"cat\": \"ac2g\", \"name\": \"f\", \"pid\": "
                        "1, \"tid\": 1, \"ts\": %d},\n",
                        id, i);
                break;
            }
        }
        fputs("{\"ph\": \"X\", \"name\": \"end\", \"pid\": 1, \"tid\": 1, \"ts\": 99, \"dur\": "
              "1}]}\n",
              f);
        fclose(f);
        check_file(path, parts, 2, 0);
    }
}

/* Flows are the only link (no correlation args): call i on host thread 6 launches kernel i on
 * stream 7, flow i + 1 from one to the other, amid operators. The host side's flows come first
 * in the file, before any call: a plain file keeps them as their elements' offsets, the trace
 * not yet known to need them; the first call without a correlation id says it does, and every
 * flow after it is kept whole (in one pass at once, in parts from the next window begun), so
 * only the flows before it are read again at the end; a gzip file (read once, in order) keeps
 * them all whole. The same model every way, every kernel linked to its call. A second flow
 * into call 0 (another id, after the first call) loses to the first in file order, as one
 * pass of whole flows has it: the flows read again go first. */
TEST(flows_kept_as_offsets_until_the_trace_needs_them_link_as_whole_flows_do)
{
    enum { N = 3000 };
    char path[256], gz[256];
    snprintf(path, sizeof path, "%s/flows.json", tmpdir);
    snprintf(gz, sizeof gz, "%s/flows.json.gz", tmpdir);
    FILE *f = fopen(path, "w");
    gzFile z = gzopen(gz, "wb1");
    CHECK(f != NULL && z != NULL);
    if (!f || !z)
        return;
    for (int pass = 0; pass < 2; pass++) {
        char line[512];
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int n_ = snprintf(line, sizeof line, __VA_ARGS__);                                         \
        if (pass)                                                                                  \
            gzwrite(z, line, (unsigned)n_);                                                        \
        else                                                                                       \
            fwrite(line, 1, (size_t)n_, f);                                                        \
    } while (0)
        PUT("{\"traceEvents\": [\n");
        for (int i = 0; i < N; i++)
            PUT("{\"ph\": \"s\", \"id\": %d, \"pid\": 5, \"tid\": 6, \"ts\": %lld, \"cat\": "
                "\"ac2g\", \"name\": \"ac2g\"},\n",
                i + 1, 100 + 50LL * i + 3);
        for (int i = 0; i < N; i++) {
            long long ts = 100 + 50LL * i;
            PUT("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::op%d\", \"pid\": 5, "
                "\"tid\": 6, \"ts\": %lld, \"dur\": 20},\n",
                i % 7, ts);
            PUT("{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
                "\"pid\": 5, \"tid\": 6, \"ts\": %lld, \"dur\": 5},\n",
                ts + 2);
        }
        PUT("{\"ph\": \"s\", \"id\": %d, \"pid\": 5, \"tid\": 6, \"ts\": 104, \"cat\": "
            "\"ac2g\", \"name\": \"ac2g\"},\n",
            N + 1000);
        for (int i = 0; i < N; i++) {
            long long ts = 200000 + 40LL * i;
            PUT("{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%d\", \"pid\": 0, "
                "\"tid\": 7, \"ts\": %lld, \"dur\": 30},\n",
                i, ts);
            PUT("{\"ph\": \"f\", \"id\": %d, \"pid\": 0, \"tid\": 7, \"ts\": %lld, \"cat\": "
                "\"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}%s\n",
                i + 1, ts, i + 1 < N ? "," : "");
        }
        PUT("]}\n");
#undef PUT
    }
    fclose(f);
    gzclose(z);

    tl_trace whole, one, parts;
    tl_error err;
    int rc;
    free(load(gz, 1, 0, &whole, &rc, &err));
    CHECK_EQ_INT(rc, 0);
    free(load(path, 1, 0, &one, &rc, &err));
    CHECK_EQ_INT(rc, 0);
    free(load(path, 3, 4096, &parts, &rc, &err));
    CHECK_EQ_INT(rc, 0);
    CHECK(same_model(&whole, &one));
    CHECK(same_model(&whole, &parts));
    CHECK_EQ_INT(parts.read_stats.threads, 3);
    CHECK(parts.read_stats.windows > 10);
    for (int k = 0; k < 3; k++) {
        const tl_trace *t = k == 0 ? &whole : k == 1 ? &one : &parts;
        CHECK_EQ_INT((long long)t->read_stats.flows, 2 * N + 1);
        size_t linked = 0;
        for (size_t i = 0; i < t->nev; i++) {
            const tl_event *e = &t->ev[i];
            if (e->cat == TL_CAT_RUNTIME && e->ts == 1000 * 102)
                CHECK_EQ_INT((long long)e->corr, 1); /* the first flow into it */
            if (e->cat != TL_CAT_KERNEL)
                continue;
            long long kidx = (e->ts / 1000 - 200000) / 40; /* the model keeps ns */
            CHECK_EQ_INT((long long)e->corr, kidx + 1);
            if (e->link != TL_NONE && t->ev[e->link].cat == TL_CAT_RUNTIME &&
                t->ev[e->link].ts == 1000 * (100 + 50 * kidx + 2))
                linked++;
        }
        CHECK_EQ_INT((long long)linked, N);
    }
    /* read again: the host side's flows, and in parts those of the windows begun before the
     * first call was merged (two windows of 12 KB: under 300 flows) */
    CHECK_EQ_INT((long long)whole.read_stats.flows_again, 0);
    CHECK_EQ_INT((long long)one.read_stats.flows_again, N);
    CHECK(parts.read_stats.flows_again >= N && parts.read_stats.flows_again < N + 300);
    /* whole flows are 40 bytes each, offsets 8 (either with room to grow) */
    CHECK(whole.read_stats.flow_bytes >= (uint64_t)40 * (2 * N + 1));
    CHECK(one.read_stats.flow_bytes < whole.read_stats.flow_bytes);
    tl_trace_free(&whole);
    tl_trace_free(&one);
    tl_trace_free(&parts);
}

/* Flows in no order of time: each side's flows in a shuffled order, on three host threads and
 * two streams. A flow's event is searched from where the last search on its track ended, in
 * either direction: every kernel still gets its call's flow id and link, in one pass and in
 * parts. */
TEST(flows_out_of_time_order_find_their_events)
{
    enum { N = 700 };
    char path[256];
    snprintf(path, sizeof path, "%s/flows_shuffled.json", tmpdir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    int order[N];
    for (int i = 0; i < N; i++)
        order[i] = i;
    rnd_state = 99;
    fprintf(f, "{\"traceEvents\": [\n");
    for (int i = 0; i < N; i++) /* call i on thread 1 + i % 3, kernel i on stream 7 + i % 2 */
        fprintf(f,
                "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
                "\"pid\": 5, \"tid\": %d, \"ts\": %d, \"dur\": 5},\n"
                "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": %d, "
                "\"ts\": %d, \"dur\": 8},\n",
                1 + i % 3, 100 + 20 * i, 7 + i % 2, 50000 + 20 * i);
    for (int side = 0; side < 2; side++) {
        for (int i = N - 1; i > 0; i--) { /* Fisher-Yates */
            int j = (int)rnd((unsigned)i + 1), x = order[i];
            order[i] = order[j];
            order[j] = x;
        }
        for (int k = 0; k < N; k++) {
            int i = order[k];
            if (side == 0)
                fprintf(f,
                        "{\"ph\": \"s\", \"id\": %d, \"pid\": 5, \"tid\": %d, \"ts\": %d, "
                        "\"cat\": \"ac2g\", \"name\": \"ac2g\"},\n",
                        i + 1, 1 + i % 3, 100 + 20 * i + 2);
            else
                fprintf(f,
                        "{\"ph\": \"f\", \"id\": %d, \"pid\": 0, \"tid\": %d, \"ts\": %d, "
                        "\"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}%s\n",
                        i + 1, 7 + i % 2, 50000 + 20 * i + 3, k + 1 < N ? "," : "");
        }
    }
    fprintf(f, "]}\n");
    fclose(f);
    for (int threads = 1; threads <= 3; threads += 2) {
        tl_trace t;
        tl_error err;
        int rc;
        free(load(path, threads, 2048, &t, &rc, &err));
        CHECK_EQ_INT(rc, 0);
        size_t linked = 0, kernels = 0;
        for (size_t i = 0; i < t.nev; i++) {
            const tl_event *e = &t.ev[i];
            if (e->cat != TL_CAT_KERNEL)
                continue;
            kernels++;
            long long k = (e->ts / 1000 - 50000) / 20;
            CHECK_EQ_INT((long long)e->corr, k + 1);
            if (e->link != TL_NONE && t.ev[e->link].ts == 1000 * (100 + 20 * k))
                linked++;
        }
        CHECK_EQ_INT((long long)kernels, N);
        CHECK_EQ_INT((long long)linked, N);
        tl_trace_free(&t);
    }
}

/* A small file is parsed by at most a thread a 512 KB part of a window of at most a 32nd of the
 * file or 1 MB: 16 or 4 threads asked for a file of a few MB, 2 parse it. */
TEST(a_small_file_is_parsed_by_at_most_a_thread_a_half_megabyte_of_window)
{
    char path[256];
    make_mb_trace(path, sizeof path);
    tl_trace t;
    tl_error err;
    int rc;
    free(load(path, 16, 0, &t, &rc, &err));
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(t.read_stats.threads, 2);
    tl_trace_free(&t);
    free(load(path, 4, 0, &t, &rc, &err));
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(t.read_stats.threads, 2);
    tl_trace_free(&t);
}

int main(void)
{
    CHECK(mkdtemp(tmpdir) != NULL);
    RUN(random_traces_read_the_same_with_any_threads);
    RUN(bad_input_gives_the_one_pass_message);
    RUN(last_window_at_and_beside_a_page_boundary);
    RUN(numbers_like_a_parts_stand_ins_read_the_same);
    RUN(a_few_megabytes_read_the_same_with_the_readers_own_parts);
    RUN(flows_kept_as_offsets_until_the_trace_needs_them_link_as_whole_flows_do);
    RUN(flows_out_of_time_order_find_their_events);
    RUN(a_small_file_is_parsed_by_at_most_a_thread_a_half_megabyte_of_window);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return test_summary();
}
