/*
 * test_accel_name.c — accelerators are named by what the trace says they are: a Kineto trace
 * from Meta's MTIA (device work of category mtia_ccp_events, runtime mtia_runtime) names its
 * devices "MTIA", a CUDA trace and a trace without device work "GPU".
 */
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

int main(void)
{
    RUN(mtia_cuda_and_none);
    return test_summary();
}
