/* test_chrome_writer.c — the Chrome trace writer: exact field text (ts/dur in µs with three
 * decimals from integer ns), Kineto categories, ac2g flows, metadata, escaping, and a round
 * trip through the JSON reader. */
#include "json_check.h"
#include "insight_fixture.h"
#include "testlib.h"
#include "trace/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BASE 1000000000LL /* first event's ts, ns */

/* One step on one host thread with an operator launching a kernel and a copy on device 0. */
static void build(tl_trace *t)
{
    tl_trace_init(t);
    t->rank = 1;
    t->world_size = 4;
    tl_device *d = tl_trace_device(t, 0);
    d->name = tl_intern(&t->strings, "NVIDIA H100", 11);
    d->memory = 80LL << 30;
    d->sm_count = 132;
    d->cc_major = 9;
    uint32_t host = tl_trace_track(t, TL_TRACK_THREAD, 100, 101, -1);
    uint32_t s7 = tl_trace_track(t, TL_TRACK_STREAM, 100, 7, 0);
    t->tracks[host].name = tl_intern(&t->strings, "main", 4);

    fx_ev(t, host, TL_CAT_STEP, "ProfilerStep#3", BASE, 100000)->value = 3;
    fx_ev(t, host, TL_CAT_FORWARD, "fwd", BASE + 1000, 50000);
    tl_event *op = fx_ev(t, host, TL_CAT_OPERATOR, "aten::mm", BASE + 1500, 20001);
    op->args = tl_intern(&t->strings, "[[4, 128], [128, 64]]", 21);
    fx_ev(t, host, TL_CAT_RUNTIME, "cudaLaunchKernel", BASE + 2000, 5000)->corr = 7;
    fx_ev(t, s7, TL_CAT_KERNEL, "gemm_kernel", BASE + 9000, 12345)->corr = 7;
    fx_ev(t, host, TL_CAT_RUNTIME, "cudaMemcpyAsync", BASE + 30000, 4000)->corr = 8;
    tl_event *cp = fx_ev(t, s7, TL_CAT_MEMCPY, NULL, BASE + 40000, 1000);
    cp->corr = 8;
    cp->copy = TL_COPY_HTOD;
    cp->flags = TL_EV_PAGEABLE;
    cp->value = 4096;
    tl_counter_set(fx_ev(t, host, TL_CAT_COUNTER, "loss", BASE + 60000, 0), 3e-4); /* every digit */
    fx_ev(t, host, TL_CAT_INSTANT, "mark \"q\"\x01\xff", BASE + 70000, 0)->flags = TL_EV_INSTANT;
    tl_event *m = fx_ev(t, host, TL_CAT_MEMORY, NULL, BASE + 80000, 0);
    m->value = 512;
    m->flags = TL_EV_INSTANT | TL_EV_MEM_DEVICE;
    fx_ev(t, host, TL_CAT_USER, "odd args", BASE + 90000, 10)->args =
        tl_intern(&t->strings, "x=1", 3);
    tl_trace_finish(t);
}

static char *write_mem(const tl_trace *t, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    tl_error err = {0};
    int rc = tl_write_chrome_file(t, f, &err);
    fclose(f);
    CHECK_EQ_INT(rc, 0);
    return buf;
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

TEST(output_is_valid_json_with_kineto_header)
{
    tl_trace t;
    build(&t);
    size_t len;
    char *s = write_mem(&t, &len);
    CHECK(json_valid(s));
    CHECK(strstr(s, "\"schemaVersion\":1") != NULL);
    CHECK(strstr(s, "\"distributedInfo\":{\"rank\":1,\"world_size\":4}") != NULL);
    CHECK(strstr(s, "\"displayTimeUnit\":\"ms\"") != NULL);
    CHECK(strstr(s, "\"baseTimeNanoseconds\":1000000000") != NULL);
    CHECK(strstr(s, "\"name\":\"NVIDIA H100\"") != NULL);
    CHECK(strstr(s, "\"numSms\":132") != NULL);
    free(s);
    tl_trace_free(&t);
}

TEST(times_are_microseconds_with_three_decimals)
{
    tl_trace t;
    build(&t);
    size_t len;
    char *s = write_mem(&t, &len);
    /* aten::mm: ts = 1500 ns after the base, dur 20001 ns */
    CHECK(strstr(s, "\"name\":\"aten::mm\",\"pid\":100,\"tid\":101,\"ts\":1.500,\"dur\":20.001") !=
          NULL);
    CHECK(strstr(s, "\"name\":\"ProfilerStep#3\",\"pid\":100,\"tid\":101,\"ts\":0.000,"
                    "\"dur\":100.000") != NULL);
    /* kernel on pid = device 0, tid = stream 7 */
    CHECK(strstr(s,
                 "\"cat\":\"kernel\",\"name\":\"gemm_kernel\",\"pid\":0,\"tid\":7,\"ts\":9.000,"
                 "\"dur\":12.345,\"args\":{\"device\":0,\"stream\":7,\"correlation\":7}") != NULL);
    free(s);
    tl_trace_free(&t);
}

TEST(categories_args_and_names_follow_kineto)
{
    tl_trace t;
    build(&t);
    size_t len;
    char *s = write_mem(&t, &len);
    CHECK(strstr(s, "\"cat\":\"cpu_op\",\"name\":\"aten::mm\"") != NULL);
    CHECK(strstr(s, "\"Input Dims\":[[4, 128], [128, 64]]") != NULL);
    CHECK(strstr(s, "\"args\":\"x=1\"") != NULL);
    CHECK(strstr(s, "\"cat\":\"user_annotation\",\"name\":\"fwd\"") != NULL);
    CHECK(strstr(s, "\"tally category\":\"forward\"") != NULL);
    CHECK(strstr(s, "\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\"") != NULL);
    CHECK(strstr(s, "\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD (Pageable -> Device)\"") !=
          NULL);
    /* 4096 bytes in 1000 ns = 4.096 GB/s */
    CHECK(strstr(s, "\"bytes\":4096,\"memory bandwidth (GB/s)\":4.096") != NULL);
    CHECK(strstr(s, "{\"ph\":\"C\",\"name\":\"loss\",\"pid\":100,\"tid\":101,\"ts\":60.000,"
                    "\"args\":{\"loss\":0.0003}}") != NULL);
    CHECK(
        strstr(s, "\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\"") !=
        NULL);
    CHECK(strstr(s, "\"Device Type\":1,\"Device Id\":0,\"Bytes\":512") != NULL);
    /* escaping: quote, control char, invalid byte -> U+FFFD */
    CHECK(strstr(s, "\"name\":\"mark \\\"q\\\"\\u0001\xef\xbf\xbd\"") != NULL);
    free(s);
    tl_trace_free(&t);
}

TEST(flows_and_metadata)
{
    tl_trace t;
    build(&t);
    size_t len;
    char *s = write_mem(&t, &len);
    CHECK_EQ_INT(count(s, "\"cat\":\"ac2g\""), 4);
    CHECK(strstr(s, "{\"ph\":\"s\",\"id\":7,\"pid\":100,\"tid\":101,\"ts\":2.000,") != NULL);
    CHECK(strstr(s, "{\"ph\":\"f\",\"id\":7,\"pid\":0,\"tid\":7,\"ts\":9.000,") != NULL);
    CHECK(strstr(s, "{\"ph\":\"f\",\"id\":8,\"pid\":0,\"tid\":7,\"ts\":40.000,") != NULL);
    CHECK(strstr(s, "\"args\":{\"name\":\"GPU 0\"}") != NULL);
    CHECK(strstr(s, "\"args\":{\"name\":\"process 100\"}") != NULL);
    CHECK(strstr(s, "\"args\":{\"name\":\"stream 7\"}") != NULL);
    CHECK(strstr(s, "\"args\":{\"name\":\"main\"}") != NULL);
    CHECK_EQ_INT(count(s, "\"thread_sort_index\""), 2);
    free(s);
    tl_trace_free(&t);
}

static int find(const tl_trace *t, const char *name)
{
    for (size_t i = 0; i < t->nev; i++)
        if (!strcmp(tl_str(&t->strings, t->ev[i].name), name))
            return (int)i;
    return -1;
}

TEST(round_trip_through_reader)
{
    tl_trace t;
    build(&t);
    size_t len;
    char *s = write_mem(&t, &len);
    tl_trace r;
    tl_trace_init(&r);
    tl_error err = {0};
    int rc = tl_read_json_mem(&r, s, len, "mem.json", &err);
    CHECK_EQ_INT(rc, 0);
    if (rc == 0) {
        for (size_t i = 0; i < t.nev; i++) {
            const tl_event *a = &t.ev[i];
            if (a->cat == TL_CAT_MEMCPY || a->cat == TL_CAT_MEMORY || a->cat == TL_CAT_INSTANT)
                continue; /* names generated or escaped; checked below */
            int j = find(&r, tl_str(&t.strings, a->name));
            CHECK(j >= 0);
            if (j < 0)
                continue;
            const tl_event *b = &r.ev[j];
            int64_t base = t.ev[0].ts, rbase = r.ev[0].ts;
            CHECK_EQ_INT(b->ts - rbase, a->ts - base);
            CHECK_EQ_INT(b->dur, a->dur);
            CHECK_EQ_INT(b->corr, a->corr);
            if (a->cat == TL_CAT_COUNTER)
                CHECK(tl_counter_value(b) == 3e-4);
            else if (a->cat != TL_CAT_FORWARD) /* the reader maps "tally category"? */
                CHECK_EQ_INT(b->cat, a->cat);
            const tl_track *ta = &t.tracks[a->track], *tb = &r.tracks[b->track];
            CHECK_EQ_INT(tb->kind, ta->kind);
            CHECK_EQ_INT(tb->tid, ta->tid);
        }
        int k = find(&r, "gemm_kernel"), l = find(&r, "cudaLaunchKernel");
        CHECK(k >= 0 && l >= 0);
        if (k >= 0 && l >= 0) {
            CHECK_EQ_INT(r.ev[l].link, k);
            CHECK_EQ_INT(r.ev[k].link, l);
            CHECK_EQ_INT(r.tracks[r.ev[k].track].device, 0);
        }
        int c = find(&r, "Memcpy HtoD (Pageable -> Device)");
        CHECK(c >= 0);
        if (c >= 0) {
            CHECK_EQ_INT(r.ev[c].cat, TL_CAT_MEMCPY);
            CHECK_EQ_INT(r.ev[c].value, 4096);
            CHECK_EQ_INT(r.ev[c].dur, 1000);
        }
        int m = find(&r, "[memory]");
        CHECK(m >= 0);
        if (m >= 0) {
            CHECK_EQ_INT(r.ev[m].cat, TL_CAT_MEMORY);
            CHECK_EQ_INT(r.ev[m].value, 512);
        }
        CHECK(find(&r, "mark \"q\"\x01\xef\xbf\xbd") >= 0);
        CHECK_EQ_INT(r.rank, 1);
        CHECK_EQ_INT(r.world_size, 4);
    }
    tl_trace_free(&r);
    free(s);
    tl_trace_free(&t);
}

TEST(gz_file_is_written)
{
    tl_trace t;
    build(&t);
    char path[64];
    snprintf(path, sizeof path, "/tmp/tally_chrome_test_%d.json.gz", (int)getpid());
    tl_error err = {0};
    CHECK_EQ_INT(tl_write_chrome(&t, path, &err), 0);
    tl_trace r;
    tl_trace_init(&r);
    CHECK_EQ_INT(tl_load(&r, path, 0, &err), 0);
    CHECK(find(&r, "gemm_kernel") >= 0);
    CHECK(find(&r, "aten::mm") >= 0);
    tl_trace_free(&r);
    unlink(path);
    CHECK(tl_write_chrome(&t, "/nonexistent-dir/x.json", &err) != 0);
    tl_trace_free(&t);
}

TEST(empty_trace_and_write_error)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_trace_finish(&t);
    size_t len;
    char *s = write_mem(&t, &len);
    CHECK(json_valid(s));
    CHECK(strstr(s, "\"traceEvents\":[") != NULL);
    CHECK(strstr(s, "distributedInfo") == NULL); /* rank unknown */
    free(s);
    /* a full disk is reported, not ignored */
    FILE *f = fopen("/dev/full", "w");
    if (f) {
        tl_trace_free(&t);
        build(&t);
        tl_error err = {0};
        CHECK(tl_write_chrome_file(&t, f, &err) != 0);
        CHECK(err.msg[0] != 0);
        fclose(f);
    }
    tl_trace_free(&t);
}

int main(void)
{
    RUN(output_is_valid_json_with_kineto_header);
    RUN(times_are_microseconds_with_three_decimals);
    RUN(categories_args_and_names_follow_kineto);
    RUN(flows_and_metadata);
    RUN(round_trip_through_reader);
    RUN(gz_file_is_written);
    RUN(empty_trace_and_write_error);
    return test_summary();
}
