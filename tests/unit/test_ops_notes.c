/*
 * test_ops_notes.c — the notes under the ops table that explain what would otherwise puzzle:
 *   - --group-by-shape on a trace without input shapes says so (and not on one with shapes);
 *   - Self CUDA % above 100% (a GPU annotation's span over the device work, PyTorch's meaning)
 *     is explained, and the value stays PyTorch's: 10 ms of annotation over 1 ms of kernel is
 *     1000%.
 */
#include "analysis/views.h"
#include "insight_fixture.h"
#include "testlib.h"

static int has_note(const tl_table *t, const char *part)
{
    for (int i = 0; t && i < t->nnotes; i++)
        if (strstr(t->notes[i], part))
            return 1;
    return 0;
}

/* aten::mm twice; with shapes, the two calls carry different input shapes. */
static void build_mm(tl_trace *t, int shapes)
{
    tl_trace_init(t);
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    static const char *const dims[2] = {"[[64, 10], [10, 10]]", "[[32, 10], [10, 10]]"};
    for (int i = 0; i < 2; i++) {
        tl_event *e = fx_ev(t, th, TL_CAT_OPERATOR, "aten::mm", i * MS, 100 * US);
        if (shapes)
            e->args = tl_intern(&t->strings, dims[i], strlen(dims[i]));
    }
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

TEST(group_by_shape_without_shapes_says_so)
{
    tl_view_opts o = {0};
    o.group_by_shape = 1;
    for (int shapes = 0; shapes < 2; shapes++) {
        tl_trace t;
        build_mm(&t, shapes);
        tl_error err = {{0}};
        tl_table *tab = tl_view_ops(&t, &o, &err);
        CHECK(tab != NULL);
        CHECK_EQ_INT(tab ? tab->nrows : -1, shapes ? 2 : 1);
        CHECK_EQ_INT(has_note(tab, "no input shapes"), !shapes);
        tl_table_free(tab);
        tl_trace_free(&t);
    }
}

/* One kernel of 1 ms launched by aten::mm; with annot, a GPU annotation of 10 ms around it. */
static void build_annot(tl_trace *t, int annot)
{
    tl_trace_init(t);
    uint32_t th = tl_trace_track(t, TL_TRACK_THREAD, 1, 1, -1);
    uint32_t st = tl_trace_track(t, TL_TRACK_STREAM, 1, 7, 0);
    fx_ev(t, th, TL_CAT_OPERATOR, "aten::mm", 0, 2 * MS);
    fx_launch(t, th, st, "sgemm", 100 * US, 5 * MS, 1 * MS, 1);
    if (annot)
        fx_ev(t, st, TL_CAT_GPU_USER, "model.forward", 1 * MS, 10 * MS);
    CHECK_EQ_INT(tl_trace_finish(t), 0);
}

static int row_of(const tl_table *t, const char *name)
{
    for (int r = 0; r < t->nrows; r++)
        if (!strcmp(fx_s(t, r, "name"), name))
            return r;
    return -1;
}

TEST(self_cuda_pct_over_100_is_explained_and_kept)
{
    for (int annot = 0; annot < 2; annot++) {
        tl_trace t;
        build_annot(&t, annot);
        tl_error err = {{0}};
        tl_table *tab = tl_view_ops(&t, NULL, &err);
        CHECK(tab != NULL);
        if (!tab)
            continue;
        int k = row_of(tab, "sgemm");
        CHECK(k >= 0);
        CHECK_NEAR(fx_d(tab, k, "self_cuda_pct"), 100.0, 1e-9);
        if (annot) {
            int r = row_of(tab, "model.forward");
            CHECK(r >= 0);
            CHECK_EQ_INT(fx_i(tab, r, "self_cuda_us"), 10 * MS);
            CHECK_NEAR(fx_d(tab, r, "self_cuda_pct"), 1000.0, 1e-9);
        }
        CHECK_EQ_INT(has_note(tab, "Self CUDA % passes 100% on 1 row (model.forward)"), annot);
        tl_table_free(tab);
        tl_trace_free(&t);
    }
}

int main(void)
{
    RUN(group_by_shape_without_shapes_says_so);
    RUN(self_cuda_pct_over_100_is_explained_and_kept);
    return test_summary();
}
