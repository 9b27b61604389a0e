/*
 * test_accel_name.c — accelerators are named by what the trace says they are: a Kineto trace
 * from Meta's MTIA (device work of category mtia_ccp_events, runtime mtia_runtime) names its
 * devices "MTIA", a CUDA trace and a trace without device work "GPU".
 */
#include "analysis/views.h"
#include "report/summary.h"
#include "insight_fixture.h"
#include "testlib.h"
#include "trace/model.h"

#include <ctype.h>
#include <stdlib.h>
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

/* The renaming itself: titles, column titles and notes; never keys or rows (names from the
 * trace); whole words only; nothing for "GPU". */
TEST(tables_name_the_accelerator)
{
    static const tl_col cols[] = {{"Name", "name", TL_COL_STR, 1},
                                  {"Self CUDA %", "self_cuda_pct", TL_COL_PCT, 0},
                                  {"GPU Total", "gpu_total_us", TL_COL_TIME, 0},
                                  {"GPUs", "gpus", TL_COL_INT, 0}};
    for (int k = 0; k < 2; k++) {
        tl_table *t = tl_table_new("Overview (GPU)", "overview_gpu", cols, 4);
        CHECK(t != NULL);
        if (!t)
            return;
        int r = tl_table_add_row(t);
        tl_table_str(t, r, 0, "copy to GPU");
        tl_table_note(t, "GPU time is the union; Self CUDA time total: 1 s; nvgpu_x stays");
        CHECK_EQ_INT(tl_table_name_accel(t, k ? "MTIA" : "GPU"), 0);
        CHECK_STR(t->title, k ? "Overview (MTIA)" : "Overview (GPU)");
        CHECK_STR(t->cols[1].title, k ? "Self MTIA %" : "Self CUDA %");
        CHECK_STR(t->cols[2].title, k ? "MTIA Total" : "GPU Total");
        CHECK_STR(t->cols[3].title, "GPUs"); /* not the word */
        CHECK_STR(t->cols[1].key, "self_cuda_pct");
        CHECK_STR(t->cols[2].key, "gpu_total_us");
        CHECK_STR(fx_s(t, 0, "name"), "copy to GPU"); /* a row: the trace's name */
        CHECK_STR(t->notes[0],
                  k ? "MTIA time is the union; Self MTIA time total: 1 s; nvgpu_x stays"
                    : "GPU time is the union; Self CUDA time total: 1 s; nvgpu_x stays");
        tl_table_free(t);
    }
}

/* Whether text holds the word w (not inside a longer word). */
static int has_word(const char *text, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = strstr(text, w); p; p = strstr(p + 1, w))
        if ((p == text || !isalnum((unsigned char)p[-1])) && !isalnum((unsigned char)p[n]) &&
            p[n] != '_')
            return 1;
    return 0;
}

/* The whole default report of an MTIA trace says MTIA, never GPU or CUDA (its names hold
 * neither word); a CUDA trace's says GPU and CUDA as before. */
TEST(a_report_of_an_mtia_trace_says_mtia)
{
    const char *json[2] = {"{\"traceEvents\": ["
                           "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"ProfilerStep#1\", "
                           "\"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 1000},"
                           "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", "
                           "\"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": 20},"
                           "{\"ph\": \"X\", \"cat\": \"mtia_runtime\", \"name\": \"launch\", "
                           "\"pid\": 1, \"tid\": 1, \"ts\": 10, \"dur\": 1, "
                           "\"args\": {\"correlation\": 5}},"
                           "{\"ph\": \"X\", \"cat\": \"mtia_ccp_events\", \"name\": \"fc\", "
                           "\"pid\": 9, \"tid\": 1, \"ts\": 20, \"dur\": 100, "
                           "\"args\": {\"device\": 9, \"stream\": 1, \"correlation\": 5}}]}",
                           NULL};
    char cuda[2048];
    snprintf(cuda, sizeof cuda, "%s", json[0]);
    /* the same trace from a CUDA device */
    const char *from[] = {"mtia_runtime", "mtia_ccp_events"}, *to[] = {"cuda_runtime", "kernel"};
    for (int k = 0; k < 2; k++) {
        char *p = strstr(cuda, from[k]), tmp[2048];
        if (!p)
            continue;
        snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)(p - cuda), cuda, to[k], p + strlen(from[k]));
        snprintf(cuda, sizeof cuda, "%s", tmp);
    }
    json[1] = cuda;
    for (int k = 0; k < 2; k++) {
        tl_trace t;
        tl_trace_init(&t);
        tl_error err = {{0}};
        CHECK_EQ_INT(tl_read_json_mem(&t, json[k], strlen(json[k]), "m.json", &err), 0);
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        CHECK(f != NULL);
        if (!f) {
            tl_trace_free(&t);
            return;
        }
        tl_report_opts o;
        memset(&o, 0, sizeof o);
        o.fmt = TL_FMT_TEXT;
        o.unit = TL_UNIT_AUTO;
        CHECK_EQ_INT(tl_report_write(f, &t, &o, &err), 0);
        fclose(f);
        if (k == 0) {
            CHECK(!has_word(text, "GPU"));
            CHECK(!has_word(text, "CUDA"));
            CHECK(strstr(text, "MtiaRuntime") != NULL);
            CHECK(strstr(text, "Self MTIA") != NULL);
            CHECK(strstr(text, "MTIA Timeline") != NULL);
        } else {
            CHECK(strstr(text, "CudaRuntime") != NULL);
            CHECK(strstr(text, "Self CUDA") != NULL);
            CHECK(strstr(text, "GPU Timeline") != NULL);
            CHECK(!has_word(text, "MTIA"));
        }
        if (k == 0 && (has_word(text, "GPU") || has_word(text, "CUDA")))
            fputs(text, stderr);
        free(text);
        tl_trace_free(&t);
    }
}

int main(void)
{
    RUN(mtia_cuda_and_none);
    RUN(views_name_mtia_devices);
    RUN(tables_name_the_accelerator);
    RUN(a_report_of_an_mtia_trace_says_mtia);
    return test_summary();
}
