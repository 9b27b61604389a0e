/* test_json_reader.c — the streaming Chrome/Kineto/Paddle JSON reader (src/trace/json_reader.c)
 * through its entry points tl_read_json_mem, tl_read_json and tl_load.
 *
 * Every input is a small JSON text written out in the test, so the expected names, categories,
 * times (µs in the file, exact ns in the model), tracks and links are known by construction.
 * The model keeps a file's "ts" as it is (µs -> ns, no shift) and baseTimeNanoseconds in
 * wall_offset. */
#include "insight_fixture.h"
#include "testlib.h"
#include "trace/checked.h"
#include "trace/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* ---- helpers ---------------------------------------------------------------------------- */

/* Read json (a NUL-terminated string) into a fresh trace under the name "t.json". */
static int read_json(tl_trace *t, const char *json, tl_error *err)
{
    tl_trace_init(t);
    memset(err, 0, sizeof *err);
    return tl_read_json_mem(t, json, strlen(json), "t.json", err);
}

/* Index of the first event named name, or -1. */
static int find(const tl_trace *t, const char *name)
{
    for (size_t i = 0; i < t->nev; i++)
        if (!strcmp(tl_str(&t->strings, t->ev[i].name), name))
            return (int)i;
    return -1;
}

static int count_named(const tl_trace *t, const char *name)
{
    int n = 0;
    for (size_t i = 0; i < t->nev; i++)
        n += !strcmp(tl_str(&t->strings, t->ev[i].name), name);
    return n;
}

/* Returned for a name that is not there, so that the checks after it fail instead of crash. */
static const tl_event missing_ev = {.ts = INT64_MIN,
                                    .dur = -1,
                                    .corr = -1,
                                    .value = -1,
                                    .track = UINT32_MAX,
                                    .parent = -2,
                                    .link = -2,
                                    .cat = 0xffff,
                                    .flags = 0xffff};
static const tl_track missing_track = {.kind = 0xff, .pid = -99, .tid = -99, .device = -99};

/* The first event named name; a failed check (and missing_ev) when there is none. */
static const tl_event *ev(const tl_trace *t, const char *name)
{
    int k = find(t, name);
    CHECK(k >= 0);
    if (k < 0) {
        fprintf(stderr, "  (no event named \"%s\")\n", name);
        return &missing_ev;
    }
    return &t->ev[k];
}

static const tl_track *track_of(const tl_trace *t, const tl_event *e)
{
    return e->track < t->ntracks ? &t->tracks[e->track] : &missing_track;
}

static int count_tracks(const tl_trace *t, tl_track_kind kind)
{
    int n = 0;
    for (uint32_t i = 0; i < t->ntracks; i++)
        n += t->tracks[i].kind == kind;
    return n;
}

#define CHECK_PREFIX(s, prefix)                                                                    \
    do {                                                                                           \
        const char *p_ = (s);                                                                      \
        CHECK(strncmp(p_, (prefix), strlen(prefix)) == 0);                                         \
        if (strncmp(p_, (prefix), strlen(prefix)) != 0)                                            \
            fprintf(stderr, "  got \"%s\"\n", p_);                                                 \
    } while (0)

/* json must fail to read, with exactly the one-line message expected. */
#define CHECK_JSON_ERROR(json, expected)                                                           \
    do {                                                                                           \
        tl_trace t_;                                                                               \
        tl_error e_;                                                                               \
        CHECK(read_json(&t_, (json), &e_) != 0);                                                   \
        CHECK_STR(e_.msg, (expected));                                                             \
        CHECK(strchr(e_.msg, '\n') == NULL);                                                       \
        tl_trace_free(&t_);                                                                        \
    } while (0)

/* A temporary file name with the given suffix; the file exists (empty) on return. */
static void temp_path(char *path, size_t n, const char *suffix)
{
    snprintf(path, n, "/tmp/tally_test_json_reader_XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
}

static int write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

static int write_gz(const char *path, const char *data, size_t len)
{
    gzFile g = gzopen(path, "wb");
    if (!g)
        return -1;
    int w = gzwrite(g, data, (unsigned)len);
    return gzclose(g) == Z_OK && w == (int)len ? 0 : -1;
}

/* ---- 1. forms and skipping -------------------------------------------------------------- */

/* The same three events as {"traceEvents":[...]} and as a bare array: the same names, times
 * (µs * 1000), durations and tracks in both. */
TEST(object_and_bare_array_forms_give_same_events)
{
    const char *obj = "{\"traceEvents\": [\n"
                      "{\"name\": \"main\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": 0, "
                      "\"dur\": 100},\n"
                      "{\"name\": \"child\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": 10, "
                      "\"dur\": 20},\n"
                      "{\"name\": \"other\", \"ph\": \"X\", \"pid\": 1, \"tid\": 2, \"ts\": 5, "
                      "\"dur\": 50}\n"
                      "]}";
    const char *arr = "[\n"
                      "{\"name\": \"main\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": 0, "
                      "\"dur\": 100},\n"
                      "{\"name\": \"child\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": 10, "
                      "\"dur\": 20},\n"
                      "{\"name\": \"other\", \"ph\": \"X\", \"pid\": 1, \"tid\": 2, \"ts\": 5, "
                      "\"dur\": 50}\n"
                      "]";
    tl_trace a, b;
    tl_error err;
    CHECK_EQ_INT(read_json(&a, obj, &err), 0);
    CHECK_EQ_INT(read_json(&b, arr, &err), 0);
    CHECK_EQ_INT(a.nev, 3);
    CHECK_EQ_INT(b.nev, 3);
    const char *names[] = {"main", "child", "other"};
    const int64_t ts[] = {0, 10000, 5000}, dur[] = {100000, 20000, 50000}, tid[] = {1, 1, 2};
    for (int i = 0; i < 3; i++) {
        const tl_event *ea = ev(&a, names[i]), *eb = ev(&b, names[i]);
        CHECK_EQ_INT(ea->ts, ts[i]);
        CHECK_EQ_INT(eb->ts, ts[i]);
        CHECK_EQ_INT(ea->dur, dur[i]);
        CHECK_EQ_INT(eb->dur, dur[i]);
        CHECK_EQ_INT(ea->cat, eb->cat);
        CHECK_EQ_INT(track_of(&a, ea)->tid, tid[i]);
        CHECK_EQ_INT(track_of(&b, eb)->tid, tid[i]);
        CHECK_EQ_INT(track_of(&a, ea)->pid, 1);
        CHECK_EQ_INT(track_of(&b, eb)->kind, TL_TRACK_THREAD);
    }
    /* "child" (10..30) nests in "main" (0..100) on tid 1 in both */
    CHECK_EQ_INT(ev(&a, "child")->parent, find(&a, "main"));
    CHECK_EQ_INT(ev(&b, "child")->parent, find(&b, "main"));
    tl_trace_free(&a);
    tl_trace_free(&b);
}

/* A UTF-8 byte order mark before the document (Windows editors, PowerShell's Out-File) is
 * skipped, in both forms; one anywhere else, or a broken one, is an error. */
TEST(a_byte_order_mark_is_skipped)
{
    const char *docs[] = {"\xEF\xBB\xBF{\"traceEvents\": [{\"name\": \"main\", \"ph\": \"X\", "
                          "\"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 100}]}",
                          "\xEF\xBB\xBF[{\"name\": \"main\", \"ph\": \"X\", \"pid\": 1, "
                          "\"tid\": 1, \"ts\": 0, \"dur\": 100}]"};
    for (int k = 0; k < 2; k++) {
        tl_trace t;
        tl_error err;
        CHECK_EQ_INT(read_json(&t, docs[k], &err), 0);
        CHECK_EQ_INT(t.nev, 1);
        CHECK(find(&t, "main") >= 0);
        tl_trace_free(&t);
    }
    const char *bad[] = {"\xEF\xBB[]", " \xEF\xBB\xBF[]", "[\xEF\xBB\xBF]"};
    for (int k = 0; k < 3; k++) {
        tl_trace t;
        tl_error err;
        CHECK(read_json(&t, bad[k], &err) != 0);
        CHECK(err.msg[0] != 0);
        tl_trace_free(&t);
    }
}

/* Unknown top-level members (of every JSON type, with brackets and quotes inside strings),
 * unknown event fields, unknown phases (async b/e, samples, objects), Kineto's "Trace" span and
 * non-object elements of traceEvents are skipped: only the two known events remain. */
TEST(unknown_keys_fields_and_types_are_skipped)
{
    const char *json =
        "{\"otherData\": {\"a\": \"}]\\\"[{\", \"b\": [1, {\"c\": null}, [true, false]]},\n"
        " \"traceName\": \"x\", \"count\": -1.5e3, \"flag\": true, \"nothing\": null,\n"
        " \"traceEvents\": [\n"
        "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"kept1\", \"pid\": 1, \"tid\": 1,\n"
        "   \"ts\": 1, \"dur\": 2, \"extra\": {\"x\": [1, \"]\"]}, \"flow_in\": true,\n"
        "   \"args\": {\"External id\": 5, \"Input type\": [\"float\"], \"nested\": {\"y\": 1}}},\n"
        "  {\"ph\": \"b\", \"cat\": \"cpu_op\", \"name\": \"async begin\", \"id\": 3, \"pid\": 1,\n"
        "   \"tid\": 1, \"ts\": 3},\n"
        "  {\"ph\": \"e\", \"cat\": \"cpu_op\", \"name\": \"async begin\", \"id\": 3, \"pid\": 1,\n"
        "   \"tid\": 1, \"ts\": 4},\n"
        "  {\"ph\": \"P\", \"name\": \"sample\", \"pid\": 1, \"tid\": 1, \"ts\": 5},\n"
        "  {\"ph\": \"O\", \"name\": \"snapshot\", \"id\": 1, \"pid\": 1, \"tid\": 1, \"ts\": 6},\n"
        "  {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler (0)\", \"pid\": 1,\n"
        "   \"tid\": 1, \"ts\": 0, \"dur\": 100},\n"
        "  \"not an event\", 12, null, [1, {\"ph\": \"X\"}], {}, {\"ph\": \"\"},\n"
        "  {\"name\": \"kept2\", \"ph\": \"X\", \"cat\": \"cpu_op\", \"pid\": 1, \"tid\": 1,\n"
        "   \"ts\": 7, \"dur\": 1}\n"
        " ],\n"
        " \"displayTimeUnit\": \"ms\"}\n";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 2);
    CHECK_EQ_INT(ev(&t, "kept1")->ts, 1000);
    CHECK_EQ_INT(ev(&t, "kept1")->dur, 2000);
    CHECK_EQ_INT(ev(&t, "kept1")->cat, TL_CAT_OPERATOR);
    CHECK_EQ_INT(ev(&t, "kept2")->ts, 7000);
    CHECK_EQ_INT(find(&t, "PyTorch Profiler (0)"), -1);
    CHECK_EQ_INT(find(&t, "async begin"), -1);
    tl_trace_free(&t);
}

/* JSON escapes in names are decoded: \" \\ \/ \n \t, \u00e9 (2-byte UTF-8) and the surrogate
 * pair \ud83d\ude00 (U+1F600, 4 bytes). */
TEST(string_escapes_are_decoded)
{
    const char *json = "[{\"ph\": \"X\", \"name\": \"a\\\"b\\\\c\\/d\\n\\t\\u00e9\\ud83d\\ude00\","
                       " \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1}]";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 1);
    if (t.nev == 1)
        CHECK_STR(tl_str(&t.strings, t.ev[0].name), "a\"b\\c/d\n\t\xc3\xa9\xf0\x9f\x98\x80");
    tl_trace_free(&t);
}

/* ---- 2. Kineto today -------------------------------------------------------------------- */

/* One event per Kineto category; each lands in the tl_cat the model documents for it, and a
 * trace with "cat" fields is a Kineto trace. */
TEST(kineto_categories_map_to_model)
{
    const char *json =
        "{\"schemaVersion\": 1, \"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 9, \"tid\": 9, "
        "\"ts\": 10, \"dur\": 5, \"args\": {\"Input Dims\": [[64, 128], [128, 256]]}},\n"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"my range\", \"pid\": 9, "
        "\"tid\": 9, \"ts\": 1, \"dur\": 50},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 9, "
        "\"tid\": 9, \"ts\": 11, \"dur\": 1},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_driver\", \"name\": \"cuLaunchKernel\", \"pid\": 9, "
        "\"tid\": 9, \"ts\": 13, \"dur\": 1},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"cudaDeviceSynchronize\", \"pid\": 9, "
        "\"tid\": 9, \"ts\": 20, \"dur\": 1},\n"
        "{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"train.py(12): step\", "
        "\"pid\": 9, \"tid\": 9, \"ts\": 0, \"dur\": 60},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, "
        "\"ts\": 30, \"dur\": 4, \"args\": {\"device\": 0, \"stream\": 7}},\n"
        "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pageable -> Device)\", "
        "\"pid\": 0, \"tid\": 7, \"ts\": 40, \"dur\": 2, \"args\": {\"device\": 0, \"stream\": 7, "
        "\"bytes\": 1048576}},\n"
        "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoH (Device -> Pinned)\", "
        "\"pid\": 0, \"tid\": 7, \"ts\": 43, \"dur\": 2, \"args\": {\"device\": 0, \"stream\": 7, "
        "\"bytes\": 64}},\n"
        "{\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset (Device)\", \"pid\": 0, "
        "\"tid\": 7, \"ts\": 46, \"dur\": 1, \"args\": {\"device\": 0, \"stream\": 7, "
        "\"bytes\": 4096}},\n"
        "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"gpu range\", \"pid\": 0, "
        "\"tid\": 7, \"ts\": 30, \"dur\": 17, \"args\": {\"device\": 0, \"stream\": 7}},\n"
        "{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"cpu_instant_event\", \"name\": \"mark\", "
        "\"pid\": 9, \"tid\": 9, \"ts\": 25}\n"
        "]}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 12);
    CHECK_EQ_INT(t.source, TL_SRC_KINETO);
    CHECK_EQ_INT(ev(&t, "aten::mm")->cat, TL_CAT_OPERATOR);
    CHECK_STR(tl_str(&t.strings, ev(&t, "aten::mm")->args), "[[64, 128], [128, 256]]");
    CHECK_EQ_INT(ev(&t, "my range")->cat, TL_CAT_USER);
    CHECK_EQ_INT(ev(&t, "cudaLaunchKernel")->cat, TL_CAT_RUNTIME);
    CHECK_EQ_INT(ev(&t, "cuLaunchKernel")->cat, TL_CAT_DRIVER);
    CHECK_EQ_INT(ev(&t, "cudaDeviceSynchronize")->cat, TL_CAT_SYNC);
    CHECK_EQ_INT(ev(&t, "train.py(12): step")->cat, TL_CAT_PYTHON);
    CHECK_EQ_INT(ev(&t, "gemm")->cat, TL_CAT_KERNEL);
    const tl_event *h2d = ev(&t, "Memcpy HtoD (Pageable -> Device)");
    CHECK_EQ_INT(h2d->cat, TL_CAT_MEMCPY);
    CHECK_EQ_INT(h2d->copy, TL_COPY_HTOD);
    CHECK_EQ_INT(h2d->value, 1048576);
    CHECK(h2d->flags & TL_EV_PAGEABLE);
    const tl_event *d2h = ev(&t, "Memcpy DtoH (Device -> Pinned)");
    CHECK_EQ_INT(d2h->cat, TL_CAT_MEMCPY);
    CHECK_EQ_INT(d2h->copy, TL_COPY_DTOH);
    CHECK_EQ_INT(d2h->value, 64);
    CHECK(!(d2h->flags & TL_EV_PAGEABLE));
    CHECK_EQ_INT(ev(&t, "Memset (Device)")->cat, TL_CAT_MEMSET);
    CHECK_EQ_INT(ev(&t, "Memset (Device)")->value, 4096);
    CHECK_EQ_INT(ev(&t, "gpu range")->cat, TL_CAT_GPU_USER);
    CHECK_EQ_INT(ev(&t, "mark")->cat, TL_CAT_INSTANT);
    tl_trace_free(&t);
}

/* Device work goes on stream tracks: device and stream from args when given (device 1,
 * stream 13), else pid is the device and tid the stream (pid 2, tid 5). Host events stay on
 * thread tracks with their pid and tid. */
TEST(kineto_kernels_go_on_stream_tracks)
{
    const char *json =
        "{\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k_args\", \"pid\": 1, \"tid\": 13, "
        "\"ts\": 1, \"dur\": 1, \"args\": {\"device\": 1, \"stream\": 13}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k_noargs\", \"pid\": 2, \"tid\": 5, "
        "\"ts\": 1, \"dur\": 1},\n"
        "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoD (Device -> Device)\", "
        "\"pid\": 1, \"tid\": 13, \"ts\": 3, \"dur\": 1, \"args\": {\"device\": 1, "
        "\"stream\": 13}},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"host\", \"pid\": 300, \"tid\": 301, "
        "\"ts\": 0, \"dur\": 9}\n"
        "]}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    const tl_track *a = track_of(&t, ev(&t, "k_args"));
    CHECK_EQ_INT(a->kind, TL_TRACK_STREAM);
    CHECK_EQ_INT(a->device, 1);
    CHECK_EQ_INT(a->tid, 13);
    const tl_track *b = track_of(&t, ev(&t, "k_noargs"));
    CHECK_EQ_INT(b->kind, TL_TRACK_STREAM);
    CHECK_EQ_INT(b->device, 2);
    CHECK_EQ_INT(b->tid, 5);
    /* the copy on the same device and stream shares the kernel's track */
    CHECK_EQ_INT(ev(&t, "Memcpy DtoD (Device -> Device)")->track, ev(&t, "k_args")->track);
    CHECK_EQ_INT(ev(&t, "Memcpy DtoD (Device -> Device)")->copy, TL_COPY_DTOD);
    const tl_track *h = track_of(&t, ev(&t, "host"));
    CHECK_EQ_INT(h->kind, TL_TRACK_THREAD);
    CHECK_EQ_INT(h->pid, 300);
    CHECK_EQ_INT(h->tid, 301);
    CHECK_EQ_INT(h->device, -1);
    CHECK_EQ_INT(count_tracks(&t, TL_TRACK_STREAM), 2);
    tl_trace_free(&t);
}

/* Two launches (correlation 11 and 12) and their kernels, listed in the opposite order: each
 * kernel links to the launch with its correlation and each launch to its kernel. A copy links
 * to its cudaMemcpyAsync; a kernel whose correlation no launch has (99) links to nothing. */
TEST(kineto_correlation_links_launch_to_kernel)
{
    const char *json =
        "{\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k12\", \"pid\": 0, \"tid\": 7, "
        "\"ts\": 50, \"dur\": 5, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 12}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k11\", \"pid\": 0, \"tid\": 7, "
        "\"ts\": 40, \"dur\": 5, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 11}},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"launch11\", \"pid\": 9, "
        "\"tid\": 9, \"ts\": 10, \"dur\": 2, \"args\": {\"correlation\": 11}},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"launch12\", \"pid\": 9, "
        "\"tid\": 9, \"ts\": 20, \"dur\": 2, \"args\": {\"correlation\": 12}},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaMemcpyAsync\", \"pid\": 9, "
        "\"tid\": 9, \"ts\": 25, \"dur\": 2, \"args\": {\"correlation\": 13}},\n"
        "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\", "
        "\"pid\": 0, \"tid\": 7, \"ts\": 60, \"dur\": 5, \"args\": {\"device\": 0, \"stream\": 7, "
        "\"correlation\": 13, \"bytes\": 8}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"orphan\", \"pid\": 0, \"tid\": 7, "
        "\"ts\": 70, \"dur\": 5, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 99}}\n"
        "]}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK(t.finished);
    CHECK_EQ_INT(ev(&t, "k11")->corr, 11);
    CHECK_EQ_INT(ev(&t, "launch12")->corr, 12);
    CHECK_EQ_INT(ev(&t, "k11")->link, find(&t, "launch11"));
    CHECK_EQ_INT(ev(&t, "k12")->link, find(&t, "launch12"));
    CHECK_EQ_INT(ev(&t, "launch11")->link, find(&t, "k11"));
    CHECK_EQ_INT(ev(&t, "launch12")->link, find(&t, "k12"));
    CHECK_EQ_INT(ev(&t, "Memcpy HtoD (Pinned -> Device)")->link, find(&t, "cudaMemcpyAsync"));
    CHECK_EQ_INT(ev(&t, "cudaMemcpyAsync")->link, find(&t, "Memcpy HtoD (Pinned -> Device)"));
    CHECK_EQ_INT(ev(&t, "orphan")->link, TL_NONE);
    tl_trace_free(&t);
}

/* Without correlation args, ac2g flows link: flow 77 starts inside launchA (ts 10..12) and
 * ends with bp "e" at kernel kA (ts 30); flow 78 (no bp) ends at ts 40, where kB starts. Both
 * ends get the flow id as correlation and the usual links. */
TEST(kineto_ac2g_flows_link_without_correlation)
{
    const char *json =
        "{\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 5, \"tid\": 6, "
        "\"ts\": 9, \"dur\": 20},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"launchA\", \"pid\": 5, "
        "\"tid\": 6, \"ts\": 10, \"dur\": 2},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"launchB\", \"pid\": 5, "
        "\"tid\": 6, \"ts\": 14, \"dur\": 2},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"kA\", \"pid\": 0, \"tid\": 7, "
        "\"ts\": 30, \"dur\": 5},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"kB\", \"pid\": 0, \"tid\": 7, "
        "\"ts\": 40, \"dur\": 5},\n"
        "{\"ph\": \"s\", \"id\": 77, \"pid\": 5, \"tid\": 6, \"ts\": 10.5, \"cat\": \"ac2g\", "
        "\"name\": \"ac2g\"},\n"
        "{\"ph\": \"f\", \"id\": 77, \"pid\": 0, \"tid\": 7, \"ts\": 30, \"cat\": \"ac2g\", "
        "\"name\": \"ac2g\", \"bp\": \"e\"},\n"
        "{\"ph\": \"s\", \"id\": 78, \"pid\": 5, \"tid\": 6, \"ts\": 14, \"cat\": \"ac2g\", "
        "\"name\": \"ac2g\"},\n"
        "{\"ph\": \"f\", \"id\": 78, \"pid\": 0, \"tid\": 7, \"ts\": 40, \"cat\": \"ac2g\", "
        "\"name\": \"ac2g\"}\n"
        "]}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 5); /* flow events are not events of the model */
    CHECK_EQ_INT(ev(&t, "launchA")->corr, 77);
    CHECK_EQ_INT(ev(&t, "kA")->corr, 77);
    CHECK_EQ_INT(ev(&t, "launchB")->corr, 78);
    CHECK_EQ_INT(ev(&t, "kB")->corr, 78);
    CHECK_EQ_INT(ev(&t, "aten::mm")->corr, 0); /* the innermost enclosing slice got the id */
    CHECK_EQ_INT(ev(&t, "kA")->link, find(&t, "launchA"));
    CHECK_EQ_INT(ev(&t, "launchA")->link, find(&t, "kA"));
    CHECK_EQ_INT(ev(&t, "kB")->link, find(&t, "launchB"));
    CHECK_EQ_INT(ev(&t, "launchB")->link, find(&t, "kB"));
    tl_trace_free(&t);
}

/* ---- 3. Kineto of 2021 ------------------------------------------------------------------ */

/* The capitalised categories of 2021 map as today's do, and link by "correlation" the same. */
TEST(kineto_2021_capitalised_categories)
{
    const char *json =
        "{\"schemaVersion\": 1, \"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"Operator\", \"name\": \"aten::add\", \"pid\": 3, \"tid\": 3, "
        "\"ts\": 100, \"dur\": 10},\n"
        "{\"ph\": \"X\", \"cat\": \"Runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 3, "
        "\"tid\": 3, \"ts\": 101, \"dur\": 2, \"args\": {\"correlation\": 5}},\n"
        "{\"ph\": \"X\", \"cat\": \"Kernel\", \"name\": \"add_kernel\", \"pid\": 0, \"tid\": 7, "
        "\"ts\": 120, \"dur\": 3, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 5}},\n"
        "{\"ph\": \"X\", \"cat\": \"Memcpy\", \"name\": \"Memcpy HtoD (Pageable -> Device)\", "
        "\"pid\": 0, \"tid\": 7, \"ts\": 130, \"dur\": 3, \"args\": {\"device\": 0, "
        "\"stream\": 7, \"bytes\": 512}},\n"
        "{\"ph\": \"X\", \"cat\": \"Memset\", \"name\": \"Memset (Device)\", \"pid\": 0, "
        "\"tid\": 7, \"ts\": 140, \"dur\": 1, \"args\": {\"device\": 0, \"stream\": 7, "
        "\"bytes\": 256}}\n"
        "]}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(ev(&t, "aten::add")->cat, TL_CAT_OPERATOR);
    CHECK_EQ_INT(ev(&t, "cudaLaunchKernel")->cat, TL_CAT_RUNTIME);
    CHECK_EQ_INT(ev(&t, "add_kernel")->cat, TL_CAT_KERNEL);
    CHECK_EQ_INT(track_of(&t, ev(&t, "add_kernel"))->kind, TL_TRACK_STREAM);
    CHECK_EQ_INT(ev(&t, "Memcpy HtoD (Pageable -> Device)")->cat, TL_CAT_MEMCPY);
    CHECK_EQ_INT(ev(&t, "Memcpy HtoD (Pageable -> Device)")->value, 512);
    CHECK_EQ_INT(ev(&t, "Memset (Device)")->cat, TL_CAT_MEMSET);
    CHECK_EQ_INT(ev(&t, "Memset (Device)")->value, 256);
    CHECK_EQ_INT(ev(&t, "add_kernel")->link, find(&t, "cudaLaunchKernel"));
    CHECK_EQ_INT(ev(&t, "cudaLaunchKernel")->link, find(&t, "add_kernel"));
    tl_trace_free(&t);
}

/* Names decide the phase whatever the category: "ProfilerStep#5" filed under "Operator" (2021)
 * is step 5, "ProfilerStep#12" under user_annotation step 12; PyTorch's dataloader and optimizer
 * ranges are TL_CAT_DATALOADER and TL_CAT_OPTIMIZER under either category. */
TEST(kineto_step_dataloader_optimizer_names)
{
    const char *json =
        "{\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"Operator\", \"name\": \"ProfilerStep#5\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 0, \"dur\": 100},\n"
        "{\"ph\": \"X\", \"cat\": \"Operator\", \"name\": "
        "\"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": 1, \"dur\": 10},\n"
        "{\"ph\": \"X\", \"cat\": \"Operator\", \"name\": \"Optimizer.step#SGD.step\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 50, \"dur\": 10},\n"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
        "\"Optimizer.zero_grad#SGD.zero_grad\", \"pid\": 1, \"tid\": 1, \"ts\": 70, \"dur\": 5},\n"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#12\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 200, \"dur\": 100},\n"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
        "\"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 201, \"dur\": 10}\n"
        "]}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(ev(&t, "ProfilerStep#5")->cat, TL_CAT_STEP);
    CHECK_EQ_INT(ev(&t, "ProfilerStep#5")->value, 5);
    CHECK_EQ_INT(ev(&t, "ProfilerStep#12")->cat, TL_CAT_STEP);
    CHECK_EQ_INT(ev(&t, "ProfilerStep#12")->value, 12);
    CHECK_EQ_INT(ev(&t, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")->cat,
                 TL_CAT_DATALOADER);
    CHECK_EQ_INT(ev(&t, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__")->cat,
                 TL_CAT_DATALOADER);
    CHECK_EQ_INT(ev(&t, "Optimizer.step#SGD.step")->cat, TL_CAT_OPTIMIZER);
    CHECK_EQ_INT(ev(&t, "Optimizer.zero_grad#SGD.zero_grad")->cat, TL_CAT_OPTIMIZER);
    /* the dataloader range (1..11) nests in step 5 (0..100) */
    CHECK_EQ_INT(ev(&t, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")->parent,
                 find(&t, "ProfilerStep#5"));
    tl_trace_free(&t);
}

/* Was a bug: the name rule for Paddle's "ProfileStep#N" needs more than 13 characters (the test for
 * "ProfilerStep#" wraps it), so a one-digit "ProfileStep#5" filed under "Operator" stays an
 * operator while "ProfileStep#15" becomes a step. Both are steps by construction. */
TEST(profile_step_name_with_one_digit_is_a_step)
{
    const char *json =
        "[{\"ph\": \"X\", \"cat\": \"Operator\", \"name\": \"ProfileStep#5\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 0, \"dur\": 10},\n"
        " {\"ph\": \"X\", \"cat\": \"Operator\", \"name\": \"ProfileStep#15\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": 20, \"dur\": 10}]";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(ev(&t, "ProfileStep#15")->cat, TL_CAT_STEP);
    CHECK_EQ_INT(ev(&t, "ProfileStep#15")->value, 15);
    CHECK_EQ_INT(ev(&t, "ProfileStep#5")->cat, TL_CAT_STEP);
    CHECK_EQ_INT(ev(&t, "ProfileStep#5")->value, 5);
    tl_trace_free(&t);
}

/* ---- 4. time ---------------------------------------------------------------------------- */

/* "ts"/"dur" in µs become exact ns: 1.5 -> 1500; an epoch time in µs with three decimals
 * (1.7e18 ns, where a double is 256 ns apart) keeps every ns; 0.001 -> 1 ns; a 4th decimal rounds
 * half up (12.3456 -> 12346); negatives and exponents work. ts is kept as written (no shift to the
 * first event); baseTimeNanoseconds goes to wall_offset. */
TEST(timestamps_are_exact_nanoseconds)
{
    const char *json =
        "{\"baseTimeNanoseconds\": 1690000000123456789, \"traceEvents\": [\n"
        "{\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, \"ts\": 1.5, \"dur\": 0.001},\n"
        "{\"ph\": \"X\", \"name\": \"b\", \"pid\": 1, \"tid\": 2, \"ts\": 1700000000000000.123, "
        "\"dur\": 12.3456},\n"
        "{\"ph\": \"X\", \"name\": \"c\", \"pid\": 1, \"tid\": 3, \"ts\": -5.5, \"dur\": 1e1},\n"
        "{\"ph\": \"X\", \"name\": \"d\", \"pid\": 1, \"tid\": 4, \"ts\": 1000.0005, "
        "\"dur\": 2.25}\n"
        "]}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.wall_offset, 1690000000123456789LL);
    CHECK_EQ_INT(ev(&t, "a")->ts, 1500);
    CHECK_EQ_INT(ev(&t, "a")->dur, 1);
    CHECK_EQ_INT(ev(&t, "b")->ts, 1700000000000000123LL);
    CHECK_EQ_INT(ev(&t, "b")->dur, 12346);
    CHECK_EQ_INT(ev(&t, "c")->ts, -5500);
    CHECK_EQ_INT(ev(&t, "c")->dur, 10000);
    CHECK_EQ_INT(ev(&t, "d")->ts, 1000001);
    CHECK_EQ_INT(ev(&t, "d")->dur, 2250);
    int64_t t0, t1;
    tl_trace_span(&t, &t0, &t1);
    CHECK_EQ_INT(t0, -5500);
    CHECK_EQ_INT(t1, 1700000000000000123LL + 12346);
    tl_trace_free(&t);
}

/* Numbers of every shape the reader meets (signs, 1 to 21 integer digits, leading zeros,
 * decimals, exponents, values at the limits) as "ts", "dur" and a runtime call's "correlation",
 * against the rules written out here apart from the reader: µs -> ns keeps the integer digits
 * and the first three decimals exactly and rounds half up at the fourth, unless the number has
 * an exponent or so many digits that the digits before the last pass TL_TIME_MAX / 10000 (then
 * a double, rounded to the nearest ns); an integer is exact unless it has a fraction, an
 * exponent or digits before the last past (INT64_MAX - 9) / 10 (then a double, truncated and
 * saturated). Times saturate at +-TL_TIME_MAX. */
typedef struct num_parts {
    int neg, nint, nfrac, exp;
    uint64_t prefix; /* the integer digits but the last, saturating */
    uint64_t value;  /* all the integer digits, saturating */
    const char *frac;
} num_parts;

static num_parts split_number(const char *s)
{
    num_parts p = {0};
    p.neg = *s == '-';
    s += p.neg;
    for (; *s >= '0' && *s <= '9'; s++, p.nint++) {
        p.prefix = p.value;
        p.value =
            p.value > (UINT64_MAX - 9) / 10 ? UINT64_MAX : p.value * 10 + (uint64_t)(*s - '0');
    }
    if (*s == '.') {
        p.frac = ++s;
        for (; *s >= '0' && *s <= '9'; s++)
            p.nfrac++;
    }
    p.exp = *s == 'e' || *s == 'E';
    return p;
}

static int64_t clamp_time(int64_t v)
{
    return v > TL_TIME_MAX ? TL_TIME_MAX : v < -TL_TIME_MAX ? -TL_TIME_MAX : v;
}

static int64_t want_us_ns(const char *s)
{
    num_parts p = split_number(s);
    if (p.exp || p.prefix > (uint64_t)TL_TIME_MAX / 10000) {
        double d = strtod(s, NULL) * 1000.0;
        return clamp_time(tl_d_to_i64(d < 0 ? d - 0.5 : d + 0.5));
    }
    int64_t v = (int64_t)p.value * 1000;
    for (int k = 0, scale = 100; k < 3; k++, scale /= 10)
        v += k < p.nfrac ? (p.frac[k] - '0') * scale : 0;
    if (p.nfrac > 3 && p.frac[3] >= '5')
        v++;
    return clamp_time(p.neg ? -v : v);
}

static int64_t want_int(const char *s)
{
    num_parts p = split_number(s);
    if (p.exp || p.nfrac || p.prefix > (uint64_t)(INT64_MAX - 9) / 10)
        return tl_d_to_i64(strtod(s, NULL));
    return p.neg ? -(int64_t)p.value : (int64_t)p.value;
}

/* A number of a random shape into buf. */
static void random_number(char *buf, uint64_t *rng, int sign_ok)
{
    static const char *const edges[] = {"461168601842738",      "461168601842739",
                                        "4611686018427387",     "4611686018427388",
                                        "922337203685477580",   "922337203685477579",
                                        "9223372036854775807",  "9223372036854775808",
                                        "18446744073709551615", "0"};
    *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t x = *rng >> 11;
    char *o = buf;
    if (sign_ok && x % 5 == 0)
        *o++ = '-';
    if (x % 7 == 0) {
        o += sprintf(o, "%s%s", edges[(x >> 8) % 10], (x >> 12) % 2 ? "" : "9");
    } else {
        int n = 1 + (int)((x >> 8) % 21);
        for (int k = 0; k < n; k++) {
            *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
            *o++ = (char)('0' + (x % 3 == 0 ? 9 : (*rng >> 33) % 10));
        }
    }
    if ((x >> 20) % 3 == 0) {
        *o++ = '.';
        int n = 1 + (int)((x >> 24) % 7);
        for (int k = 0; k < n; k++)
            *o++ = (char)('0' + (x >> (28 + 3 * k)) % 10);
    }
    if ((x >> 50) % 10 == 0)
        o += sprintf(o, "e%s%d", (x >> 45) % 2 ? "-" : "", (int)((x >> 40) % 14));
    *o = 0;
}

TEST(numbers_of_every_shape)
{
    enum { N = 3000 };
    static char ts[N][64], dur[N][64], corr[N][64];
    uint64_t rng = 12345;
    size_t cap = (size_t)N * 400, n = 0;
    char *json = malloc(cap);
    n += (size_t)snprintf(json + n, cap - n, "{\"traceEvents\": [\n");
    for (int i = 0; i < N; i++) {
        random_number(ts[i], &rng, 1);
        random_number(dur[i], &rng, 0);
        random_number(corr[i], &rng, 1);
        /* the time on one event (its end is clamped with it), the duration on one at 0 */
        n += (size_t)snprintf(
            json + n, cap - n,
            "%s{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"n%d\",\"pid\":1,"
            "\"tid\":1,\"ts\":%s,\"dur\":0,\"args\":{\"correlation\":%s}}\n"
            ",{\"ph\":\"X\",\"name\":\"d%d\",\"pid\":1,\"tid\":2,\"ts\":0,\"dur\": "
            "%s }\n",
            i ? "," : "", i, ts[i], corr[i], i, dur[i]);
    }
    snprintf(json + n, cap - n, "]}");
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    int bad = 0;
    for (int i = 0; i < N && bad < 10; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        const tl_event *e = ev(&t, name);
        snprintf(name, sizeof name, "d%d", i);
        const tl_event *d = ev(&t, name);
        int64_t w_ts = want_us_ns(ts[i]), w_dur = want_us_ns(dur[i]), w_corr = want_int(corr[i]);
        if (e->ts != w_ts || d->dur != w_dur || e->corr != w_corr) {
            fprintf(stderr,
                    "  n%d: ts %s -> %lld (want %lld), dur %s -> %lld (want %lld), "
                    "correlation %s -> %lld (want %lld)\n",
                    i, ts[i], (long long)e->ts, (long long)w_ts, dur[i], (long long)d->dur,
                    (long long)w_dur, corr[i], (long long)e->corr, (long long)w_corr);
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    tl_trace_free(&t);
    free(json);
}

/* An X event without "dur" lasts 0 ns, and so does one with a negative "dur". */
TEST(missing_or_negative_dur_is_zero)
{
    const char *json =
        "[{\"ph\": \"X\", \"name\": \"nodur\", \"pid\": 1, \"tid\": 1, \"ts\": 10},\n"
        " {\"ph\": \"X\", \"name\": \"negdur\", \"pid\": 1, \"tid\": 1, \"ts\": 20, "
        "\"dur\": -3}]";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 2);
    CHECK_EQ_INT(ev(&t, "nodur")->ts, 10000);
    CHECK_EQ_INT(ev(&t, "nodur")->dur, 0);
    CHECK_EQ_INT(ev(&t, "negdur")->dur, 0);
    CHECK_EQ_INT(t.negative_durs, 1); /* counted, and said (tl_trace_warnings) */
    CHECK_EQ_INT(t.unmatched_ends, 0);
    tl_trace_free(&t);
}

/* Times past the model's range (+-2^62 ns, 146 years) are clamped, and counted (said by
 * tl_trace_warnings): a ts of 1e400 us, a dur of 1e23 us; an ordinary event is not counted. */
TEST(times_out_of_range_are_clamped_and_counted)
{
    const char *json =
        "[{\"ph\": \"X\", \"name\": \"far\", \"pid\": 1, \"tid\": 1, \"ts\": 1e400, \"dur\": 1},\n"
        " {\"ph\": \"X\", \"name\": \"long\", \"pid\": 1, \"tid\": 1, \"ts\": 5, "
        "\"dur\": 99999999999999999999999},\n"
        " {\"ph\": \"X\", \"name\": \"fine\", \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": 3}]";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 3);
    CHECK_EQ_INT(ev(&t, "far")->ts, TL_TIME_MAX);
    CHECK_EQ_INT(ev(&t, "long")->ts + ev(&t, "long")->dur, TL_TIME_MAX);
    CHECK_EQ_INT(ev(&t, "fine")->dur, 3000);
    CHECK_EQ_INT(t.clamped_times, 2);
    tl_trace_free(&t);
}

/* ---- 5. phases -------------------------------------------------------------------------- */

/* B outer@10, B inner@20, E@30, E@40 on one thread: inner lasts 10 µs and nests in outer (30
 * µs); a pair on another thread in between (B@25, E@27) does not disturb them. */
TEST(begin_end_pairs_nest)
{
    const char *json = "{\"traceEvents\": [\n"
                       "{\"name\": \"outer\", \"ph\": \"B\", \"pid\": 1, \"tid\": 1, \"ts\": 10},\n"
                       "{\"name\": \"inner\", \"ph\": \"B\", \"pid\": 1, \"tid\": 1, \"ts\": 20},\n"
                       "{\"name\": \"other\", \"ph\": \"B\", \"pid\": 1, \"tid\": 2, \"ts\": 25},\n"
                       "{\"ph\": \"E\", \"pid\": 1, \"tid\": 2, \"ts\": 27},\n"
                       "{\"ph\": \"E\", \"pid\": 1, \"tid\": 1, \"ts\": 30},\n"
                       "{\"ph\": \"E\", \"pid\": 1, \"tid\": 1, \"ts\": 40.5}\n"
                       "]}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 3); /* E events are not events of their own */
    CHECK_EQ_INT(ev(&t, "outer")->ts, 10000);
    CHECK_EQ_INT(ev(&t, "outer")->dur, 30500);
    CHECK_EQ_INT(ev(&t, "inner")->ts, 20000);
    CHECK_EQ_INT(ev(&t, "inner")->dur, 10000);
    CHECK_EQ_INT(ev(&t, "other")->dur, 2000);
    CHECK_EQ_INT(ev(&t, "inner")->parent, find(&t, "outer"));
    CHECK_EQ_INT(ev(&t, "inner")->depth, 1);
    CHECK_EQ_INT(ev(&t, "outer")->parent, TL_NONE);
    CHECK_EQ_INT(ev(&t, "other")->parent, TL_NONE);
    CHECK(!(ev(&t, "outer")->flags & (TL_EV_UNCLOSED | TL_EV_INSTANT)));
    CHECK_EQ_INT(t.unclosed, 0);
    tl_trace_free(&t);
}

/* As the reader documents: an E with no open B on its track is ignored; a B never ended is
 * closed at the trace's last time (here the end of "after", 50 + 5 µs) and flagged unclosed. */
TEST(unmatched_end_and_unclosed_begin)
{
    const char *json =
        "{\"traceEvents\": [\n"
        "{\"name\": \"unclosed\", \"ph\": \"B\", \"pid\": 1, \"tid\": 2, \"ts\": 15},\n"
        "{\"ph\": \"E\", \"pid\": 1, \"tid\": 3, \"ts\": 16},\n"
        "{\"name\": \"after\", \"ph\": \"X\", \"pid\": 1, \"tid\": 2, \"ts\": 50, "
        "\"dur\": 5}\n"
        "]}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 2);
    const tl_event *u = ev(&t, "unclosed");
    CHECK_EQ_INT(u->ts, 15000);
    CHECK_EQ_INT(u->dur, 55000 - 15000);
    CHECK(u->flags & TL_EV_UNCLOSED);
    CHECK_EQ_INT(t.open_ranges, 1);
    CHECK(!(ev(&t, "after")->flags & TL_EV_UNCLOSED));
    CHECK_EQ_INT(ev(&t, "after")->parent, find(&t, "unclosed"));
    tl_trace_free(&t);
}

/* Instants ('i' and 'I', thread scope) are instant events of 0 ns; a global-scope instant
 * ("s": "g", Kineto's "Record Window End") is dropped. */
TEST(instants)
{
    const char *json =
        "[{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"cpu_instant_event\", \"name\": \"small i\", "
        "\"pid\": 7, \"tid\": 8, \"ts\": 12.5},\n"
        " {\"ph\": \"I\", \"cat\": \"cpu_instant_event\", \"name\": \"big I\", \"pid\": 7, "
        "\"tid\": 8, \"ts\": 13},\n"
        " {\"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", "
        "\"tid\": \"\", \"ts\": 99}]";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 2);
    const tl_event *a = ev(&t, "small i"), *b = ev(&t, "big I");
    CHECK_EQ_INT(a->ts, 12500);
    CHECK_EQ_INT(a->dur, 0);
    CHECK(a->flags & TL_EV_INSTANT);
    CHECK_EQ_INT(a->cat, TL_CAT_INSTANT);
    CHECK_EQ_INT(b->ts, 13000);
    CHECK(b->flags & TL_EV_INSTANT);
    CHECK_EQ_INT(track_of(&t, a)->tid, 8);
    CHECK_EQ_INT(find(&t, "Record Window End"), -1);
    tl_trace_free(&t);
}

/* A counter with two numeric args is two events "mem allocated" and "mem reserved" with the
 * values as read (1.5); a single arg named like the counter keeps the name; string and boolean
 * args are not values. A value of any size keeps every digit (3e-4 was 0 in milli-units). */
TEST(counters_one_event_per_key)
{
    const char *json =
        "[{\"name\": \"mem\", \"ph\": \"C\", \"pid\": 7, \"tid\": 8, \"ts\": 14, "
        "\"args\": {\"allocated\": 1.5, \"unit\": \"GB\", \"ok\": true, \"reserved\": 2}},\n"
        " {\"name\": \"loss\", \"ph\": \"C\", \"pid\": 7, \"ts\": 20, \"args\": {\"loss\": "
        "-0.25}}]";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 3);
    const tl_event *a = ev(&t, "mem allocated"), *r = ev(&t, "mem reserved"), *l = ev(&t, "loss");
    CHECK_EQ_INT(a->cat, TL_CAT_COUNTER);
    CHECK(tl_counter_value(a) == 1.5);
    CHECK_EQ_INT(a->ts, 14000);
    CHECK(a->flags & TL_EV_INSTANT);
    CHECK_EQ_INT(r->cat, TL_CAT_COUNTER);
    CHECK(tl_counter_value(r) == 2.0);
    CHECK_EQ_INT(l->cat, TL_CAT_COUNTER);
    CHECK(tl_counter_value(l) == -0.25);
    CHECK_EQ_INT(track_of(&t, a)->pid, 7);
    tl_trace_free(&t);
    const char *tiny = "[{\"name\": \"lr\", \"ph\": \"C\", \"ts\": 1, \"args\": {\"lr\": 3e-4}},"
                       " {\"name\": \"x\", \"ph\": \"C\", \"ts\": 2, \"args\": {\"x\": 1e300}}]";
    CHECK_EQ_INT(read_json(&t, tiny, &err), 0);
    CHECK(tl_counter_value(ev(&t, "lr")) == 3e-4);
    CHECK(tl_counter_value(ev(&t, "x")) == 1e300);
    tl_trace_free(&t);
}

/* Was a bug: counter values are only taken when "ph" came before "args" in the event; JSON objects
 * are unordered, and a writer that sorts keys (json.dumps(sort_keys=True)) puts "args" first.
 * This counter is the same as "mem" above with its keys sorted: two events by construction. */
TEST(counter_with_args_before_ph)
{
    const char *json = "[{\"args\": {\"allocated\": 1.5, \"reserved\": 2}, \"name\": \"mem\", "
                       "\"ph\": \"C\", \"pid\": 7, \"tid\": 8, \"ts\": 14}]";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 2);
    CHECK(tl_counter_value(ev(&t, "mem allocated")) == 1.5);
    CHECK(tl_counter_value(ev(&t, "mem reserved")) == 2.0);
    tl_trace_free(&t);
}

/* An 'M' thread_name names the thread track of (pid, tid), whether it comes before or after the
 * thread's events; process_name and sort indexes add no events. */
TEST(thread_name_metadata_names_track)
{
    const char *json =
        "[{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 7, \"args\": {\"name\": "
        "\"trainer\"}},\n"
        " {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 7, \"tid\": 8, "
        "\"args\": {\"name\": \"worker \\u00e9\"}},\n"
        " {\"ph\": \"X\", \"name\": \"op8\", \"pid\": 7, \"tid\": 8, \"ts\": 1, \"dur\": 1},\n"
        " {\"ph\": \"X\", \"name\": \"op9\", \"pid\": 7, \"tid\": 9, \"ts\": 1, \"dur\": 1},\n"
        " {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 7, \"tid\": 9, "
        "\"args\": {\"name\": \"late name\"}},\n"
        " {\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": 7, \"tid\": 9, "
        "\"args\": {\"sort_index\": 3}}]";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 2);
    CHECK_STR(tl_str(&t.strings, track_of(&t, ev(&t, "op8"))->name), "worker \xc3\xa9");
    CHECK_STR(tl_str(&t.strings, track_of(&t, ev(&t, "op9"))->name), "late name");
    tl_trace_free(&t);
}

/* ---- 6. memory, devices, distributed ---------------------------------------------------- */

/* "[memory]" instants are TL_CAT_MEMORY with their Bytes (negative for a free), device memory
 * flagged when "Device Type" is not 0 (CPU). */
TEST(memory_instants)
{
    const char *json =
        "[{\"name\": \"[memory]\", \"ph\": \"i\", \"s\": \"t\", \"cat\": \"cpu_instant_event\", "
        "\"pid\": 7, \"tid\": 8, \"ts\": 13, \"args\": {\"Addr\": 1234, \"Bytes\": 512, "
        "\"Total Allocated\": 512, \"Device Type\": 1, \"Device Id\": 0}},\n"
        " {\"name\": \"[memory]\", \"ph\": \"i\", \"s\": \"t\", \"pid\": 7, \"tid\": 8, "
        "\"ts\": 20, \"args\": {\"Addr\": 99, \"Bytes\": -256, \"Device Type\": 0, "
        "\"Device Id\": -1}}]";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 2);
    CHECK_EQ_INT(count_named(&t, "[memory]"), 2);
    if (t.nev == 2) {
        const tl_event *a = &t.ev[0], *f = &t.ev[1]; /* one thread: sorted by ts */
        CHECK_EQ_INT(a->ts, 13000);
        CHECK_EQ_INT(a->cat, TL_CAT_MEMORY);
        CHECK_EQ_INT(a->value, 512);
        CHECK(a->flags & TL_EV_MEM_DEVICE);
        CHECK(a->flags & TL_EV_INSTANT);
        CHECK_EQ_INT(a->dur, 0);
        CHECK_EQ_INT(f->ts, 20000);
        CHECK_EQ_INT(f->cat, TL_CAT_MEMORY);
        CHECK_EQ_INT(f->value, -256);
        CHECK(!(f->flags & TL_EV_MEM_DEVICE));
    }
    tl_trace_free(&t);
}

/* deviceProperties fill t->devices (name, memory, SMs as numSms or Paddle's smCount, compute
 * capability); unknown device keys are skipped. distributedInfo gives rank and world size. */
TEST(device_properties_and_distributed_info)
{
    const char *json =
        "{\"deviceProperties\": [\n"
        "  {\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85031714816, "
        "\"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132, \"warpSize\": 32, "
        "\"maxThreadsPerBlock\": [1024], \"uuid\": {\"x\": 1}},\n"
        "  {\"id\": 1, \"name\": \"Tesla V100-SXM2-32GB\", \"totalGlobalMem\": 34089730048, "
        "\"computeMajor\": 7, \"computeMinor\": 0, \"smCount\": 80}\n"
        " ],\n"
        " \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3, \"world_size\": 8, "
        "\"pg_count\": 2, \"nccl_version\": \"2.17.1\"},\n"
        " \"traceEvents\": []}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 0);
    CHECK_EQ_INT(t.ndevices, 2);
    if (t.ndevices == 2) {
        const tl_device *a = &t.devices[0], *b = &t.devices[1];
        CHECK_EQ_INT(a->id, 0);
        CHECK_STR(tl_str(&t.strings, a->name), "NVIDIA H100 80GB HBM3");
        CHECK_EQ_INT(a->memory, 85031714816LL);
        CHECK_EQ_INT(a->sm_count, 132);
        CHECK_EQ_INT(a->cc_major, 9);
        CHECK_EQ_INT(a->cc_minor, 0);
        CHECK_EQ_INT(b->id, 1);
        CHECK_STR(tl_str(&t.strings, b->name), "Tesla V100-SXM2-32GB");
        CHECK_EQ_INT(b->memory, 34089730048LL);
        CHECK_EQ_INT(b->sm_count, 80);
        CHECK_EQ_INT(b->cc_major, 7);
    }
    CHECK_EQ_INT(t.rank, 3);
    CHECK_EQ_INT(t.world_size, 8);
    CHECK_STR(t.backend, "nccl");
    CHECK_STR(t.nccl_version, "2.17.1");
    tl_trace_free(&t);

    /* without distributedInfo the rank stays unknown */
    CHECK_EQ_INT(read_json(&t, "{\"traceEvents\": []}", &err), 0);
    CHECK_EQ_INT(t.rank, -1);
    CHECK_EQ_INT(t.world_size, 0);
    CHECK_STR(t.backend, "");
    CHECK_EQ_INT(t.ndevices, 0);
    tl_trace_free(&t);

    /* a backend longer than the field is cut, not overrun */
    CHECK_EQ_INT(read_json(&t,
                           "{\"distributedInfo\": {\"backend\": \"a-backend-name-of-forty-"
                           "characters-long!!\"}, \"traceEvents\": []}",
                           &err),
                 0);
    CHECK_EQ_INT(strlen(t.backend), sizeof t.backend - 1);
    CHECK(!strncmp(t.backend, "a-backend-name-", sizeof t.backend - 1));
    tl_trace_free(&t);
}

/* ---- 7. Paddle -------------------------------------------------------------------------- */

/* A Paddle trace (string schemaVersion) has the duration suffix "[12.345 us]" / "[10.500 ms]"
 * / "[3 ns]" cut from names; a bracket that is not a duration stays. Paddle's categories map,
 * its step is step 2, and "correlation id" links its launch to its kernel on stream 13. */
TEST(paddle_duration_suffixes_are_stripped)
{
    const char *json =
        "{\n"
        "  \"schemaVersion\": \"1.0.2\",\n"
        "  \"traceEvents\": [\n"
        "  {\"name\": \"ProfileStep#2[10.500 ms]\", \"pid\": 1234, \"tid\": \"5678\", "
        "\"ts\": 1000, \"dur\": 10500, \"ph\": \"X\", \"cat\": \"ProfileStep\"},\n"
        "  {\"name\": \"matmul[12.345 us]\", \"pid\": 1234, \"tid\": \"5678\", \"ts\": 1100, "
        "\"dur\": 12.345, \"ph\": \"X\", \"cat\": \"Operator\"},\n"
        "  {\"name\": \"matmul compute[3 ns]\", \"pid\": 1234, \"tid\": \"5678\", \"ts\": 1101, "
        "\"dur\": 0.003, \"ph\": \"X\", \"cat\": \"OperatorInner\"},\n"
        "  {\"name\": \"slice[0:3]\", \"pid\": 1234, \"tid\": \"5678\", \"ts\": 1200, "
        "\"dur\": 1, \"ph\": \"X\", \"cat\": \"Operator\"},\n"
        "  {\"name\": \"cudaLaunchKernel[5.1 us]\", \"pid\": 1234, \"tid\": \"5678\", "
        "\"ts\": 1300, \"dur\": 5.1, \"ph\": \"X\", \"cat\": \"CudaRuntime\", "
        "\"args\": {\"correlation id\": 9}},\n"
        "  {\"name\": \"volta_sgemm[800.0 us]\", \"pid\": 0, \"tid\": \"stream 13\", "
        "\"ts\": 1310, \"dur\": 800, \"ph\": \"X\", \"cat\": \"Kernel\", "
        "\"args\": {\"device\": 0, \"stream\": 13, \"correlation id\": 9}},\n"
        "  {\"name\": \"Allocate\", \"pid\": 1234, \"tid\": \"5678\", \"ts\": 1105, \"ph\": \"i\", "
        "\"s\": \"t\", \"cat\": \"Allocate\", \"args\": {\"place\": \"Place(gpu:0)\", "
        "\"increase_bytes\": 4096}}\n"
        "  ]\n"
        "}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.source, TL_SRC_PADDLE);
    CHECK_EQ_INT(t.nev, 7);
    CHECK_EQ_INT(ev(&t, "ProfileStep#2")->cat, TL_CAT_STEP);
    CHECK_EQ_INT(ev(&t, "ProfileStep#2")->value, 2);
    CHECK_EQ_INT(ev(&t, "ProfileStep#2")->dur, 10500000);
    CHECK_EQ_INT(ev(&t, "matmul")->cat, TL_CAT_OPERATOR);
    CHECK_EQ_INT(ev(&t, "matmul")->dur, 12345);
    CHECK_EQ_INT(ev(&t, "matmul compute")->cat, TL_CAT_OPERATOR_INNER);
    CHECK_EQ_INT(ev(&t, "slice[0:3]")->cat, TL_CAT_OPERATOR);
    CHECK_EQ_INT(ev(&t, "cudaLaunchKernel")->cat, TL_CAT_RUNTIME);
    CHECK_EQ_INT(ev(&t, "volta_sgemm")->cat, TL_CAT_KERNEL);
    CHECK_EQ_INT(track_of(&t, ev(&t, "volta_sgemm"))->tid, 13);
    CHECK_EQ_INT(track_of(&t, ev(&t, "matmul"))->tid, 5678);
    CHECK_EQ_INT(ev(&t, "volta_sgemm")->link, find(&t, "cudaLaunchKernel"));
    CHECK_EQ_INT(ev(&t, "Allocate")->cat, TL_CAT_MEMORY);
    CHECK_EQ_INT(ev(&t, "Allocate")->value, 4096);
    CHECK(ev(&t, "Allocate")->flags & TL_EV_MEM_DEVICE);
    CHECK_EQ_INT(find(&t, "matmul[12.345 us]"), -1);
    tl_trace_free(&t);
}

/* The same bracketed name in a Kineto trace (numeric schemaVersion) is left as written. */
TEST(non_paddle_names_keep_duration_brackets)
{
    const char *json = "{\"schemaVersion\": 1, \"traceEvents\": [{\"name\": \"matmul[12.345 us]\", "
                       "\"ph\": \"X\", \"cat\": \"cpu_op\", \"pid\": 1, \"tid\": 1, \"ts\": 1, "
                       "\"dur\": 1}]}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK(find(&t, "matmul[12.345 us]") >= 0);
    CHECK_EQ_INT(t.source, TL_SRC_KINETO);
    tl_trace_free(&t);
}

/* ---- 8. PyTorch without Kineto ---------------------------------------------------------- */

/* The legacy exporter writes a bare array without "cat" and with pid "CPU functions": its
 * spans are operators and the trace is TL_SRC_TORCH_LEGACY. A plain Chrome trace without
 * "cat" has user ranges and is TL_SRC_CHROME. */
TEST(legacy_exporter_ops_are_operators)
{
    const char *legacy =
        "[{\"name\": \"aten::add\", \"ph\": \"X\", \"ts\": 100.5, \"dur\": 10.25, \"tid\": 1, "
        "\"pid\": \"CPU functions\", \"args\": {}},\n"
        " {\"name\": \"aten::mul\", \"ph\": \"X\", \"ts\": 112, \"dur\": 3, \"tid\": 1, "
        "\"pid\": \"CPU functions\", \"args\": {}}]";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, legacy, &err), 0);
    CHECK_EQ_INT(t.source, TL_SRC_TORCH_LEGACY);
    CHECK_EQ_INT(t.nev, 2);
    CHECK_EQ_INT(ev(&t, "aten::add")->cat, TL_CAT_OPERATOR);
    CHECK_EQ_INT(ev(&t, "aten::add")->ts, 100500);
    CHECK_EQ_INT(ev(&t, "aten::add")->dur, 10250);
    CHECK_EQ_INT(ev(&t, "aten::mul")->cat, TL_CAT_OPERATOR);
    CHECK_EQ_INT(ev(&t, "aten::add")->track, ev(&t, "aten::mul")->track);
    CHECK_EQ_INT(track_of(&t, ev(&t, "aten::add"))->kind, TL_TRACK_THREAD);
    CHECK_EQ_INT(track_of(&t, ev(&t, "aten::add"))->tid, 1);
    tl_trace_free(&t);

    const char *plain = "[{\"name\": \"work\", \"ph\": \"X\", \"ts\": 1, \"dur\": 2, \"tid\": 1, "
                        "\"pid\": 1}]";
    CHECK_EQ_INT(read_json(&t, plain, &err), 0);
    CHECK_EQ_INT(t.source, TL_SRC_CHROME);
    CHECK_EQ_INT(ev(&t, "work")->cat, TL_CAT_USER);
    tl_trace_free(&t);
}

/* ---- 9. errors -------------------------------------------------------------------------- */

/* Line 2 is {"ph": "X", "ts": 1 "dur": 2}: the '"' of "dur" (column 21) is where a ',' was
 * expected. */
TEST(error_missing_comma_between_fields)
{
    CHECK_JSON_ERROR("{\"traceEvents\": [\n"
                     "{\"ph\": \"X\", \"ts\": 1 \"dur\": 2}\n"
                     "]}",
                     "t.json:2:21: expected ',' or '}' after an event field, found '\"'");
}

/* The second event starts line 3 with no ',' after the first. */
TEST(error_missing_comma_between_events)
{
    CHECK_JSON_ERROR("{\"traceEvents\": [\n"
                     "{\"ph\": \"X\", \"ts\": 1}\n"
                     "{\"ph\": \"X\", \"ts\": 2}\n"
                     "]}",
                     "t.json:3:1: expected ',' or ']' between events, found '{'");
}

/* Line 1 is {"traceEvents" []}: column 16 holds '[' where ':' belongs. */
TEST(error_missing_colon)
{
    CHECK_JSON_ERROR("{\"traceEvents\" []}", "t.json:1:16: expected ':' after a key, found '['");
}

/* Line 2 is   {"ph": "X", "ts": nul}: the bad literal starts at column 21. */
TEST(error_bad_literal_in_known_field)
{
    CHECK_JSON_ERROR("[\n"
                     "  {\"ph\": \"X\", \"ts\": nul}\n"
                     "]",
                     "t.json:2:21: expected a number (ts), found 'n'");
}

/* Was a bug: a bad literal in a skipped field is reported after the token, not at it. Line 2 is
 *   {"ph": "X", "ts": 1, "ok": tru}: "tru" starts at column 30; the reader points at the '}'
 * in column 33 and says it found '}'. */
TEST(error_bad_literal_in_skipped_field)
{
    CHECK_JSON_ERROR("[\n"
                     "  {\"ph\": \"X\", \"ts\": 1, \"ok\": tru}\n"
                     "]",
                     "t.json:2:30: expected a value (string, number, object, array, true, false "
                     "or null), found 't'");
}

/* The input ends inside the string opened at line 2, column 21: the error points at the end. */
TEST(error_unterminated_string)
{
    CHECK_JSON_ERROR("{\"traceEvents\": [\n"
                     "{\"ph\": \"X\", \"name\": \"abc",
                     "t.json:2:25: expected '\"' closing the string, found end of input");
}

/* Truncated after the ',' at the end of line 2 (21 characters): the next event was expected at
 * column 22. A file cut inside a number (the end of input at line 1, column 22) and one cut
 * after the last ']' of traceEvents (the closing '}' missing) fail too. */
TEST(error_truncated_file)
{
    CHECK_JSON_ERROR("{\"traceEvents\": [\n"
                     "{\"ph\": \"X\", \"ts\": 1},",
                     "t.json:2:22: expected an event, found end of input");
    CHECK_JSON_ERROR("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1}]",
                     "t.json:1:39: expected ',' or '}', found end of input");
    tl_trace t;
    tl_error err;
    CHECK(read_json(&t, "[{\"ph\": \"X\", \"ts\": 12", &err) != 0);
    CHECK_PREFIX(err.msg, "t.json:1:22: expected a number (ts), found end of input");
    tl_trace_free(&t);
}

/* A trace that is not an object or array, and an element of traceEvents that is not valid JSON
 * (the bareword oops): errors. (A valid non-object element is skipped: see
 * unknown_keys_fields_and_types_are_skipped.) */
TEST(error_not_an_object)
{
    CHECK_JSON_ERROR("\"trace\"",
                     "t.json:1:1: expected '{' or '[' at the start of a trace, found '\"'");
    CHECK_JSON_ERROR("\n  42",
                     "t.json:2:3: expected '{' or '[' at the start of a trace, found '4'");
    tl_trace t;
    tl_error err;
    CHECK(read_json(&t, "[{\"ph\": \"X\", \"ts\": 1},\n oops]", &err) != 0);
    CHECK_PREFIX(err.msg, "t.json:2:");
    CHECK(strstr(err.msg, "expected a value") != NULL);
    CHECK(strchr(err.msg, '\n') == NULL);
    tl_trace_free(&t);
}

/* Only whitespace may follow the trace: a second '}' on line 2, column 1, is an error. */
TEST(error_garbage_after_end)
{
    CHECK_JSON_ERROR("{\"traceEvents\": []}\n"
                     "}",
                     "t.json:2:1: expected end of input after the trace, found '}'");
    CHECK_JSON_ERROR("[] x", "t.json:1:4: expected end of input after the trace, found 'x'");
    /* trailing whitespace is fine */
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, "[]\n \t\r\n", &err), 0);
    tl_trace_free(&t);
}

/* \q is not a JSON escape; it is at line 1, column 14 of [{"name": "a\qb", ...}]. */
TEST(error_bad_escape)
{
    tl_trace t;
    tl_error err;
    CHECK(read_json(&t, "[{\"name\": \"a\\qb\", \"ph\": \"X\", \"ts\": 1}]", &err) != 0);
    CHECK_PREFIX(err.msg, "t.json:1:14: expected a valid escape");
    CHECK(strchr(err.msg, '\n') == NULL);
    tl_trace_free(&t);
}

/* Arrays the reader skips (or keeps as text, "Input Dims") of every shape (nested arrays,
 * integers, strings with and without escapes, objects, fractions, literals) are read, and bad
 * ones fail where JSON says they go wrong, whether the reader's one-loop skip of the common
 * shapes takes them or the general one. Each is the value of args "x" from line 2, column 49
 * (nine columns on for "Input Dims", whose text becomes the event's args string as written). */
TEST(skipped_arrays_of_every_shape)
{
    static const struct {
        const char *array;
        int bad_at;          /* the error's column within the array, from 1; 0 = good */
        const char *message; /* what the error says was expected and found */
    } cases[] = {
        {"[]", 0, NULL},
        {"[ ]", 0, NULL},
        {"[[]]", 0, NULL},
        {"[[], [1, 2]]", 0, NULL},
        {"[ [ 1 ,2 ] , [ ] ]", 0, NULL},
        {"[\n  [4096, 1],\n  []\n]", 0, NULL},
        {"[\"a\", \"b\\\"c\"]", 0, NULL},
        {"[\"\", \"[1, 2]\", \"]\"]", 0, NULL},
        {"[1.5, 2]", 0, NULL},
        {"[1e5, -0]", 0, NULL},
        {"[-1, -2]", 0, NULL},
        {"[true, null, false]", 0, NULL},
        {"[{\"a\": 1}, [2]]", 0, NULL},
        {"[1, [2, [3, [4]]], \"x\"]", 0, NULL},
        {"[\"a\\q\"]", 5, "a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX), found 'q'"},
        {"[-]", 2, "a value (string, number, object, array, true, false or null), found '-'"},
        {"[1,]", 4, "a value, found ']'"},
        {"[,1]", 2, "a value, found ','"},
        {"[1 2]", 4, "',' or ']' in an array, found '2'"},
        {"[\"a\" \"b\"]", 6, "',' or ']' in an array, found '\"'"},
        {"[[1]", 5, "',' or ']' in an array, found '}'"},
        {"[tru]", 2, "a value (string, number, object, array, true, false or null), found 't'"},
        /* the one-loop shapes (integers, plain strings, one level of arrays) at their edges */
        {"[[1, 2], \"s\", -3, []]", 0, NULL},
        {"[[[]]]", 0, NULL},
        {"[ [ ], 3 ]", 0, NULL},
        {"[\"a\", [\"b\\\"c\"], 1]", 0, NULL},
        {"[[1,], 2]", 5, "a value, found ']'"},
        {"[[1 2]]", 5, "',' or ']' in an array, found '2'"},
        {"[[-], 1]", 3, "a value (string, number, object, array, true, false or null), found '-'"},
        {"[1.]", 2, "a value (string, number, object, array, true, false or null), found '1'"},
        {"[[1], [2]", 10, "',' or ']' in an array, found '}'"},
        {"[[1]x]", 5, "',' or ']' in an array, found 'x'"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int dims = 0; dims < 2; dims++) {
            char doc[512], want[256];
            snprintf(doc, sizeof doc,
                     "[\n{\"ph\": \"X\", \"name\": \"e\", \"ts\": 1, \"args\": {\"%s\": %s}}\n]\n",
                     dims ? "Input Dims" : "x", cases[c].array);
            tl_trace t;
            tl_error err;
            int rc = read_json(&t, doc, &err);
            if (!cases[c].bad_at) {
                CHECK_EQ_INT(rc, 0);
                CHECK_EQ_INT(t.nev, 1);
                if (dims && t.nev == 1)
                    CHECK_STR(tl_str(&t.strings, t.ev[0].args), cases[c].array);
            } else {
                CHECK(rc != 0);
                int line = 2, col = 48 + (dims ? 9 : 0) + cases[c].bad_at;
                for (const char *p = cases[c].array; *p; p++)
                    if (*p == '\n')
                        line++;
                snprintf(want, sizeof want, "t.json:%d:%d: expected %s", line, col,
                         cases[c].message);
                CHECK_STR(err.msg, want);
            }
            tl_trace_free(&t);
        }
    }
    /* nested 100 deep */
    char doc[1024];
    size_t n = (size_t)snprintf(doc, sizeof doc, "[{\"ph\": \"X\", \"ts\": 1, \"args\": {\"x\": ");
    for (int i = 0; i < 100; i++)
        doc[n++] = '[';
    doc[n++] = '7';
    for (int i = 0; i < 100; i++)
        doc[n++] = ']';
    snprintf(doc + n, sizeof doc - n, "}}]");
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, doc, &err), 0);
    CHECK_EQ_INT(t.nev, 1);
    tl_trace_free(&t);
    doc[n - 1] = '}'; /* one ']' short: the message points at the '}' */
    CHECK(read_json(&t, doc, &err) != 0);
    CHECK_STR(err.msg, "t.json:1:237: expected ',' or ']' in an array, found '}'");
    tl_trace_free(&t);
}

/* Empty input, and input of whitespace only (ends at line 2, column 2), are errors; an empty
 * file through tl_load says so. */
TEST(error_empty_input)
{
    CHECK_JSON_ERROR("", "t.json:1:1: expected '{' or '[', found end of input");
    CHECK_JSON_ERROR("  \n ", "t.json:2:2: expected '{' or '[', found end of input");
    char path[64];
    temp_path(path, sizeof path, ".json");
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {0};
    CHECK(tl_load(&t, path, 0, &err) != 0);
    CHECK_PREFIX(err.msg, path);
    CHECK(strstr(err.msg, "empty") != NULL);
    tl_trace_free(&t);
    unlink(path);
}

/* ---- files: gzip and the streaming buffer ----------------------------------------------- */

static const char *const gz_doc =
    "{\"traceEvents\": [\n"
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 2, "
    "\"ts\": 10.25, \"dur\": 5},\n"
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
    "\"tid\": 2, \"ts\": 11, \"dur\": 1, \"args\": {\"correlation\": 4}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, "
    "\"ts\": 20, \"dur\": 3.5, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": 4}}\n"
    "]}\n";

/* The same document gzipped (with zlib's gzopen) and read from a file, by tl_read_json and by
 * tl_load, gives the events it gives from memory. */
TEST(gzip_file_reads_like_plain)
{
    char path[64];
    temp_path(path, sizeof path, ".json.gz");
    CHECK_EQ_INT(write_gz(path, gz_doc, strlen(gz_doc)), 0);
    tl_trace m, g, l;
    tl_error err;
    CHECK_EQ_INT(read_json(&m, gz_doc, &err), 0);
    tl_trace_init(&g);
    CHECK_EQ_INT(tl_read_json(&g, path, 0, &err), 0);
    tl_trace_init(&l);
    CHECK_EQ_INT(tl_load(&l, path, 0, &err), 0);
    CHECK_EQ_INT(m.nev, 3);
    CHECK_EQ_INT(g.nev, 3);
    CHECK_EQ_INT(l.nev, 3);
    const char *names[] = {"aten::mm", "cudaLaunchKernel", "gemm"};
    const int64_t ts[] = {10250, 11000, 20000}, dur[] = {5000, 1000, 3500};
    const int cats[] = {TL_CAT_OPERATOR, TL_CAT_RUNTIME, TL_CAT_KERNEL};
    for (int i = 0; i < 3; i++) {
        const tl_trace *tr[] = {&m, &g, &l};
        for (int k = 0; k < 3; k++) {
            const tl_event *e = ev(tr[k], names[i]);
            CHECK_EQ_INT(e->ts, ts[i]);
            CHECK_EQ_INT(e->dur, dur[i]);
            CHECK_EQ_INT(e->cat, cats[i]);
        }
    }
    CHECK_EQ_INT(ev(&g, "gemm")->link, find(&g, "cudaLaunchKernel"));
    CHECK_EQ_INT(track_of(&g, ev(&g, "gemm"))->kind, TL_TRACK_STREAM);
    tl_trace_free(&m);
    tl_trace_free(&g);
    tl_trace_free(&l);
    unlink(path);
}

/* A gzip file cut in half is an error that names the file, not a short trace. */
TEST(truncated_gzip_is_an_error)
{
    /* 2000 events with varied numbers so that the compressed stream is several KB */
    size_t cap = 2000 * 128, n = 0;
    char *doc = malloc(cap);
    n += (size_t)snprintf(doc + n, cap - n, "[");
    for (int i = 0; i < 2000; i++)
        n += (size_t)snprintf(doc + n, cap - n,
                              "%s{\"ph\": \"X\", \"name\": \"op%d\", \"pid\": 1, \"tid\": 1, "
                              "\"ts\": %d.%03d, \"dur\": %d}\n",
                              i ? "," : "", i * 7919 % 1000, i * 10, i * 37 % 1000, i % 9 + 1);
    n += (size_t)snprintf(doc + n, cap - n, "]");
    char path[64];
    temp_path(path, sizeof path, ".json.gz");
    CHECK_EQ_INT(write_gz(path, doc, n), 0);
    /* whole: reads */
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {0};
    CHECK_EQ_INT(tl_read_json(&t, path, 0, &err), 0);
    CHECK_EQ_INT(t.nev, 2000);
    tl_trace_free(&t);
    /* cut in half: fails */
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    CHECK(size > 1000);
    CHECK_EQ_INT(truncate(path, size / 2), 0);
    tl_trace_init(&t);
    CHECK(tl_read_json(&t, path, 0, &err) != 0);
    CHECK_PREFIX(err.msg, path);
    CHECK(strstr(err.msg, "gzip") != NULL);
    CHECK(strchr(err.msg, '\n') == NULL);
    tl_trace_free(&t);
    unlink(path);
    free(doc);
}

/* A file of many reader blocks (256 kB): a 5 MB top-level string (the buffer grows), then 70000
 * events, one per line, event i at ts i.5 µs lasting 1 µs. Every event is read with its exact time
 * across the refills; the same file with a missing comma on its last line (line 70003, column 21)
 * reports that line and column. */
TEST(large_file_spans_buffer_refills)
{
    enum { NEV = 70000, PAD = 5 << 20 };
    size_t cap = PAD + (size_t)NEV * 100 + 256, n = 0;
    char *doc = malloc(cap);
    n += (size_t)snprintf(doc + n, cap - n, "{\"pad\": \"");
    memset(doc + n, 'x', PAD);
    n += PAD;
    n += (size_t)snprintf(doc + n, cap - n, "\",\n\"traceEvents\": [\n"); /* line 2 */
    for (int i = 0; i < NEV; i++)                                         /* lines 3.. */
        n += (size_t)snprintf(doc + n, cap - n,
                              "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 1, "
                              "\"tid\": 1, \"ts\": %d.5, \"dur\": 1},\n",
                              i);
    size_t body = n;
    char path[64];
    temp_path(path, sizeof path, ".json");

    /* well formed: a last event and the closing brackets */
    n += (size_t)snprintf(doc + n, cap - n, "{\"ph\": \"X\", \"name\": \"last\", \"ts\": 1}\n]}\n");
    CHECK_EQ_INT(write_file(path, doc, n), 0);
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {0};
    CHECK_EQ_INT(tl_read_json(&t, path, 0, &err), 0);
    CHECK_EQ_INT(t.nev, NEV + 1);
    int bad = 0, ops = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const tl_event *e = &t.ev[i];
        if (strcmp(tl_str(&t.strings, e->name), "op") != 0)
            continue;
        /* one track, sorted by ts: the k-th op starts at k.5 µs */
        bad += e->ts != (int64_t)ops * 1000 + 500 || e->dur != 1000;
        ops++;
    }
    CHECK_EQ_INT(ops, NEV);
    CHECK_EQ_INT(bad, 0);
    CHECK(find(&t, "last") >= 0);
    tl_trace_free(&t);

    /* the last line without a comma between fields */
    n = body;
    n += (size_t)snprintf(doc + n, cap - n, "{\"ph\": \"X\", \"ts\": 1 \"dur\": 2}\n]}\n");
    CHECK_EQ_INT(write_file(path, doc, n), 0);
    tl_trace_init(&t);
    CHECK(tl_read_json(&t, path, 0, &err) != 0);
    char expected[160];
    snprintf(expected, sizeof expected,
             "%s:%d:21: expected ',' or '}' after an event field, found '\"'", path, NEV + 3);
    CHECK_STR(err.msg, expected);
    tl_trace_free(&t);
    unlink(path);
    free(doc);
}

/* ---- 10. tally's own Chrome export ------------------------------------------------------ */

#define BASE 1000000000LL /* first event's ts, ns */
#define WALL 1700000000000000000LL

/* One step on a named host thread: an operator launching a kernel (correlation 7) and a copy
 * (correlation 8) on device 0, stream 7, a user range and a memory event. */
static void build(tl_trace *t)
{
    tl_trace_init(t);
    t->wall_offset = WALL;
    t->rank = 2;
    t->world_size = 4;
    uint32_t host = tl_trace_track(t, TL_TRACK_THREAD, 100, 101, -1);
    uint32_t s7 = tl_trace_track(t, TL_TRACK_STREAM, 100, 7, 0);
    t->tracks[host].name = tl_intern(&t->strings, "main", 4);
    fx_ev(t, host, TL_CAT_STEP, "ProfilerStep#3", BASE, 100000)->value = 3;
    fx_ev(t, host, TL_CAT_OPERATOR, "aten::mm", BASE + 1500, 20001);
    fx_ev(t, host, TL_CAT_RUNTIME, "cudaLaunchKernel", BASE + 2000, 5000)->corr = 7;
    fx_ev(t, s7, TL_CAT_KERNEL, "gemm_kernel", BASE + 9000, 12345)->corr = 7;
    fx_ev(t, host, TL_CAT_RUNTIME, "cudaMemcpyAsync", BASE + 30000, 4000)->corr = 8;
    tl_event *cp =
        fx_ev(t, s7, TL_CAT_MEMCPY, "Memcpy HtoD (Pinned -> Device)", BASE + 40000, 1000);
    cp->corr = 8;
    cp->copy = TL_COPY_HTOD;
    cp->value = 4096;
    fx_ev(t, host, TL_CAT_USER, "my range", BASE + 50000, 7);
    tl_event *m = fx_ev(t, host, TL_CAT_MEMORY, "[memory]", BASE + 60000, 0);
    m->value = 512;
    m->flags = TL_EV_INSTANT | TL_EV_MEM_DEVICE;
    tl_trace_finish(t);
}

/* Write the hand-built trace with tl_write_chrome and read it back with tl_load: every event
 * comes back with its name, category, duration, value, track (kind, thread id, device) and
 * absolute time (ts + wall_offset), the launches link to their device work again, the thread
 * keeps its name and the trace its rank. */
TEST(chrome_export_round_trip)
{
    tl_trace a, b;
    build(&a);
    char path[64];
    temp_path(path, sizeof path, ".json");
    tl_error err = {0};
    CHECK_EQ_INT(tl_write_chrome(&a, path, &err), 0);
    tl_trace_init(&b);
    CHECK_EQ_INT(tl_load(&b, path, 0, &err), 0);
    CHECK_EQ_INT(b.nev, a.nev);
    for (size_t i = 0; i < a.nev; i++) {
        const tl_event *x = &a.ev[i];
        const char *name = tl_str(&a.strings, x->name);
        const tl_event *y = ev(&b, name);
        CHECK_EQ_INT(y->cat, x->cat);
        CHECK_EQ_INT(y->ts + b.wall_offset, x->ts + a.wall_offset);
        CHECK_EQ_INT(y->dur, x->dur);
        CHECK_EQ_INT(y->value, x->value);
        CHECK_EQ_INT(y->corr, x->corr);
        CHECK_EQ_INT(y->flags, x->flags);
        const tl_track *tx = &a.tracks[x->track], *ty = track_of(&b, y);
        CHECK_EQ_INT(ty->kind, tx->kind);
        CHECK_EQ_INT(ty->tid, tx->tid);
        CHECK_EQ_INT(ty->device, tx->device);
        if (tx->kind == TL_TRACK_THREAD)
            CHECK_EQ_INT(ty->pid, tx->pid);
        if (x->link != TL_NONE) /* links to the event of the same name */
            CHECK_EQ_INT(y->link, find(&b, tl_str(&a.strings, a.ev[x->link].name)));
        else
            CHECK_EQ_INT(y->link, TL_NONE);
    }
    CHECK_EQ_INT(ev(&b, "gemm_kernel")->link, find(&b, "cudaLaunchKernel"));
    CHECK_EQ_INT(ev(&b, "ProfilerStep#3")->value, 3);
    CHECK_EQ_INT(ev(&b, "Memcpy HtoD (Pinned -> Device)")->copy, TL_COPY_HTOD);
    CHECK_STR(tl_str(&b.strings, track_of(&b, ev(&b, "aten::mm"))->name), "main");
    CHECK_EQ_INT(b.rank, 2);
    CHECK_EQ_INT(b.world_size, 4);
    tl_trace_free(&b);
    tl_trace_free(&a);
    unlink(path);
}

/* Was a bug: the writer marks tally's phase categories with args "tally category" ("forward", ...)
 * "so a round trip keeps it", but the reader ignores that arg: a forward range comes back as a
 * user range. By construction each range keeps its category. */
TEST(chrome_export_round_trip_keeps_tally_categories)
{
    tl_trace a, b;
    tl_trace_init(&a);
    uint32_t host = tl_trace_track(&a, TL_TRACK_THREAD, 1, 1, -1);
    fx_ev(&a, host, TL_CAT_DATALOADER, "load", 0, 10);
    fx_ev(&a, host, TL_CAT_FORWARD, "forward", 20, 10);
    fx_ev(&a, host, TL_CAT_BACKWARD, "backward", 40, 10);
    fx_ev(&a, host, TL_CAT_OPTIMIZER, "optimizer", 60, 10);
    fx_ev(&a, host, TL_CAT_COMMUNICATION, "allreduce", 80, 10);
    tl_trace_finish(&a);
    char path[64];
    temp_path(path, sizeof path, ".json");
    tl_error err = {0};
    CHECK_EQ_INT(tl_write_chrome(&a, path, &err), 0);
    tl_trace_init(&b);
    CHECK_EQ_INT(tl_load(&b, path, 0, &err), 0);
    CHECK_EQ_INT(ev(&b, "load")->cat, TL_CAT_DATALOADER);
    CHECK_EQ_INT(ev(&b, "forward")->cat, TL_CAT_FORWARD);
    CHECK_EQ_INT(ev(&b, "backward")->cat, TL_CAT_BACKWARD);
    CHECK_EQ_INT(ev(&b, "optimizer")->cat, TL_CAT_OPTIMIZER);
    CHECK_EQ_INT(ev(&b, "allreduce")->cat, TL_CAT_COMMUNICATION);
    tl_trace_free(&b);
    tl_trace_free(&a);
    unlink(path);
}

/* Was a bug: Kineto (and tally's writer) name GPU streams with an 'M' thread_name whose pid is the
 * device and tid the stream ("stream 7"). The reader files every thread_name under a host thread
 * track, so a trace with one host thread and one stream reads back with a second, empty host
 * thread (pid 0, tid 7) named "stream 7", which the report header counts among the threads.
 * By construction: one host track, one stream track. */
TEST(stream_thread_name_adds_no_host_track)
{
    const char *json =
        "{\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 100, \"tid\": 100, "
        "\"ts\": 1, \"dur\": 5},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
        "\"ts\": 3, \"dur\": 5, \"args\": {\"device\": 0, \"stream\": 7}},\n"
        "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": 0, "
        "\"args\": {\"name\": \"GPU 0\"}},\n"
        "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": 7, "
        "\"args\": {\"name\": \"stream 7\"}}\n"
        "]}";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(count_tracks(&t, TL_TRACK_THREAD), 1);
    CHECK_EQ_INT(count_tracks(&t, TL_TRACK_STREAM), 1);
    tl_trace_free(&t);
}

/* Was a bug: events the reader drops still create their track first: an E with no open B (tid 3), a
 * sample 'P' (tid 4) and a global instant with pid "" and tid "" (Kineto's "Record Window End",
 * in every recent trace) each leave an empty host thread behind. By construction only thread
 * (1, 1) has an event. */
TEST(dropped_events_add_no_tracks)
{
    const char *json =
        "[{\"ph\": \"X\", \"name\": \"op\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 5},\n"
        " {\"ph\": \"E\", \"pid\": 1, \"tid\": 3, \"ts\": 2},\n"
        " {\"ph\": \"P\", \"name\": \"sample\", \"pid\": 1, \"tid\": 4, \"ts\": 3},\n"
        " {\"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", "
        "\"tid\": \"\", \"ts\": 9}]";
    tl_trace t;
    tl_error err;
    CHECK_EQ_INT(read_json(&t, json, &err), 0);
    CHECK_EQ_INT(t.nev, 1);
    CHECK_EQ_INT(t.ntracks, 1);
    tl_trace_free(&t);
}

/* Whitespace of every length (0 to 40 bytes) and kind (space, tab, newline, carriage return)
 * between every two tokens, runs that straddle the reader's blocks and a parallel read's
 * windows: the same events as the file without it. The lexer skips whitespace 16 bytes at a
 * time and takes a lone space on a fast path. */
static size_t put_ws(char *doc, size_t n, uint32_t *seed)
{
    static const char ws[4] = {' ', '\t', '\n', '\r'};
    *seed = *seed * 1103515245u + 12345u;
    uint32_t len = (*seed >> 16) % 41;
    if ((*seed >> 8 & 3) == 0) /* most often none or one space, as in Kineto's files */
        len = (*seed >> 10) & 1;
    for (uint32_t k = 0; k < len; k++) {
        *seed = *seed * 1103515245u + 12345u;
        doc[n++] = len == 1 ? ' ' : ws[(*seed >> 16) & 3];
    }
    return n;
}

TEST(whitespace_runs_of_every_length)
{
    enum { NEV = 60000 };
    size_t cap = (size_t)NEV * 1200 + 256, n = 0;
    char *doc = malloc(cap);
    uint32_t seed = 7;
    n = put_ws(doc, n, &seed);
    n += (size_t)sprintf(doc + n, "{");
    n = put_ws(doc, n, &seed);
    n += (size_t)sprintf(doc + n, "\"traceEvents\"");
    n = put_ws(doc, n, &seed);
    n += (size_t)sprintf(doc + n, ":");
    n = put_ws(doc, n, &seed);
    n += (size_t)sprintf(doc + n, "[");
    for (int i = 0; i < NEV; i++) {
        char tok[14][24];
        snprintf(tok[0], sizeof tok[0], "%s", i ? "," : "");
        snprintf(tok[1], sizeof tok[1], "{");
        snprintf(tok[2], sizeof tok[2], "\"ph\":");
        snprintf(tok[3], sizeof tok[3], "\"X\",");
        snprintf(tok[4], sizeof tok[4], "\"name\"");
        snprintf(tok[5], sizeof tok[5], ":\"e%d\"", i % 97);
        snprintf(tok[6], sizeof tok[6], ",\"tid\":");
        snprintf(tok[7], sizeof tok[7], "%d", 1 + i % 3);
        snprintf(tok[8], sizeof tok[8], ",\"ts\"");
        snprintf(tok[9], sizeof tok[9], ":");
        snprintf(tok[10], sizeof tok[10], "%d.5", 10 * i);
        snprintf(tok[11], sizeof tok[11], ",\"dur\":");
        snprintf(tok[12], sizeof tok[12], "%d", i % 5);
        snprintf(tok[13], sizeof tok[13], "}");
        for (int k = 0; k < 14; k++) {
            n = put_ws(doc, n, &seed);
            size_t l = strlen(tok[k]);
            memcpy(doc + n, tok[k], l);
            n += l;
        }
    }
    n = put_ws(doc, n, &seed);
    n += (size_t)sprintf(doc + n, "]");
    n = put_ws(doc, n, &seed);
    n += (size_t)sprintf(doc + n, "}");
    n = put_ws(doc, n, &seed);
    CHECK(n > (size_t)(4u << 20) + (1u << 20)); /* more than one block */
    char path[64];
    temp_path(path, sizeof path, ".json");
    CHECK_EQ_INT(write_file(path, doc, n), 0);
    for (int how = 0; how < 3; how++) { /* in memory, a file with one thread, with three */
        tl_trace t;
        tl_trace_init(&t);
        tl_error err = {0};
        int rc;
        if (how == 0) {
            rc = tl_read_json_mem(&t, doc, n, "t.json", &err);
        } else {
            t.read_threads = how == 1 ? 1 : 3;
            rc = tl_read_json(&t, path, 0, &err);
        }
        CHECK_EQ_INT(rc, 0);
        CHECK(err.msg[0] == 0);
        CHECK_EQ_INT(t.nev, NEV);
        CHECK_EQ_INT(tl_trace_finish(&t), 0);
        int bad = 0;
        for (size_t j = 0; j < t.nev; j++) {
            const tl_event *e = &t.ev[j];
            int i = (int)((e->ts - 500) / 10000); /* ts = 10 i + 0.5 us */
            char name[16];
            snprintf(name, sizeof name, "e%d", i % 97);
            if (i < 0 || i >= NEV || e->ts != 10000LL * i + 500 || e->dur != 1000LL * (i % 5) ||
                strcmp(tl_str(&t.strings, e->name), name) != 0 ||
                t.tracks[e->track].tid != 1 + i % 3)
                bad++;
        }
        CHECK_EQ_INT(bad, 0);
        tl_trace_free(&t);
    }
    unlink(path);
    free(doc);
}

/* A file read in one pass is mapped whole when its end is inside a page, and read block by
 * block when its size is a multiple of the page: the same events, and cut anywhere the same error
 * as the same bytes read in memory (the mapped file's NUL is the zeros after its end). */
TEST(one_pass_mapped_or_read_in_blocks_reads_alike)
{
    long page = sysconf(_SC_PAGESIZE);
    CHECK(page > 0);
    enum { NEV = 6000 };
    size_t cap = (size_t)NEV * 200 + (size_t)page * 3 + 256, n = 0;
    char *doc = malloc(cap);
    n += (size_t)sprintf(doc + n, "{\"traceEvents\": [\n");
    for (int i = 0; i < NEV; i++)
        n += (size_t)sprintf(doc + n,
                             "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\\\"%d\", "
                             "\"pid\": 1, \"tid\": %d, \"ts\": %d.25, \"dur\": %d, "
                             "\"args\": {\"External id\": %d, \"Input Dims\": [[%d, 3]]}},\n",
                             i % 41, 1 + i % 2, 3 * i, i % 7, i, i % 5);
    n += (size_t)sprintf(doc + n, "{\"ph\": \"i\", \"name\": \"last\", \"ts\": 1}]}");
    size_t body = n;
    char path[64];
    temp_path(path, sizeof path, ".json");
    int agree = 0, runs = 0, mapped = 0, blocks = 0;
    /* whole, padded with blanks to a page multiple, one byte short of it and one past it; then
     * cut short at 40 places, a few of them page multiples */
    size_t want = (body / (size_t)page + 2) * (size_t)page; /* a page and more past body */
    for (int c = -3; c < 40; c++) {
        size_t len = c == -3   ? want - 1
                     : c == -2 ? want
                     : c == -1 ? want + 1
                     : c < 4   ? (size_t)page * (size_t)(c + 1)
                               : body * (size_t)c / 40 + (size_t)c;
        if (c < 0)
            memset(doc + body, ' ', len - body);
        else if (len >= body)
            len = body - 1;
        CHECK_EQ_INT(write_file(path, doc, len), 0);
        tl_trace a, b;
        tl_trace_init(&a);
        tl_trace_init(&b);
        a.read_threads = 1;
        tl_error ea = {0}, eb = {0};
        int ra = tl_read_json(&a, path, 0, &ea), rb = tl_read_json_mem(&b, doc, len, path, &eb);
        int same = ra == rb && strcmp(ea.msg, eb.msg) == 0 && a.nev == b.nev &&
                   (c < 0 ? ra == 0 && a.nev == NEV + 1 : ra != 0);
        for (size_t i = 0; same && i < a.nev; i++)
            same =
                a.ev[i].ts == b.ev[i].ts && a.ev[i].dur == b.ev[i].dur &&
                strcmp(tl_str(&a.strings, a.ev[i].name), tl_str(&b.strings, b.ev[i].name)) == 0 &&
                strcmp(tl_str(&a.strings, a.ev[i].args), tl_str(&b.strings, b.ev[i].args)) == 0;
        if (!same)
            fprintf(stderr, "  %zu bytes: \"%s\" / \"%s\"\n", len, ea.msg, eb.msg);
        agree += same;
        runs++;
        mapped += len % (size_t)page != 0;
        blocks += len % (size_t)page == 0;
        tl_trace_free(&a);
        tl_trace_free(&b);
    }
    CHECK_EQ_INT(agree, runs);
    CHECK(mapped > 30 && blocks >= 4);
    CHECK(body > (size_t)(256u << 10)); /* the block reader refills */
    unlink(path);
    free(doc);
}

int main(void)
{
    RUN(one_pass_mapped_or_read_in_blocks_reads_alike);
    RUN(object_and_bare_array_forms_give_same_events);
    RUN(a_byte_order_mark_is_skipped);
    RUN(unknown_keys_fields_and_types_are_skipped);
    RUN(string_escapes_are_decoded);
    RUN(kineto_categories_map_to_model);
    RUN(kineto_kernels_go_on_stream_tracks);
    RUN(kineto_correlation_links_launch_to_kernel);
    RUN(kineto_ac2g_flows_link_without_correlation);
    RUN(kineto_2021_capitalised_categories);
    RUN(kineto_step_dataloader_optimizer_names);
    RUN(timestamps_are_exact_nanoseconds);
    RUN(numbers_of_every_shape);
    RUN(whitespace_runs_of_every_length);
    RUN(missing_or_negative_dur_is_zero);
    RUN(times_out_of_range_are_clamped_and_counted);
    RUN(begin_end_pairs_nest);
    RUN(unmatched_end_and_unclosed_begin);
    RUN(instants);
    RUN(counters_one_event_per_key);
    RUN(thread_name_metadata_names_track);
    RUN(memory_instants);
    RUN(device_properties_and_distributed_info);
    RUN(paddle_duration_suffixes_are_stripped);
    RUN(non_paddle_names_keep_duration_brackets);
    RUN(legacy_exporter_ops_are_operators);
    RUN(error_missing_comma_between_fields);
    RUN(error_missing_comma_between_events);
    RUN(error_missing_colon);
    RUN(error_bad_literal_in_known_field);
    RUN(error_unterminated_string);
    RUN(error_truncated_file);
    RUN(error_not_an_object);
    RUN(error_garbage_after_end);
    RUN(error_bad_escape);
    RUN(skipped_arrays_of_every_shape);
    RUN(error_empty_input);
    RUN(gzip_file_reads_like_plain);
    RUN(truncated_gzip_is_an_error);
    RUN(large_file_spans_buffer_refills);
    RUN(chrome_export_round_trip);
    /* found as bugs, fixed since */
    RUN(profile_step_name_with_one_digit_is_a_step);
    RUN(counter_with_args_before_ph);
    RUN(error_bad_literal_in_skipped_field);
    RUN(chrome_export_round_trip_keeps_tally_categories);
    RUN(stream_thread_name_adds_no_host_track);
    RUN(dropped_events_add_no_tracks);
    return test_summary();
}
