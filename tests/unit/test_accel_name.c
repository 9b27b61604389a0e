/*
 * test_accel_name.c — accelerators are named by what the trace says they are: a Kineto trace
 * from Meta's MTIA (device work of category mtia_ccp_events, runtime mtia_runtime) names its
 * devices "MTIA", a CUDA trace and a trace without device work "GPU".
 */
#include "analysis/views.h"
#include "insight_fixture.h"
#include "testlib.h"
#include "trace/model.h"

#include <string.h>

static const char *accel_of(const char *json)
{
    static char out[16];
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    out[0] = 0;
    if (tl_read_json_mem(&t, json, strlen(json), "t.json", &err) == 0)
        snprintf(out, sizeof out, "%s", tl_accel_name(&t));
    else
        fprintf(stderr, "%s\n", err.msg);
    tl_trace_free(&t);
    return out;
}

TEST(mtia_cuda_and_none)
{
    CHECK_STR(accel_of("{\"traceEvents\": ["
                       "{\"ph\": \"X\", \"cat\": \"mtia_runtime\", \"name\": \"launch\", "
                       "\"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 1},"
                       "{\"ph\": \"X\", \"cat\": \"mtia_ccp_events\", \"name\": \"fc\", "
                       "\"pid\": 9, \"tid\": 1, \"ts\": 2, \"dur\": 5}]}"),
              "MTIA");
    CHECK_STR(accel_of("{\"traceEvents\": ["
                       "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
                       "\"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 1},"
                       "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", "
                       "\"pid\": 0, \"tid\": 7, \"ts\": 2, \"dur\": 5, "
                       "\"args\": {\"device\": 0, \"stream\": 7}}]}"),
              "GPU");
    CHECK_STR(
        accel_of("{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", "
                 "\"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 1}]}"),
        "GPU");
}

/* The device and gpu views and the findings name an MTIA device and its streams "MTIA 9". */
TEST(views_name_mtia_devices)
{
    const char *json = "{\"traceEvents\": ["
                       "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"ProfilerStep#1\", "
                       "\"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 1000},"
                       "{\"ph\": \"X\", \"cat\": \"mtia_runtime\", \"name\": \"launch\", "
                       "\"pid\": 1, \"tid\": 1, \"ts\": 10, \"dur\": 1, "
                       "\"args\": {\"correlation\": 5}},"
                       "{\"ph\": \"X\", \"cat\": \"mtia_ccp_events\", \"name\": \"fc\", "
                       "\"pid\": 9, \"tid\": 1, \"ts\": 20, \"dur\": 100, "
                       "\"args\": {\"device\": 9, \"stream\": 1, \"correlation\": 5}}]}";
    tl_trace t;
    tl_trace_init(&t);
    tl_error err = {{0}};
    CHECK_EQ_INT(tl_read_json_mem(&t, json, strlen(json), "m.json", &err), 0);
    tl_table *tab = tl_view_device(&t, NULL, &err);
    CHECK(tab && tab->nrows >= 1 && !strncmp(fx_s(tab, 0, "name"), "MTIA 9", 6));
    tl_table_free(tab);
    tab = tl_view_gpu(&t, NULL, &err);
    CHECK(tab && tab->nrows >= 1 && !strncmp(fx_s(tab, 0, "name"), "MTIA 9", 6));
    tl_table_free(tab);
    tab = tl_view_findings(&t, NULL, &err);
    int idle = 0;
    for (int r = 0; tab && r < tab->nrows; r++)
        idle |= !strncmp(fx_s(tab, r, "finding"), "MTIA idle", 9);
    CHECK(idle); /* 100 us busy of a 1000 us step */
    tl_table_free(tab);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(mtia_cuda_and_none);
    RUN(views_name_mtia_devices);
    return test_summary();
}
