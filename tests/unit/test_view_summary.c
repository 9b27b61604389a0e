/*
 * test_view_summary.c — the whole report: the short summary on a trace without steps, every
 * view in json (valid, one key per table), the loss counters as warnings, and the errors for an
 * unknown view or sort key.
 */
#include "json_check.h"
#include "report/summary.h"
#include "testlib.h"
#include "views_fixture.h"

#include <stdlib.h>

static char *report(const tl_trace *t, const tl_report_opts *o, int *rc, tl_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    *rc = tl_report_write(f, t, o, err);
    fclose(f);
    return buf;
}

TEST(summary_without_steps)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t a = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_event(&t, a, TL_CAT_USER, "work", 0, 40, 0);
    fx_event(&t, a, TL_CAT_USER, "inner", 10, 20, 0);
    tl_trace_finish(&t);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = tl_summary_print(f, &t);
    fclose(f);
    CHECK_EQ_INT(rc, 0);
    CHECK(strstr(buf, "Overview") != NULL);
    CHECK(strstr(buf, "No steps in this trace") != NULL);
    CHECK(strstr(buf, "UserDefined Summary") != NULL);
    CHECK(strstr(buf, "40.000ms") != NULL); /* the "work" range */
    CHECK(strstr(buf, "Perf Summary") != NULL);
    CHECK(strstr(buf, "Trace: ") == buf); /* the header line comes first */
    free(buf);
    tl_trace_free(&t);
}

TEST(empty_trace_summary)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_trace_finish(&t);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_EQ_INT(tl_summary_print(f, &t), 0);
    fclose(f);
    CHECK(strstr(buf, "Overview") != NULL);
    free(buf);
    tl_trace_free(&t);
}

TEST(json_report_is_valid)
{
    tl_trace t;
    fx_gpu(&t);
    t.dropped = 5;
    t.bad_pops = 2;
    tl_report_opts o;
    memset(&o, 0, sizeof o);
    o.fmt = TL_FMT_JSON;
    o.views = "overview,model,perf,ranges";
    tl_error err = {{0}};
    int rc;
    char *buf = report(&t, &o, &rc, &err);
    CHECK_EQ_INT(rc, 0);
    CHECK(json_valid(buf));
    CHECK(strstr(buf, "\"overview\":") != NULL);
    CHECK(strstr(buf, "\"overview_gpu\":") != NULL);
    CHECK(strstr(buf, "\"model\":") != NULL);
    CHECK(strstr(buf, "\"model_steps\":") != NULL);
    CHECK(strstr(buf, "\"model_steps_gpu\":") != NULL);
    CHECK(strstr(buf, "\"perf\":") != NULL);
    CHECK(strstr(buf, "\"perf_ips\":") != NULL);
    CHECK(strstr(buf, "\"ranges\":") != NULL);
    CHECK(strstr(buf, "5 records dropped") != NULL);
    CHECK(strstr(buf, "2 pops without") != NULL);
    /* gpu_time_us of Kernel: 64 ms = 64000 us, a plain number */
    CHECK(
        strstr(buf,
               "\"type\": \"Kernel\", \"type_level\": 0, \"calls\": 5, \"gpu_time_us\": 64000,") !=
        NULL);
    free(buf);
    tl_trace_free(&t);
}

TEST(text_report_order_and_warnings)
{
    tl_trace t;
    fx_training(&t);
    t.unclosed = 1;
    tl_report_opts o;
    memset(&o, 0, sizeof o);
    o.views = "ranges,overview"; /* printed in the fixed order all the same */
    tl_error err = {{0}};
    int rc;
    char *buf = report(&t, &o, &rc, &err);
    CHECK_EQ_INT(rc, 0);
    char *ov = strstr(buf, "Overview"), *rg = strstr(buf, "UserDefined Summary");
    CHECK(ov && rg && ov < rg);
    CHECK(strstr(buf, "warning: 1 range never closed (still open when recording ended") != NULL);
    CHECK(strstr(buf, "Model Summary") == NULL);
    free(buf);
    tl_trace_free(&t);
}

TEST(errors_unknown_view_and_sort)
{
    tl_trace t;
    fx_training(&t);
    tl_report_opts o;
    memset(&o, 0, sizeof o);
    o.views = "overview,bogus";
    tl_error err = {{0}};
    int rc;
    char *buf = report(&t, &o, &rc, &err);
    CHECK_EQ_INT(rc, -1);
    CHECK(strstr(err.msg, "unknown view 'bogus'") != NULL);
    CHECK(buf == NULL || buf[0] == '\0'); /* nothing written */
    free(buf);
    o.views = "ranges";
    o.vo.sort = "nonsense";
    buf = report(&t, &o, &rc, &err);
    CHECK_EQ_INT(rc, -1);
    CHECK(strstr(err.msg, "nonsense") != NULL);
    CHECK(buf == NULL || buf[0] == '\0');
    free(buf);
    o.views = "overview";
    o.vo.sort = "total";
    buf = report(&t, &o, &rc, &err);
    CHECK_EQ_INT(rc, -1); /* overview does not sort */
    free(buf);
    o.views = "overview,ranges";
    o.vo.sort = "self";
    buf = report(&t, &o, &rc, &err);
    CHECK_EQ_INT(rc, 0);
    free(buf);
    CHECK(tl_view_lookup("OVERVIEW") != NULL);
    CHECK(tl_view_lookup("nope") == NULL);
    tl_trace_free(&t);
}

TEST(csv_report_parses)
{
    tl_trace t;
    fx_training(&t);
    tl_report_opts o;
    memset(&o, 0, sizeof o);
    o.fmt = TL_FMT_CSV;
    o.views = "perf";
    tl_error err = {{0}};
    int rc;
    char *buf = report(&t, &o, &rc, &err);
    CHECK_EQ_INT(rc, 0);
    /* two tables (perf, perf_ips): one header row, the union of their columns after "view" */
    CHECK(strncmp(buf,
                  "view,name,steps,avg_us,max_us,min_us,total_us,ratio_pct,unit,avg,max,min,"
                  "samples\n"
                  "perf,batch_cost,3,100000,120000,80000,300000,100,,,,,\n",
                  strlen("view,name,steps,avg_us,max_us,min_us,total_us,ratio_pct,unit,avg,max,"
                         "min,samples\nperf,batch_cost,3,100000,120000,80000,300000,100,,,,,\n")) ==
          0);
    CHECK(strstr(buf, "\nperf_ips,,,,,,,,steps/s,10,12.5,") != NULL);
    CHECK(strchr(buf, '#') == NULL);
    free(buf);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(summary_without_steps);
    RUN(empty_trace_summary);
    RUN(json_report_is_valid);
    RUN(text_report_order_and_warnings);
    RUN(errors_unknown_view_and_sort);
    RUN(csv_report_parses);
    return test_summary();
}
