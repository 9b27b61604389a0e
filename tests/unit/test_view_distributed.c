/* test_view_distributed.c — communication, computation, overlap and exposed communication on
 * hand-made traces with known intervals. */
#include "insight_fixture.h"
#include "testlib.h"

/*
 * Step [0, 30 ms). Stream 7 runs a compute kernel [6, 14) ms; stream 9 runs an NCCL all-reduce
 * [10, 20) ms: overlap 4 ms, exposed 6 ms. A host Communication range [9, 21) ms launches a
 * plain copy kernel on stream 9 at [22, 23) ms: communication too (launched inside it), and
 * exposed (nothing computes then).
 */
static void build(tl_trace *t)
{
    tl_trace_init(t);
    t->rank = 3;
    t->world_size = 8;
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
    uint32_t s9 = tl_trace_track(t, TL_TRACK_STREAM, 1, 9, 0);
    fx_ev(t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 30 * MS);
    fx_launch(t, th, s7, "volta_sgemm_128x64_nn", 5 * MS, 6 * MS, 8 * MS, 1);
    fx_ev(t, th, TL_CAT_COMMUNICATION, "allreduce", 9 * MS, 12 * MS);
    fx_launch(t, th, s9, "ncclKernel_AllReduce_RING_LL_Sum_float", 9500 * US, 10 * MS, 10 * MS, 2);
    fx_launch(t, th, s9, "copy_kernel", 9600 * US, 22 * MS, 1 * MS, 3);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(comm_kernel_names)
{
    CHECK(tl_is_comm_kernel_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)"));
    CHECK(tl_is_comm_kernel_name("ncclDevKernel_AllGather_RING_LL"));
    CHECK(tl_is_comm_kernel_name("RCCL_allreduce"));
    CHECK(tl_is_comm_kernel_name("xccl_broadcast"));
    CHECK(!tl_is_comm_kernel_name("volta_sgemm_128x64_nn"));
    CHECK(!tl_is_comm_kernel_name("Memcpy HtoD (Pageable -> Device)"));
}

TEST(overlap_and_exposed_by_construction)
{
    tl_trace t;
    build(&t);
    tl_comm c;
    CHECK_EQ_INT(tl_comm_compute(&t, &c), 0);
    CHECK_EQ_INT(c.window.total, 30 * MS);
    CHECK_EQ_INT(c.ncomm, 2);
    CHECK_EQ_INT(c.ncomp, 1);
    CHECK_EQ_INT(c.comm, 11 * MS);
    CHECK_EQ_INT(c.comp, 8 * MS);
    CHECK_EQ_INT(c.overlap, 4 * MS);
    CHECK_EQ_INT(c.exposed, 7 * MS);
    CHECK_EQ_INT(c.host_comm, 12 * MS);
    CHECK_EQ_INT(c.nhost, 1);
    tl_trace_free(&t);
}

TEST(view_rows_and_ratios)
{
    tl_trace t;
    build(&t);
    tl_error err = {{0}};
    tl_table *tab = tl_view_distributed(&t, NULL, &err);
    CHECK(tab != NULL);
    if (!tab)
        return;
    CHECK_STR(tab->title, "Distributed (rank 3 of 8)");
    int r = fx_row(tab, "name", "Exposed communication");
    CHECK(r >= 0);
    CHECK_EQ_INT(fx_i(tab, r, "time_us"), 7 * MS);
    CHECK_NEAR(fx_d(tab, r, "ratio_pct"), 100.0 * 7 / 30, 1e-9);
    r = fx_row(tab, "name", "Overlap");
    CHECK_EQ_INT(fx_i(tab, r, "time_us"), 4 * MS);
    r = fx_row(tab, "name", "Communication (GPU)");
    CHECK_EQ_INT(fx_i(tab, r, "calls"), 2);
    r = fx_row(tab, "name", "ProfileStep");
    CHECK_NEAR(fx_d(tab, r, "ratio_pct"), 100.0, 1e-9);
    tl_table_free(tab);
    tl_trace_free(&t);
}

TEST(clipped_to_the_profiled_window)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s9 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 9, 0);
    fx_ev(&t, th, TL_CAT_STEP, "ProfilerStep#1", 10 * MS, 10 * MS);
    fx_launch(&t, th, s9, "ncclKernel_Broadcast", 0, 5 * MS, 10 * MS, 1); /* half inside */
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_comm c;
    CHECK_EQ_INT(tl_comm_compute(&t, &c), 0);
    CHECK_EQ_INT(c.comm, 5 * MS);
    CHECK_EQ_INT(c.exposed, 5 * MS);
    CHECK(c.comm <= c.window.total);
    tl_trace_free(&t);
}

TEST(no_communication_means_no_rows)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
    fx_launch(&t, th, s7, "gemm", 0, 1 * MS, 1 * MS, 1);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_distributed(&t, NULL, &err);
    CHECK(tab != NULL);
    if (tab) {
        CHECK_EQ_INT(tab->nrows, 0);
        CHECK_EQ_INT(tab->nnotes, 1);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

/* Every kernel has zero length (as the reader makes of huge times or negative durations): the
 * interval sets stay empty, which is a report of zeros, not "out of memory". */
TEST(zero_length_kernels_give_a_report)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t s7 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 7, 0);
    uint32_t s9 = tl_trace_track(&t, TL_TRACK_STREAM, 1, 9, 0);
    fx_ev(&t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 30 * MS);
    fx_launch(&t, th, s7, "volta_sgemm_128x64_nn", 1 * MS, 2 * MS, 0, 1);
    fx_launch(&t, th, s9, "ncclKernel_AllReduce_RING_LL_Sum_float", 3 * MS, 4 * MS, 0, 2);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_comm c;
    CHECK_EQ_INT(tl_comm_compute(&t, &c), 0);
    CHECK_EQ_INT(c.ncomm, 1);
    CHECK_EQ_INT(c.ncomp, 1);
    CHECK_EQ_INT(c.comm, 0);
    CHECK_EQ_INT(c.comp, 0);
    CHECK_EQ_INT(c.exposed, 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_distributed(&t, NULL, &err);
    CHECK(tab != NULL);
    CHECK_STR(err.msg, "");
    if (tab) {
        int r = fx_row(tab, "name", "Communication (GPU)");
        CHECK(r >= 0);
        CHECK_EQ_INT(fx_i(tab, r, "calls"), 1);
        CHECK_EQ_INT(fx_i(tab, r, "time_us"), 0);
        tl_table_free(tab);
    }
    tl_trace_free(&t);
}

/* Communication only outside the steps: no rows, and the note says where it is (it said "no
 * communication in this trace"); host ranges outside the window are not counted as its calls. */
TEST(communication_outside_the_steps_is_said)
{
    tl_trace t;
    tl_trace_init(&t);
    uint32_t th = tl_trace_track(&t, TL_TRACK_THREAD, 1, 1, -1);
    fx_ev(&t, th, TL_CAT_STEP, "ProfilerStep#1", 0, 100 * MS);
    fx_ev(&t, th, TL_CAT_OPERATOR, "aten::add", 10 * MS, 10 * MS);
    fx_ev(&t, th, TL_CAT_USER, "gloo:all_reduce", 120 * MS, 30 * MS);
    CHECK_EQ_INT(tl_trace_finish(&t), 0);
    tl_error err = {{0}};
    tl_table *tab = tl_view_distributed(&t, NULL, &err);
    CHECK(tab != NULL && tab->nrows == 0 && tab->nnotes == 1);
    if (tab && tab->nnotes == 1)
        CHECK_STR(tab->notes[0], "No communication in the steps: 0 collective kernels and 1 host "
                                 "communication range lie outside them (--window all counts "
                                 "them).");
    tl_table_free(tab);
    tl_view_opts o = {0};
    o.window_all = 1;
    tab = tl_view_distributed(&t, &o, &err);
    int r = tab ? fx_row(tab, "name", "Communication (host)") : -1;
    CHECK(r >= 0);
    if (r >= 0) {
        CHECK_EQ_INT(fx_i(tab, r, "calls"), 1);
        CHECK_EQ_INT(fx_i(tab, r, "time_us"), 30 * MS);
    }
    tl_table_free(tab);
    tl_trace_free(&t);
}

int main(void)
{
    RUN(comm_kernel_names);
    RUN(overlap_and_exposed_by_construction);
    RUN(view_rows_and_ratios);
    RUN(clipped_to_the_profiled_window);
    RUN(no_communication_means_no_rows);
    RUN(zero_length_kernels_give_a_report);
    RUN(communication_outside_the_steps_is_said);
    return test_summary();
}
