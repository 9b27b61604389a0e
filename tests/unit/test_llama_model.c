/*
 * test_llama_model.c — the built-in workload computes what it claims: deterministic and finite
 * outputs (the same for any thread count), the fused and unfused RMSNorm agree with each other
 * and with a double-precision reference, decoding with the KV cache gives the logits of a full
 * recomputation, the exact parts of the backward pass agree with finite differences, the
 * optimizer lowers the loss of a batch it keeps seeing, and the thread pool runs every task once.
 *
 * The model's sources are compiled into this test with TALLY_DISABLE, which also checks that
 * the workload builds with every tally macro compiled away.
 */
#define TALLY_DISABLE 1
#include "../../examples/llama/kernels.c"
#include "../../examples/llama/llama.c"
#include "../../examples/llama/options.c"
#include "../../examples/llama/pool.c"
#include "llama_tiny.h"

#include "testlib.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

static void fill_tokens(int32_t *t, int n, int vocab, uint64_t seed)
{
    for (int i = 0; i < n; i++)
        t[i] = (int32_t)(k_mix(seed + (uint64_t)i) % (uint64_t)vocab);
}

TEST(forward_is_deterministic_finite_and_thread_independent)
{
    llama_config c1 = llama_tiny(1), c3 = llama_tiny(3);
    char err[128];
    llama_model *a = llama_create(&c1, err, sizeof err), *b = llama_create(&c3, err, sizeof err);
    CHECK(a && b);
    if (!a || !b)
        return;
    int n = c1.batch * c1.seq;
    int32_t tok[64];
    fill_tokens(tok, n, c1.vocab, 1);
    size_t nl = (size_t)n * c1.vocab;
    float *la = malloc(nl * sizeof *la);
    const float *out = llama_forward(a, tok, c1.batch, c1.seq, 0);
    CHECK(out != NULL);
    memcpy(la, out, nl * sizeof *la);
    const float *lb = llama_forward(b, tok, c1.batch, c1.seq, 0);
    int finite = 1, same = 1, nonconst = 0;
    for (size_t i = 0; i < nl; i++) {
        finite &= isfinite(la[i]) != 0;
        same &= la[i] == lb[i];
        nonconst |= la[i] != la[0];
    }
    CHECK(finite);
    CHECK(same); /* bit-identical: every element is summed in one order whatever the split */
    CHECK(nonconst);
    /* a second forward of the same input gives the same logits */
    out = llama_forward(a, tok, c1.batch, c1.seq, 0);
    CHECK(memcmp(out, la, nl * sizeof *la) == 0);
    /* two steps from the same seed: the same losses */
    float a0 = llama_step(a, 0), a1 = llama_step(a, 1);
    float b0 = llama_step(b, 0), b1 = llama_step(b, 1);
    CHECK(a0 == b0 && a1 == b1);
    CHECK(isfinite(a0) && isfinite(a1));
    /* random weights, random tokens: close to the uniform guess ln(vocab) */
    CHECK_NEAR(a0, log(c1.vocab), 1.0);
    free(la);
    llama_free(a);
    llama_free(b);
}

TEST(fused_and_unfused_rmsnorm_agree)
{
    enum { ROWS = 37, DIM = 100 }; /* not multiples of the vector width */
    float *x = malloc(sizeof(float) * ROWS * DIM), *w = malloc(sizeof(float) * DIM);
    float *f = malloc(sizeof(float) * ROWS * DIM), *u = malloc(sizeof(float) * ROWS * DIM);
    float *scratch = malloc(sizeof(float) * (2 * ROWS * DIM + 3 * ROWS));
    for (int i = 0; i < ROWS * DIM; i++)
        x[i] = 3.0f * k_uniform(k_mix((uint64_t)i)) + (i % DIM == 0 ? 5.0f : 0.0f);
    for (int i = 0; i < DIM; i++)
        w[i] = 1.0f + 0.5f * k_uniform(k_mix(1000u + (uint64_t)i));
    llama_rmsnorm_fused(f, x, w, ROWS, DIM, 1e-5f);
    llama_rmsnorm_unfused(u, x, w, ROWS, DIM, 1e-5f, scratch);
    double worst_fu = 0, worst_ref = 0;
    for (int r = 0; r < ROWS; r++) {
        double ss = 0;
        for (int i = 0; i < DIM; i++)
            ss += (double)x[r * DIM + i] * x[r * DIM + i];
        double rs = 1.0 / sqrt(ss / DIM + 1e-5);
        for (int i = 0; i < DIM; i++) {
            double ref = x[r * DIM + i] * rs * w[i];
            double d1 = fabs(f[r * DIM + i] - u[r * DIM + i]);
            double d2 = fabs(f[r * DIM + i] - ref) / (1.0 + fabs(ref));
            worst_fu = d1 > worst_fu ? d1 : worst_fu;
            worst_ref = d2 > worst_ref ? d2 : worst_ref;
        }
    }
    CHECK(worst_fu <= 1e-5);
    CHECK(worst_ref <= 1e-5);
    /* and inside the model: the same logits either way */
    llama_config c = llama_tiny(2);
    char err[128];
    llama_model *m = llama_create(&c, err, sizeof err);
    CHECK(m != NULL);
    if (m) {
        int32_t tok[16];
        fill_tokens(tok, 16, c.vocab, 3);
        float lf[16 * 64];
        llama_set_rmsnorm(m, LLAMA_RMSNORM_FUSED);
        memcpy(lf, llama_forward(m, tok, 1, 16, 0), sizeof lf);
        llama_set_rmsnorm(m, LLAMA_RMSNORM_UNFUSED);
        const float *lu = llama_forward(m, tok, 1, 16, 0);
        double worst = 0;
        for (int i = 0; i < 16 * 64; i++)
            worst = fabs(lf[i] - lu[i]) > worst ? fabs(lf[i] - lu[i]) : worst;
        CHECK(worst <= 1e-5);
        llama_free(m);
    }
    free(x), free(w), free(f), free(u), free(scratch);
}

TEST(kv_cache_decode_matches_recomputation)
{
    llama_config c = llama_tiny(2);
    char err[128];
    llama_model *m = llama_create(&c, err, sizeof err);
    CHECK(m != NULL);
    if (!m)
        return;
    int S = c.seq, V = c.vocab;
    int32_t tok[2 * 16];
    fill_tokens(tok, 2 * S, V, 11);
    /* full recomputation: both sequences, every position */
    float *full = malloc(sizeof(float) * 2 * S * V);
    memcpy(full, llama_forward(m, tok, 2, S, 0), sizeof(float) * 2 * S * V);
    /* incremental: a prefix of S-4 tokens, then one token at a time from the cache */
    int32_t prefix[2 * 16], step_tok[2];
    for (int b = 0; b < 2; b++)
        memcpy(prefix + b * (S - 4), tok + b * S, sizeof(int32_t) * (S - 4));
    CHECK(llama_forward(m, prefix, 2, S - 4, 0) != NULL);
    double worst = 0;
    for (int pos = S - 4; pos < S; pos++) {
        step_tok[0] = tok[pos];
        step_tok[1] = tok[S + pos];
        const float *lg = llama_forward(m, step_tok, 2, 1, pos);
        CHECK(lg != NULL);
        if (!lg)
            break;
        for (int b = 0; b < 2; b++)
            for (int i = 0; i < V; i++) {
                double d = fabs(lg[b * V + i] - full[((size_t)b * S + pos) * V + i]);
                worst = d > worst ? d : worst;
            }
    }
    CHECK(worst <= 1e-4);
    /* out of range requests are refused, not computed */
    CHECK(llama_forward(m, tok, 1, 2, S - 1) == NULL);
    CHECK(llama_forward(m, tok, 3, 1, 0) == NULL);
    free(full);
    llama_free(m);
}

TEST(optimizer_lowers_the_loss_of_a_repeated_batch)
{
    llama_config c = llama_tiny(2);
    char err[128];
    llama_model *m = llama_create(&c, err, sizeof err);
    CHECK(m != NULL);
    if (!m)
        return;
    float first = llama_step(m, 5), last = first;
    for (int i = 0; i < 30; i++)
        last = llama_step(m, 5); /* the same batch every time */
    CHECK(isfinite(last));
    CHECK(last < first - 0.01f);
    llama_free(m);
}

/* The parts of the backward pass that are exact (cross-entropy, LM head, the final RMSNorm, and
 * the last layer's MLP, whose input gradient comes straight from them) against central finite
 * differences of the loss, at the entry with the largest gradient of each tensor. */
static double loss_now(llama_model *m, int T)
{
    forward(m, m->tokens, m->c.batch, m->c.seq, 0);
    return cross_entropy(m, T);
}

static void check_grad(llama_model *m, float *w, size_t n, const char *what)
{
    int T = m->c.batch * m->c.seq;
    const float *g = m->grads + (w - m->params);
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        best = fabsf(g[i]) > fabsf(g[best]) ? i : best;
    float keep = w[best], h = 1e-2f;
    w[best] = keep + h;
    double lp = loss_now(m, T);
    w[best] = keep - h;
    double lm = loss_now(m, T);
    w[best] = keep;
    double fd = (lp - lm) / (2.0 * h);
    double tol = 0.02 * fabs(fd) + 1e-4;
    if (fabs(fd - g[best]) > tol)
        fprintf(stderr, "%s[%zu]: backward %g, finite difference %g\n", what, best, g[best], fd);
    CHECK(fabs(fd - g[best]) <= tol);
    CHECK(fabs(g[best]) > 1e-4); /* a gradient worth checking */
}

TEST(exact_gradients_match_finite_differences)
{
    llama_config c = llama_tiny(2);
    char err[128];
    llama_model *m = llama_create(&c, err, sizeof err);
    CHECK(m != NULL);
    if (!m)
        return;
    int T = c.batch * c.seq, D = c.dim, F = c.ffn, L = c.layers;
    dataloader(m, 3);
    loss_now(m, T);
    memset(m->grads, 0, m->nparams * sizeof(float));
    backward(m, T);
    check_grad(m, m->lm_head, (size_t)c.vocab * D, "lm_head");
    check_grad(m, m->final_norm, (size_t)D, "final_norm");
    check_grad(m, m->L[L - 1].w2, (size_t)D * F, "w2");
    check_grad(m, m->L[L - 1].w1, (size_t)F * D, "w1");
    check_grad(m, m->L[L - 1].w3, (size_t)F * D, "w3");
    check_grad(m, m->L[L - 1].ffn_norm, (size_t)D, "ffn_norm");
    llama_free(m);
}

typedef struct count_ctx {
    atomic_int hits[64];
    atomic_int wrong_thread;
    int nthreads;
} count_ctx;

static void count_task(void *ctx, int task, int thread)
{
    count_ctx *c = ctx;
    atomic_fetch_add(&c->hits[task], 1);
    if (thread < 0 || thread >= c->nthreads)
        atomic_fetch_add(&c->wrong_thread, 1);
}

TEST(pool_runs_every_task_exactly_once)
{
    for (int threads = 1; threads <= 4; threads++) {
        pool *p = pool_create(threads);
        CHECK(p != NULL);
        if (!p)
            continue;
        count_ctx c;
        memset(&c, 0, sizeof c);
        c.nthreads = pool_threads(p);
        CHECK_EQ_INT(c.nthreads, threads);
        enum { RUNS = 2000 };
        for (int r = 0; r < RUNS; r++)
            pool_run(p, count_task, &c, 1 + r % 64);
        pool_run(p, count_task, &c, 0); /* nothing to do: returns at once */
        int ok = 1;
        for (int t = 0; t < 64; t++) {
            int expect = 0; /* runs with more than t tasks */
            for (int r = 0; r < RUNS; r++)
                expect += 1 + r % 64 > t;
            ok &= atomic_load(&c.hits[t]) == expect;
        }
        CHECK(ok);
        CHECK_EQ_INT(atomic_load(&c.wrong_thread), 0);
        pool_destroy(p);
    }
}

TEST(options_parse_and_check)
{
    llama_config c;
    llama_config_default(&c);
    char err[160];
    CHECK(llama_config_check(&c, err, sizeof err) == 0);
    char *argv[] = {"x", "--dim=128", "--heads", "4", "--rmsnorm", "fused", "--bogus", "--layers"};
    int argc = 8, i = 1;
    CHECK_EQ_INT(llama_parse_option(&c, argc, argv, &i, err, sizeof err), 1);
    CHECK_EQ_INT(c.dim, 128);
    i = 2;
    CHECK_EQ_INT(llama_parse_option(&c, argc, argv, &i, err, sizeof err), 1);
    CHECK_EQ_INT(i, 3);
    CHECK_EQ_INT(c.heads, 4);
    i = 4;
    CHECK_EQ_INT(llama_parse_option(&c, argc, argv, &i, err, sizeof err), 1);
    CHECK_EQ_INT(c.rmsnorm, LLAMA_RMSNORM_FUSED);
    i = 6;
    CHECK_EQ_INT(llama_parse_option(&c, argc, argv, &i, err, sizeof err), 0);
    i = 7;
    CHECK_EQ_INT(llama_parse_option(&c, argc, argv, &i, err, sizeof err), -1);
    char *bad[] = {"x", "--seq=12x"};
    i = 1;
    CHECK_EQ_INT(llama_parse_option(&c, 2, bad, &i, err, sizeof err), -1);
    CHECK(strstr(err, "--seq") != NULL);
    c.heads = 5; /* does not divide 128 */
    CHECK(llama_config_check(&c, err, sizeof err) < 0);
    c.heads = 4;
    c.kv_heads = 3;
    CHECK(llama_config_check(&c, err, sizeof err) < 0);
    CHECK(llama_create(&c, err, sizeof err) == NULL);
}

int main(void)
{
    RUN(forward_is_deterministic_finite_and_thread_independent);
    RUN(fused_and_unfused_rmsnorm_agree);
    RUN(kv_cache_decode_matches_recomputation);
    RUN(optimizer_lowers_the_loss_of_a_repeated_batch);
    RUN(exact_gradients_match_finite_differences);
    RUN(pool_runs_every_task_exactly_once);
    RUN(options_parse_and_check);
    return test_summary();
}
