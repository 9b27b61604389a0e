/*
 * test_hostile_input.c — inputs built to break the readers, the model and the writer: ids that
 * collide in a weak hash, flows over many threads, times and sizes at the int64 limits, invalid
 * JSON where the reader skips values, unmatched ends. Each test knows its answer by
 * construction; the CI runs it under ASan+UBSan, so an overflow is a failure too.
 */
#include "testlib.h"
#include "trace/model.h"

#include <stdlib.h>

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

int main(void)
{
    RUN(colliding_correlation_ids_link_each_kernel_to_its_call);
    RUN(flows_over_many_threads_link_each_kernel_to_its_call);
    return test_summary();
}
