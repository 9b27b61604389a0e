/*
 * test_model_torch.c — the Model view on PyTorch traces, whose phases come from what PyTorch
 * records: enumerate(DataLoader)#... (Dataloader), Optimizer.step#... (Optimization),
 * autograd's evaluate_function ranges or autograd node names (Backward), module or
 * DistributedDataParallel.forward ranges — else the step thread's top-level operators before
 * the backward — (Forward). Durations known by construction, in ms.
 */
#include "testlib.h"
#include "views_fixture.h"

/*
 * One step [0,100) on thread 1, the autograd thread 2:
 *   thread 1: enumerate(DataLoader) [0,10); aten::conv2d [10,30) holding aten::relu [12,14);
 *             aten::mse_loss [30,40); (backward runs on thread 2 from 50); aten::zeros [76,78)
 *             after it; Optimizer.step#SGD.step [80,95)
 *   thread 2: evaluate_function: AddmmBackward0 [50,60) holding aten::mm [52,58),
 *             evaluate_function: torch::autograd::AccumulateGrad [62,75)
 * with_ddp: a DistributedDataParallel.forward annotation [10,45) on thread 1.
 */
static void torch_step(tl_trace *t, int with_ddp, int old_names)
{
    tl_trace_init(t);
    uint32_t a = tl_trace_track(t, TL_TRACK_THREAD, 100, 1, -1);
    uint32_t b = tl_trace_track(t, TL_TRACK_THREAD, 100, 2, -1);
    fx_step(t, a, 0, 0, 100);
    fx_event(t, a, TL_CAT_DATALOADER, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
             0, 10, 0);
    if (with_ddp)
        fx_event(t, a, TL_CAT_USER, "DistributedDataParallel.forward", 10, 45, 0);
    fx_event(t, a, TL_CAT_OPERATOR, "aten::conv2d", 10, 30, 0);
    fx_event(t, a, TL_CAT_OPERATOR, "aten::relu", 12, 14, 0);
    fx_event(t, a, TL_CAT_OPERATOR, "aten::mse_loss", 30, 40, 0);
    fx_event(t, a, TL_CAT_OPERATOR, "aten::zeros", 76, 78, 0);
    fx_event(t, a, TL_CAT_OPTIMIZER, "Optimizer.step#SGD.step", 80, 95, 0);
    if (old_names) { /* PyTorch 1.x: the nodes themselves, no evaluate_function */
        fx_event(t, b, TL_CAT_OPERATOR, "AddmmBackward", 50, 60, 0);
        fx_event(t, b, TL_CAT_OPERATOR, "torch::autograd::AccumulateGrad", 62, 75, 0);
    } else {
        fx_event(t, b, TL_CAT_OPERATOR, "autograd::engine::evaluate_function: AddmmBackward0", 50,
                 60, 0);
        fx_event(t, b, TL_CAT_OPERATOR,
                 "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 62, 75, 0);
    }
    fx_event(t, b, TL_CAT_OPERATOR, "aten::mm", 52, 58, 0);
    t->source = TL_SRC_KINETO;
    tl_trace_finish(t);
}

static void check_phases(const tl_trace *t, int64_t load, int64_t fwd, int64_t bwd, int64_t opt,
                         int64_t other)
{
    tl_table *m = tl_view_model(t, NULL, NULL);
    CHECK(m != NULL && m->next != NULL);
    if (!m || !m->next) {
        tl_table_free(m);
        return;
    }
    const tl_table *ps = m->next; /* model_steps: one step, no average */
    CHECK_EQ_INT(ps->nrows, 1);
    CHECK_EQ_INT(fx_cell(ps, 0, "dataloader_us")->i, load);
    CHECK_EQ_INT(fx_cell(ps, 0, "forward_us")->i, fwd);
    CHECK_EQ_INT(fx_cell(ps, 0, "backward_us")->i, bwd);
    CHECK_EQ_INT(fx_cell(ps, 0, "optimization_us")->i, opt);
    CHECK_EQ_INT(fx_cell(ps, 0, "other_us")->i, other);
    tl_table_free(m);
}

/* No module range: the forward is conv2d and mse_loss (top level, before the backward starts at
 * 50), not aten::zeros after it; backward = the two evaluate_function ranges (aten::mm inside
 * counts once); Other = 100 - (10 + 30 + 23 + 15). */
TEST(model_torch_phases_from_evaluate_function)
{
    tl_trace t;
    torch_step(&t, 0, 0);
    check_phases(&t, MS(10), MS(30), MS(23), MS(15), MS(22));
    tl_trace_free(&t);
}

/* DistributedDataParallel.forward is the forward: [10,45), its operators inside it. */
TEST(model_torch_ddp_forward)
{
    tl_trace t;
    torch_step(&t, 1, 0);
    check_phases(&t, MS(10), MS(35), MS(23), MS(15), MS(17));
    tl_trace_free(&t);
}

/* PyTorch 1.x names the autograd nodes themselves (AddmmBackward, AccumulateGrad). */
TEST(model_torch_old_autograd_names)
{
    tl_trace t;
    torch_step(&t, 0, 1);
    check_phases(&t, MS(10), MS(30), MS(23), MS(15), MS(22));
    tl_trace_free(&t);
}

/* A tally trace with the same names gets none of this: its phases are its own categories. */
TEST(model_tally_trace_keeps_its_categories)
{
    tl_trace t;
    torch_step(&t, 1, 0);
    t.source = TL_SRC_TALLY;
    check_phases(&t, MS(10), 0, 0, MS(15), MS(75));
    tl_trace_free(&t);
}

int main(void)
{
    RUN(model_torch_phases_from_evaluate_function);
    RUN(model_torch_ddp_forward);
    RUN(model_torch_old_autograd_names);
    RUN(model_tally_trace_keeps_its_categories);
    return test_summary();
}
