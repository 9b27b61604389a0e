/*
 * test_demo_memory.c — the built-in workload's memory, as `tally demo` reports it, against what
 * its configuration says it must be: parameters exactly 4 bytes x the parameter count, gradients
 * the same, AdamW's state twice that, the batch's inputs; the peak in the backward pass; every
 * block a step makes freed by the step's end (no leak); unfused RMSNorm keeping two more
 * [tokens, dim] tensors per call than the fused one; attention's probabilities
 * [batch, heads, seq, seq] per layer.
 *
 * The model's sources are compiled into this test with tally enabled (test_llama_model compiles
 * them with TALLY_DISABLE).
 */
#include "../../examples/llama/kernels.c"
#include "../../examples/llama/llama.c"
#include "../../examples/llama/options.c"
#include "../../examples/llama/pool.c"
#include "llama_tiny.h"

#include "analysis/memory.h"
#include "record_test_util.h"
#include "testlib.h"

#include <sys/stat.h>
#include <unistd.h>

static char dir[128];
static char path[512];

static void on_ready(const tally_window *w, void *user)
{
    (void)user;
    snprintf(path, sizeof path, "%s", w->path);
}

static llama_config tiny(int rmsnorm)
{
    llama_config c = llama_tiny(2);
    c.rmsnorm = rmsnorm;
    return c;
}

/* Three recorded steps of the model (after one that is not) into t; the model's size in *nparams.
 * Returns 0 when the trace was read. */
static int profile(const llama_config *c, const char *name, tl_trace *t, size_t *nparams)
{
    char err[128];
    llama_model *m = llama_create(c, err, sizeof err);
    CHECK(m != NULL);
    if (!m)
        return -1;
    *nparams = llama_param_count(m);
    tally_config tc = bench_config(dir, name, on_ready);
    tc.skip_first = 1;
    tc.active = 3;
    tc.repeat = 1;
    path[0] = 0;
    CHECK_EQ_INT(tally_start(&tc), 0);
    for (int i = 0; i < 4; i++)
        llama_step(m, i);
    CHECK_EQ_INT(tally_stop(), 0);
    llama_free(m);
    return path[0] ? record_load(t, path) : -1;
}

/* Bytes of the blocks alive at d's peak whose name ends with suffix. */
static int64_t at_peak_named(const tl_trace *t, const tl_mem *m, const tl_mem_device *d,
                             const char *suffix)
{
    int64_t sum = 0;
    size_t ns = strlen(suffix);
    for (size_t i = 0; i < m->nblocks; i++) {
        const tl_mem_block *b = &m->blocks[i];
        const char *n = tl_str(&t->strings, b->name);
        size_t len = strlen(n);
        if (tl_mem_alive_at_peak(b, d) && len >= ns && !strcmp(n + len - ns, suffix))
            sum += b->bytes;
    }
    return sum;
}

static int64_t act_unfused, act_fused;

static void check_run(int rmsnorm)
{
    llama_config c = tiny(rmsnorm);
    tl_trace t;
    size_t nparams = 0;
    if (profile(&c, rmsnorm == LLAMA_RMSNORM_FUSED ? "fused" : "unfused", &t, &nparams) != 0)
        return;
    CHECK_EQ_INT(t.mem_unmatched_frees, 0);
    CHECK_EQ_INT(t.mem_reused, 0);
    tl_mem m;
    CHECK_EQ_INT(tl_mem_compute(&t, &m), 0);
    const tl_mem_device *d = tl_mem_device_of(&m, -1);
    CHECK(d != NULL);
    if (d) {
        int64_t T = (int64_t)c.batch * c.seq;
        CHECK(d->timeline);
        CHECK_EQ_INT(d->at_peak[TL_MEM_PARAMETER], 4 * (int64_t)nparams);
        CHECK_EQ_INT(d->at_peak[TL_MEM_GRADIENT], 4 * (int64_t)nparams);
        CHECK_EQ_INT(d->at_peak[TL_MEM_OPTIMIZER_STATE], 2 * 4 * (int64_t)nparams);
        CHECK_EQ_INT(d->at_peak[TL_MEM_INPUT], 2 * T * 4);
        CHECK_EQ_INT(d->at_peak[TL_MEM_OTHER], 0);
        CHECK_EQ_INT(d->at_peak_unknown, 0);
        /* the model's memory is there from the start; each step gives back what it took */
        CHECK_EQ_INT(d->alloc_start, 4 * 4 * (int64_t)nparams + 2 * T * 4);
        CHECK_EQ_INT(d->alloc_end, d->alloc_start);
        CHECK_EQ_INT(d->leak, 0);
        CHECK_EQ_INT(d->allocs, d->frees);
        /* the peak: in a backward pass, when the logits' gradient joins the saved activations */
        int in_backward = 0;
        for (size_t i = 0; i < t.nev; i++)
            in_backward |= t.ev[i].cat == TL_CAT_BACKWARD && t.ev[i].ts <= d->peak_ts &&
                           d->peak_ts < t.ev[i].ts + t.ev[i].dur;
        CHECK(in_backward);
        CHECK_EQ_INT(d->at_peak[TL_MEM_TEMPORARY], T * c.vocab * 4);
        CHECK_EQ_INT(at_peak_named(&t, &m, d, "lm_head.grad_out"), T * c.vocab * 4);
        /* attention's probabilities: [batch, heads, seq, seq] floats per layer */
        CHECK_EQ_INT(at_peak_named(&t, &m, d, ".attention.probs"),
                     (int64_t)c.layers * c.batch * c.heads * c.seq * c.seq * 4);
        if (rmsnorm == LLAMA_RMSNORM_FUSED)
            act_fused = d->at_peak[TL_MEM_ACTIVATION];
        else
            act_unfused = d->at_peak[TL_MEM_ACTIVATION];
        /* names make the layout tree */
        tl_mem_tree l;
        CHECK_EQ_INT(tl_mem_tree_build(&t, &m, d, TL_MEM_PARAMETER, &l), 0);
        CHECK_EQ_INT(l.n[0].total, 4 * (int64_t)nparams);
        int found = 0;
        for (size_t k = l.n[0].first; k; k = l.n[k].next)
            found |= l.n[k].len == 6 && !memcmp(l.n[k].comp, "layers", 6);
        CHECK(found);
        tl_mem_tree_free(&l);
    }
    tl_mem_free(&m);
    tl_trace_free(&t);
}

TEST(unfused_run)
{
    check_run(LLAMA_RMSNORM_UNFUSED);
}

TEST(fused_run)
{
    check_run(LLAMA_RMSNORM_FUSED);
}

/* Unfused, each of the 2 * layers + 1 norms keeps rsqrt's output and x * rsqrt, [tokens, dim]
 * floats each, until its backward: all of them are alive at the peak. */
TEST(fused_rmsnorm_lowers_the_activation_peak)
{
    llama_config c = tiny(0);
    int64_t T = (int64_t)c.batch * c.seq;
    CHECK_EQ_INT(act_unfused - act_fused, 2 * (2 * c.layers + 1) * T * c.dim * 4);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tally-test-demo-memory-%d", (int)getpid());
    mkdir(dir, 0755);
    RUN(unfused_run);
    RUN(fused_run);
    RUN(fused_rmsnorm_lowers_the_activation_peak);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return test_summary();
}
