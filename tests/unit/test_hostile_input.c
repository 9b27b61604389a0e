/*
 * test_hostile_input.c — inputs built to break the readers, the model and the writer: ids that
 * collide in a weak hash, flows over many threads, times and sizes at the int64 limits, invalid
 * JSON where the reader skips values, unmatched ends. Each test knows its answer by
 * construction; the CI runs it under ASan+UBSan, so an overflow is a failure too.
 */
#include "record/format.h"
#include "report/summary.h"
#include "testlib.h"
#include "trace/checked.h"
#include "trace/model.h"
#include "trace/tally_export.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

static tl_event *add(tl_trace *t, uint32_t track, int cat, int64_t ts, int64_t dur, int64_t corr)
{
    tl_event *e = tl_trace_add(t);
    e->track = track;
    e->cat = (uint16_t)cat;
    e->ts = ts;
    e->dur = dur;
    e->corr = corr;
    return e;
}

/* Correlation ids that are multiples of 2^44 all landed in one slot of the link table. */
TEST(colliding_correlation_ids_link_each_kernel_to_its_call)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t host = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t dev = tl_trace_track(&t, TL_TRACK_STREAM, 0, 7, 0);
    enum { N = 20000 };
    for (int64_t i = 0; i < N; i++) {
        add(&t, host, TL_CAT_RUNTIME, i * 10, 2, (i + 1) << 44);
        add(&t, dev, TL_CAT_KERNEL, i * 10 + 5, 1, (i + 1) << 44)->value = i;
    }
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    int good = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const tl_event *e = &t.ev[i];
        if (e->cat != TL_CAT_KERNEL || e->link == TL_NONE)
            continue;
        const tl_event *c = &t.ev[e->link];
        good += c->cat == TL_CAT_RUNTIME && c->corr == e->corr && c->ts == e->value * 10 &&
                c->link == (int32_t)i;
    }
    CHECK_EQ_INT(good, N);
    tl_trace_free(&t);
}

/* Flows are the only link: each flow's thread is found among many (a scan per flow was
 * flows x threads). Call i runs on thread 1 + i % 3000 and launches kernel i. */
TEST(flows_over_many_threads_link_each_kernel_to_its_call)
{
    enum { FLOWS = 9000, THREADS = 3000 };
    size_t cap = (size_t)FLOWS * 400 + 64, n = 0;
    char *doc = malloc(cap);
    CHECK(doc != NULL);
    if (!doc)
        return;
    n += (size_t)snprintf(doc + n, cap - n, "{\"traceEvents\":[");
    for (int i = 0; i < FLOWS; i++) {
        int tid = 1 + i % THREADS;
        long ts = (long)i * 10;
        n += (size_t)snprintf(
            doc + n, cap - n,
            "%s{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"launch\",\"pid\":1,\"tid\":%d,"
            "\"ts\":%ld,\"dur\":2},"
            "{\"ph\":\"s\",\"cat\":\"ac2g\",\"id\":%d,\"pid\":1,\"tid\":%d,\"ts\":%ld},"
            "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":%ld,"
            "\"dur\":1,\"args\":{\"device\":0,\"stream\":7}},"
            "{\"ph\":\"f\",\"cat\":\"ac2g\",\"id\":%d,\"pid\":0,\"tid\":7,\"ts\":%ld,\"bp\":\"e\"}",
            i ? "," : "", tid, ts, i + 1, tid, ts + 1, ts + 5, i + 1, ts + 5);
    }
    n += (size_t)snprintf(doc + n, cap - n, "]}");
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_json_mem(&t, doc, n, "flows.json", &err), 0);
    int good = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const tl_event *e = &t.ev[i];
        if (e->cat != TL_CAT_KERNEL || e->link == TL_NONE)
            continue;
        const tl_event *c = &t.ev[e->link];
        int64_t k = (e->ts - 5000) / 10000; /* the flow's index, from the kernel's start */
        good += c->cat == TL_CAT_RUNTIME && c->ts == k * 10000 && e->corr == k + 1 &&
                t.tracks[c->track].tid == 1 + k % THREADS;
    }
    CHECK_EQ_INT(good, FLOWS);
    tl_trace_free(&t);
    free(doc);
}

TEST(saturating_arithmetic_stops_at_the_limits)
{
    CHECK_EQ_INT(tl_add_sat(INT64_MAX - 1, 5), INT64_MAX);
    CHECK_EQ_INT(tl_add_sat(INT64_MIN + 1, -5), INT64_MIN);
    CHECK_EQ_INT(tl_add_sat(40, 2), 42);
    CHECK_EQ_INT(tl_sub_sat(INT64_MIN, 1), INT64_MIN);
    CHECK_EQ_INT(tl_sub_sat(INT64_MAX, -1), INT64_MAX);
    CHECK_EQ_INT(tl_sub_sat(0, INT64_MIN), INT64_MAX);
    CHECK_EQ_INT(tl_sub_sat(50, 8), 42);
    CHECK_EQ_INT(tl_mul_sat(INT64_MAX / 2 + 1, 2), INT64_MAX);
    CHECK_EQ_INT(tl_mul_sat(INT64_MIN, -1), INT64_MAX);
    CHECK_EQ_INT(tl_mul_sat(-(INT64_C(1) << 40), INT64_C(1) << 40), INT64_MIN);
    CHECK_EQ_INT(tl_mul_sat(6, 7), 42);
    CHECK_EQ_INT(tl_d_to_i64(1e300), INT64_MAX);
    CHECK_EQ_INT(tl_d_to_i64(-1e300), INT64_MIN);
    CHECK_EQ_INT(tl_d_to_i64(0.0 / 0.0), 0);
    CHECK_EQ_INT(tl_clamp_time(INT64_MIN), -TL_TIME_MAX);
    CHECK_EQ_INT(tl_clamp_dur(TL_TIME_MAX - 10, INT64_MAX), 10);
    CHECK_EQ_INT(tl_clamp_dur(0, -5), 0);
}

/* Every time of the model and every end within +-TL_TIME_MAX, durations not negative. */
static int times_in_range(const tl_trace *t)
{
    for (size_t i = 0; i < t->nev; i++) {
        const tl_event *e = &t->ev[i];
        if (e->ts < -TL_TIME_MAX || e->ts > TL_TIME_MAX || e->dur < 0 ||
            e->dur > TL_TIME_MAX - e->ts)
            return 0;
    }
    return 1;
}

/* JSON: ts beyond int64, a duration past the end of time, a negative one. */
TEST(json_times_beyond_int64_are_clamped_into_the_model_range)
{
    static const char doc[] =
        "{\"traceEvents\":["
        "{\"ph\":\"X\",\"name\":\"late\",\"pid\":1,\"tid\":1,\"ts\":9e30,\"dur\":1e30},"
        "{\"ph\":\"X\",\"name\":\"early\",\"pid\":1,\"tid\":1,\"ts\":-9e30,\"dur\":5},"
        "{\"ph\":\"X\",\"name\":\"neg\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":-3},"
        "{\"ph\":\"X\",\"name\":\"edge\",\"pid\":1,\"tid\":1,\"ts\":4611686018427387,\"dur\":"
        "99999999999999999999},"
        "{\"ph\":\"B\",\"name\":\"open\",\"pid\":1,\"tid\":2,\"ts\":-9223372036854775808}],"
        "\"baseTimeNanoseconds\":9223372036854775807}";
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_json_mem(&t, doc, sizeof doc - 1, "t.json", &err), 0);
    CHECK(times_in_range(&t));
    int seen = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const tl_event *e = &t.ev[i];
        const char *n = tl_str(&t.strings, e->name);
        if (!strcmp(n, "late"))
            seen += e->ts == TL_TIME_MAX && e->dur == 0;
        else if (!strcmp(n, "early"))
            seen += e->ts == -TL_TIME_MAX && e->dur == 5000;
        else if (!strcmp(n, "neg"))
            seen += e->ts == 10000 && e->dur == 0;
        else if (!strcmp(n, "edge"))
            seen += e->ts + e->dur == TL_TIME_MAX;
    }
    CHECK_EQ_INT(seen, 4);
    CHECK_EQ_INT(t.wall_offset, INT64_MAX);
    tl_trace_free(&t);
}

/* The writer's baseTimeNanoseconds is the first time plus the file's offset: saturated. */
TEST(chrome_base_time_near_int64_max_saturates)
{
    static const char doc[] = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,"
                              "\"tid\":1,\"ts\":1000,\"dur\":5}],"
                              "\"baseTimeNanoseconds\":9223372036854775000}";
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_json_mem(&t, doc, sizeof doc - 1, "t.json", &err), 0);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    CHECK(f != NULL);
    if (f) {
        CHECK_EQ_INT(tl_write_chrome_file(&t, f, &err), 0);
        fclose(f);
        CHECK(out && strstr(out, "\"baseTimeNanoseconds\":9223372036854775807,"));
        CHECK(out && strstr(out, "\"ts\":0.000,\"dur\":5.000"));
        free(out);
    }
    tl_trace_free(&t);
}

/* A model built by hand (no reader clamped it): the span, the nesting and the writer saturate. */
TEST(model_and_writer_saturate_on_times_no_reader_made)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t host = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    add(&t, host, TL_CAT_USER, INT64_MIN, INT64_MAX, 0);
    add(&t, host, TL_CAT_USER, INT64_MAX - 1, INT64_MAX, 0);
    add(&t, host, TL_CAT_USER, 0, INT64_MAX, 0);
    t.wall_offset = INT64_MIN;
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    int64_t t0, t1;
    tl_trace_span(&t, &t0, &t1);
    CHECK_EQ_INT(t0, INT64_MIN);
    CHECK_EQ_INT(t1, INT64_MAX);
    FILE *f = fopen("/dev/null", "w");
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_write_chrome_file(&t, f, &err), 0);
    fclose(f);
    tl_trace_free(&t);
}

/* ---- a crafted .tally file: header, META, one EVENTS chunk ---- */

typedef struct buf {
    unsigned char b[4096];
    size_t n;
} buf;

static void put(buf *b, const void *p, size_t n)
{
    if (b->n + n <= sizeof b->b) {
        memcpy(b->b + b->n, p, n);
        b->n += n;
    }
}

static void put_u64(buf *b, uint64_t v)
{
    put(b, &v, 8);
}

/* The chunk header at b[at] gets the length of what follows it. */
static void close_chunk(buf *b, size_t at)
{
    uint64_t len = b->n - at - sizeof(tally__chunk_header);
    memcpy(b->b + at + offsetof(tally__chunk_header, len), &len, 8);
}

/* A file on a TSC clock whose ns0 is near INT64_MAX and whose end is INT64_MAX, holding a range
 * pushed at a tick far past ns0, a kernel and an API call spanning all of int64, and a memory
 * activity record without arguments. */
static size_t crafted_tally(buf *b)
{
    memset(b, 0, sizeof *b);
    tally__file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, TALLY__MAGIC, 8);
    h.major = TALLY__FORMAT_MAJOR;
    h.header_size = sizeof h;
    put(b, &h, sizeof h);
    size_t at = b->n;
    tally__chunk_header ch = {TALLY__CHUNK_META, 0, 0};
    put(b, &ch, sizeof ch);
    tally__meta_clock clk = {1, 0, 1000, INT64_MAX - 1000, 1e4}; /* 0.1 ms a tick */
    uint32_t kl[2] = {TALLY__META_CLOCK, sizeof clk};
    put(b, kl, 8);
    put(b, &clk, sizeof clk);
    uint32_t ke[2] = {TALLY__META_END_NS, 8};
    put(b, ke, 8);
    put_u64(b, (uint64_t)INT64_MAX);
    uint32_t kw[2] = {TALLY__META_WALL_OFFSET, 8};
    put(b, kw, 8);
    put_u64(b, (uint64_t)INT64_MAX);
    close_chunk(b, at);
    at = b->n;
    ch.type = TALLY__CHUNK_EVENTS;
    put(b, &ch, sizeof ch);
    tally__events_header eh = {1, 0, 100, 0, 0};
    put(b, &eh, sizeof eh);
    /* a range named by a STR record, pushed at tick 2000 (1000 ms past ns0) and popped later */
    char name[16] = "far";
    put_u64(b, TALLY__REC(TALLY__R_STR, (uint64_t)TALLY__STR_NAME << 48));
    put_u64(b, 3);
    put(b, name, 16);
    put_u64(b, TALLY__REC(TALLY__R_PUSH, 2000));
    put_u64(b, 0);
    put_u64(b, TALLY__REC(TALLY__R_POP, 5000));
    put_u64(b, 0);
    /* a kernel from INT64_MIN to INT64_MAX */
    tally__fmt_device dv;
    memset(&dv, 0, sizeof dv);
    dv.start = INT64_MIN;
    dv.end = INT64_MAX;
    dv.bytes = INT64_MAX;
    dv.cat = TALLY__CAT_KERNEL;
    dv.name_len = 1;
    unsigned char pl[96] = {0};
    memcpy(pl, &dv, sizeof dv);
    pl[sizeof dv] = 'k';
    size_t slots = (sizeof dv + 1 + 15) / 16;
    put_u64(b, TALLY__REC(TALLY__R_DEVICE, slots));
    put_u64(b, 0);
    put(b, pl, slots * 16);
    /* CUPTI's memory activity without arguments (no "address": the args pointer is NULL) */
    dv.start = dv.end = 5;
    dv.bytes = 64;
    dv.cat = TALLY__CAT_MEMORY;
    memset(pl, 0, sizeof pl);
    memcpy(pl, &dv, sizeof dv);
    pl[sizeof dv] = 'm';
    put_u64(b, TALLY__REC(TALLY__R_DEVICE, slots));
    put_u64(b, 0);
    put(b, pl, slots * 16);
    /* an API call from INT64_MIN to INT64_MAX */
    tally__fmt_api api = {INT64_MIN, INT64_MAX, 1, 100, TALLY__CAT_RUNTIME, 1};
    memset(pl, 0, sizeof pl);
    memcpy(pl, &api, sizeof api);
    pl[sizeof api] = 'a';
    slots = (sizeof api + 1 + 15) / 16;
    put_u64(b, TALLY__REC(TALLY__R_API, slots));
    put_u64(b, 0);
    put(b, pl, slots * 16);
    close_chunk(b, at);
    return b->n;
}

TEST(tally_times_at_the_int64_limits_are_clamped)
{
    buf b;
    size_t n = crafted_tally(&b);
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_tally_mem(&t, b.b, n, "crafted.tally", &err), 0);
    if (err.msg[0])
        fprintf(stderr, "%s\n", err.msg);
    CHECK(t.nev >= 3);
    CHECK(times_in_range(&t));
    int seen = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const tl_event *e = &t.ev[i];
        const char *nm = tl_str(&t.strings, e->name);
        if (!strcmp(nm, "far")) /* INT64_MAX - 1000 ns + 100 ms: past the range */
            seen += e->ts == TL_TIME_MAX && e->dur == 0;
        else if (!strcmp(nm, "k") || !strcmp(nm, "a"))
            seen += e->ts == -TL_TIME_MAX && e->dur == 2 * TL_TIME_MAX;
    }
    CHECK_EQ_INT(seen, 3);
    CHECK_EQ_INT(t.nmem, 1);
    CHECK(t.nmem == 1 && t.mem[0].bytes == 64 && t.mem[0].addr == 0);
    FILE *f = fopen("/dev/null", "w");
    CHECK_EQ_INT(tl_write_chrome_file(&t, f, &err), 0);
    size_t nev = 0;
    CHECK_EQ_INT(tl_tally_export_mem(b.b, n, "crafted.tally", f, &nev, &err), 0);
    CHECK_EQ_INT(nev, t.nev);
    fclose(f);
    tl_trace_free(&t);
}

/* Invalid JSON where the reader skips the value (an unknown member, args it does not use, a
 * non-object in traceEvents) is an error naming the line and column, like anywhere else. */
TEST(invalid_json_inside_skipped_values_is_an_error)
{
    static const struct {
        const char *doc;
        const char *where; /* the message starts with this */
    } bad[] = {
        {"{\"meta\":{\"a\" 1},\"traceEvents\":[]}", "t.json:1:14: expected ':'"},
        {"{\"meta\":[1 2],\"traceEvents\":[]}", "t.json:1:12: expected ',' or ']'"},
        {"{\"meta\":[1,,2],\"traceEvents\":[]}", "t.json:1:12: expected a value"},
        {"{\"meta\":[1,],\"traceEvents\":[]}", "t.json:1:12: expected a value"},
        {"{\"meta\":{\"k\":tru},\"traceEvents\":[]}", "t.json:1:14: expected a value"},
        {"{\"meta\":{1:2},\"traceEvents\":[]}", "t.json:1:10: expected a string"},
        {"{\"meta\":{\"k\":1,},\"traceEvents\":[]}", "t.json:1:16: expected a string"},
        {"{\"meta\":[{\"k\":[1]]},\"traceEvents\":[]}", "t.json:1:18: expected ',' or '}'"},
        {"{\"meta\":\"a\\qb\",\"traceEvents\":[]}", "t.json:1:12: expected a valid escape"},
        {"{\"meta\":\"\\u12g4\",\"traceEvents\":[]}", "t.json:1:11: expected a valid escape"},
        {"{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"args\":"
         "{\"shapes\":[[1,2],[3 4]]}}]}",
         "t.json:1:88: expected ',' or ']' in an array"},
        {"{\"traceEvents\":[[1,{\"a\":}]]}", "t.json:1:25: expected a value"},
        {"{\"traceEvents\":[],\"x\":[[[[",
         "t.json:1:27: expected a value or ']', found end of input"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tl_trace t;
        tl_trace_init(&t);
        tl_error err = {{0}};
        CHECK_EQ_INT(tl_read_json_mem(&t, bad[i].doc, strlen(bad[i].doc), "t.json", &err), -1);
        if (strncmp(err.msg, bad[i].where, strlen(bad[i].where)) != 0)
            fprintf(stderr, "case %zu: %s\n", i, err.msg);
        CHECK(strncmp(err.msg, bad[i].where, strlen(bad[i].where)) == 0);
        CHECK(!strchr(err.msg, '\n'));
        tl_trace_free(&t);
    }
    /* the same shapes, valid, still read */
    static const char good[] =
        "{\"meta\":{\"a\":[1,{\"b\":[[],{}]},\"\\u00e9\\n\",true,false,null,-1.5e3]},"
        "\"traceEvents\":[[1,{\"a\":2}],{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,"
        "\"ts\":1,\"dur\":2,\"args\":{\"shapes\":[[1,2],[3,4]],\"o\":{}}}]}";
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_json_mem(&t, good, sizeof good - 1, "t.json", &err), 0);
    CHECK_EQ_INT(t.nev, 1);
    tl_trace_free(&t);
}

/* Nesting deeper than the skipper's stack is an error, not a crash. */
TEST(json_nested_too_deep_is_an_error)
{
    enum { DEPTH = 5000 };
    char *doc = malloc(2 * DEPTH + 64);
    CHECK(doc != NULL);
    if (!doc)
        return;
    size_t n = (size_t)sprintf(doc, "{\"x\":");
    for (int i = 0; i < DEPTH; i++)
        doc[n++] = '[';
    for (int i = 0; i < DEPTH; i++)
        doc[n++] = ']';
    n += (size_t)sprintf(doc + n, ",\"traceEvents\":[]}");
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_json_mem(&t, doc, n, "t.json", &err), -1);
    CHECK(strstr(err.msg, "t.json:1:4102: expected objects and arrays nested less than 4096") ==
          err.msg);
    tl_trace_free(&t);
    free(doc);
}

static void count_line(const char *line, void *arg)
{
    if (strstr(line, "warning: 2 'E' events without a 'B' open on their thread"))
        ++*(int *)arg;
}

/* An 'E' with no open 'B' on its thread ends nothing: counted, and shown as a warning. */
TEST(unmatched_end_events_are_counted_and_warned)
{
    static const char doc[] = "{\"traceEvents\":["
                              "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":1},"
                              "{\"ph\":\"B\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":2},"
                              "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":5},"
                              "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"ts\":6}]}";
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_json_mem(&t, doc, sizeof doc - 1, "t.json", &err), 0);
    CHECK_EQ_INT(t.unmatched_ends, 2);
    CHECK_EQ_INT(t.nev, 1);
    CHECK_EQ_INT(t.ev[0].dur, 3000);
    int seen = 0;
    tl_trace_warnings(&t, count_line, &seen);
    CHECK_EQ_INT(seen, 1);
    tl_trace_free(&t);
}

/* ---- input that is not a regular file ---- */

/* Start a child that writes data[len] into a pipe and exits; returns the read end. */
static int pipe_from(const void *data, size_t len, pid_t *child)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    *child = fork();
    if (*child == 0) {
        close(fds[0]);
        const char *p = data;
        while (len) {
            ssize_t k = write(fds[1], p, len);
            if (k <= 0)
                _exit(1);
            p += k;
            len -= (size_t)k;
        }
        _exit(0);
    }
    close(fds[1]);
    return fds[0];
}

/* tl_load of path (with "%d" for the pipe's descriptor), reading data through a pipe; when path
 * is "-" the pipe is standard input. Returns tl_load's result. */
static int load_piped(tl_trace *t, const char *path, const void *data, size_t len, tl_error *err)
{
    pid_t child;
    int fd = pipe_from(data, len, &child);
    if (fd < 0)
        return -2;
    int rc, saved = -1;
    if (!strcmp(path, "-")) {
        saved = dup(0);
        dup2(fd, 0);
        rc = tl_load(t, "-", 0, err);
        dup2(saved, 0);
        close(saved);
    } else {
        char name[64];
        snprintf(name, sizeof name, path, fd);
        rc = tl_load(t, name, 0, err);
    }
    close(fd);
    int status;
    waitpid(child, &status, 0);
    return rc;
}

static const char one_event[] = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\","
                                "\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":2,\"args\":{\"device\":0,"
                                "\"stream\":7}}]}";

/* gzip of data, in memory (zlib's gzip wrapper: windowBits 15 + 16). */
static size_t gzip_mem(const void *data, size_t len, unsigned char *out, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    z.next_in = (unsigned char *)(uintptr_t)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    size_t n = cap - z.avail_out;
    deflateEnd(&z);
    return rc == Z_STREAM_END ? n : 0;
}

TEST(stdin_pipes_and_process_substitution_read_json_gzip_and_tally)
{
    unsigned char gz[512];
    size_t ngz = gzip_mem(one_event, sizeof one_event - 1, gz, sizeof gz);
    CHECK(ngz > 18);
    buf tb;
    size_t ntb = crafted_tally(&tb);
    const struct {
        const void *data;
        size_t len;
        size_t nev;
    } in[] = {{one_event, sizeof one_event - 1, 1}, {gz, ngz, 1}, {tb.b, ntb, 4}};
    const char *paths[] = {"-", "/dev/fd/%d"};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++)
        for (size_t k = 0; k < 2; k++) {
            tl_trace t;
            tl_trace_init(&t);
            tl_error err = {{0}};
            int rc = load_piped(&t, paths[k], in[i].data, in[i].len, &err);
            if (rc != 0)
                fprintf(stderr, "input %zu through %s: %s\n", i, paths[k], err.msg);
            CHECK_EQ_INT(rc, 0);
            CHECK_EQ_INT(t.nev, in[i].nev);
            if (k == 0)
                CHECK_STR(t.path, "<stdin>");
            tl_trace_free(&t);
        }
}

/* A JSON document that holds no event tally reads is an error, on one line, through tl_load. */
TEST(json_without_trace_events_is_an_error)
{
    static const char *const docs[] = {"{}", "{\"traceEvents\":[]}", "[]",
                                       "{\"traceEvents\":[{\"ph\":\"M\",\"name\":\"x\"}]}",
                                       "{\"deviceProperties\":[]}"};
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        tl_trace t;
        tl_trace_init(&t);
        tl_error err = {{0}};
        CHECK_EQ_INT(load_piped(&t, "-", docs[i], strlen(docs[i]), &err), -1);
        CHECK(strncmp(err.msg, "<stdin>: no trace events", 24) == 0);
        CHECK(!strchr(err.msg, '\n'));
        tl_trace_free(&t);
    }
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(load_piped(&t, "-", "", 0, &err), -1);
    CHECK_STR(err.msg, "<stdin>: the file is empty; expected a trace (.tally or JSON)");
    tl_trace_free(&t);
}

/* A file named .tally that starts with neither the .tally magic nor JSON (or gzip) is a damaged
 * .tally: said as such, with the offset, on one line (the JSON reader's "expected '{'" before);
 * a JSON document named .tally is still read. */
TEST(a_damaged_tally_file_is_named_as_one)
{
    char path[] = "/tmp/tally-hostile-XXXXXX.tally";
    int fd = mkstemps(path, 6);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    const char junk[] = "\xb1\x07garbage, not a trace";
    CHECK(write(fd, junk, sizeof junk - 1) == (ssize_t)(sizeof junk - 1));
    close(fd);
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_load(&t, path, 0, &err), -1);
    CHECK(strstr(err.msg, ": offset 0: expected the .tally magic \"TALLYTRC\"") != NULL);
    CHECK(!strchr(err.msg, '\n'));
    tl_trace_free(&t);
    FILE *z = fopen(path, "w"); /* zeros: a .tally whose start was never written */
    CHECK(z != NULL);
    if (z) {
        static const char zeros[4096];
        fwrite(zeros, 1, sizeof zeros, z);
        fclose(z);
        tl_trace_init(&t);
        CHECK_EQ_INT(tl_load(&t, path, 0, &err), -1);
        CHECK(strstr(err.msg, ": offset 0: expected the .tally magic") != NULL);
        tl_trace_free(&t);
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(" {\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, "
              "\"ts\": 1, \"dur\": 2}]}",
              f);
        fclose(f);
        tl_trace_init(&t);
        CHECK_EQ_INT(tl_load(&t, path, 0, &err), 0);
        CHECK_EQ_INT(t.nev, 1);
        tl_trace_free(&t);
    }
    unlink(path);
}

int main(void)
{
    RUN(colliding_correlation_ids_link_each_kernel_to_its_call);
    RUN(a_damaged_tally_file_is_named_as_one);
    RUN(flows_over_many_threads_link_each_kernel_to_its_call);
    RUN(saturating_arithmetic_stops_at_the_limits);
    RUN(json_times_beyond_int64_are_clamped_into_the_model_range);
    RUN(chrome_base_time_near_int64_max_saturates);
    RUN(model_and_writer_saturate_on_times_no_reader_made);
    RUN(tally_times_at_the_int64_limits_are_clamped);
    RUN(invalid_json_inside_skipped_values_is_an_error);
    RUN(json_nested_too_deep_is_an_error);
    RUN(unmatched_end_events_are_counted_and_warned);
    RUN(stdin_pipes_and_process_substitution_read_json_gzip_and_tally);
    RUN(json_without_trace_events_is_an_error);
    return test_summary();
}
