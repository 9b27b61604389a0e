/*
 * llama.c — the Llama-style workload: model, forward, gradient-shaped backward, AdamW, and the
 * tally ranges around all of it (see llama.h for the shape of a step).
 *
 * Memory. Everything is allocated and touched in llama_create: on the VMs tally is developed on
 * a first-touch page fault costs 5-15 us, so a step that allocated would measure the kernel. The
 * parameters, their gradients and both AdamW moments are four parallel arrays, so a parameter's
 * gradient is at the same offset in `grads`.
 *
 * Activations. The residual stream is a chain of buffers res[0..2L] (res[2l] enters layer l's
 * attention block, res[2l+1] its MLP block), so the backward pass finds every layer input
 * without copies, as autograd would have saved it.
 *
 * Threads. Matrix products, attention and the optimizer split their rows into one task per
 * thread and run them on the pool; each task is a "*.worker" range on the thread that runs it.
 */
#include "llama.h"
#include "kernels.h"
#include "pool.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <tally.h>

#define RMS_EPS    1e-5f
#define ROPE_THETA 10000.0f
#define ADAM_LR    1e-4f
#define ADAM_B1    0.9f
#define ADAM_B2    0.999f
#define ADAM_EPS   1e-8f
#define ADAM_WD    0.01f
#define CLIP_NORM  1.0f

/* An operator range with its input shapes. */
#define OP_BEGIN(name, arg) TALLY_PUSH_ARG(name, TALLY_OPERATOR, arg)
#define OP_END()            TALLY_POP()

typedef struct layer {
    /* parameters (gradients at the same offset in m->grads) */
    float *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *w1, *w3, *w2;
    /* saved activations of the last forward, rows = tokens */
    float *xn1, *rstd1, *q, *k, *v, *att, *xn2, *rstd2, *h1, *h3, *act;
} layer;

/* Argument strings (input shapes) of the operator ranges, for the current batch x n. */
typedef struct shapes {
    int b, n;
    char embedding[64], norm[64], q[64], k[64], v[64], o[64], w1[64], w3[64], w2[64];
    char rope[96], attention[128], swiglu[64], add[64], lm_head[64], xent[64], adamw[64];
} shapes;

struct llama_model {
    llama_config c;
    int hd;  /* head size */
    int kvd; /* kv_heads * hd */
    int T;   /* batch * seq: rows of every activation buffer */
    pool *pool;

    size_t nparams;
    float *params, *grads, *adam_m, *adam_v;
    int64_t adam_t;
    float *embed, *final_norm, *lm_head;
    layer *L;

    float **res;                /* residual stream, 2 * layers + 1 buffers of [T][dim] */
    float *xnf, *rstdf;         /* final norm output and its rstd */
    float *logits;              /* [T][vocab]; the backward turns it into d logits */
    float *lse;                 /* [T] log-sum-exp of each logits row */
    float *tmp;                 /* [T][dim] a block's output before the residual add */
    float *kcache, *vcache;     /* [layers][batch][seq][kvd] */
    float *rope_cos, *rope_sin; /* [seq][hd / 2] */
    float *norm_scratch;        /* unfused RMSNorm's intermediate tensors */
    float *scores;              /* [threads][seq] attention probabilities */
    float *partial;             /* [threads] per-task partial sums */

    /* backward */
    float *dres, *dxn, *datt, *dq, *dk, *dv, *dff1, *dff2;
    float *tr_dy, *tr_x, *tr_w; /* transposes of linear_backward */

    /* dataloader */
    unsigned char *text; /* [batch][seq + 1][text_bytes] */
    int32_t *staging;    /* [batch][seq + 1] token ids, as a pinned host buffer would hold */
    int32_t *tokens;     /* [T] inputs */
    int32_t *targets;    /* [T] next tokens */

    shapes sh;
    float loss;

    /* memory as a framework would hold it (see "memory" below): the blocks a step recorded and
     * has not freed yet */
    const void **live;
    int nlive, cap_live;
    int memory_recorded; /* record_model_memory(m, 1) ran */
};

/* ------------------------------------------------------------------------------------------ */
/* allocation */

static float *alloc_floats(size_t n)
{
    void *p = NULL;
    if (n == 0)
        n = 1;
    if (posix_memalign(&p, 64, n * sizeof(float)) != 0)
        return NULL;
    memset(p, 0, n * sizeof(float)); /* touch every page now */
    return p;
}

/* ------------------------------------------------------------------------------------------ */
/* memory, as an eager framework would hold it
 *
 * Every buffer is allocated once (llama_create), so that no step takes page faults. What tally's
 * memory view shows is the memory PyTorch would hold for the same step, told through
 * tally_alloc / tally_free: the parameters, their gradients and AdamW's two moments for as long
 * as the model lives; each activation from the forward operator that makes it to the backward
 * that consumes it (autograd's saved tensors); temporaries (unfused RMSNorm's intermediates, a
 * projection before its residual add, the gradients of activations) for as long as the operator
 * that needs them. A block is named by its buffer's address, or, for the tensors the demo keeps
 * in a shared buffer or never materialises (unfused RMSNorm's saved intermediates, attention's
 * probabilities, the logits' gradient), by the address of one of the model's fields: any address
 * unique while the block lives names it. Names are dotted paths ("layers.0.mlp.h1") from which
 * the memory view builds its layout tree.
 */
#ifndef TALLY_DISABLE
static void mem_add(llama_model *m, const void *key, size_t bytes, int category, const char *fmt,
                    ...) __attribute__((format(printf, 5, 6)));
static void mem_add(llama_model *m, const void *key, size_t bytes, int category, const char *fmt,
                    ...)
{
    if (m->nlive == m->cap_live)
        return; /* never: llama_create sized it for every block a step makes */
    char name[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    tally_alloc(key, bytes, -1, category, name);
    m->live[m->nlive++] = key;
}

static void mem_drop(llama_model *m, const void *key)
{
    for (int i = m->nlive - 1; i >= 0; i--)
        if (m->live[i] == key) {
            m->live[i] = m->live[--m->nlive];
            tally_free(key);
            return;
        }
}

/* What the step still holds (a forward without backward: inference). */
static void mem_drop_all(llama_model *m)
{
    while (m->nlive > 0)
        tally_free(m->live[--m->nlive]);
}
#else
static inline void mem_add(llama_model *m, const void *key, size_t bytes, int category,
                           const char *fmt, ...)
{
    (void)m, (void)key, (void)bytes, (void)category, (void)fmt;
}
#define mem_drop(m, key) ((void)(m), (void)(key))
#define mem_drop_all(m)  ((void)(m))
#endif
#define ACT  TALLY_MEM_ACTIVATION
#define TEMP TALLY_MEM_TEMPORARY
#define FSZ  sizeof(float)

/* ------------------------------------------------------------------------------------------ */
/* parallel loops */

typedef struct mm_task {
    const float *A, *B;
    float *C;
    int lda, ldb, ldc, M, N, K, acc;
    int split_m; /* split rows of C (else columns) */
    int ntasks;
} mm_task;

static void chunk(int n, int ntasks, int task, int align, int *lo, int *hi)
{
    int per = (n + ntasks - 1) / ntasks;
    per = (per + align - 1) / align * align;
    *lo = task * per < n ? task * per : n;
    *hi = *lo + per < n ? *lo + per : n;
}

static void mm_worker(void *ctx, int task, int thread)
{
    (void)thread;
    const mm_task *t = ctx;
    int lo, hi;
    TALLY_PUSH("matmul.worker", TALLY_OPERATOR);
    if (t->split_m) {
        chunk(t->M, t->ntasks, task, 2, &lo, &hi);
        if (lo < hi)
            k_gemm_nt(t->A, t->lda, t->B, t->ldb, t->C, t->ldc, t->K, lo, hi, 0, t->N, t->acc);
    } else {
        chunk(t->N, t->ntasks, task, 4, &lo, &hi);
        if (lo < hi)
            k_gemm_nt(t->A, t->lda, t->B, t->ldb, t->C, t->ldc, t->K, 0, t->M, lo, hi, t->acc);
    }
    TALLY_POP();
}

/* C[M][N] (+)= A[M][K] . B[N][K]^T on the pool. */
static void matmul(llama_model *m, const float *A, const float *B, float *C, int M, int N, int K,
                   int acc)
{
    mm_task t = {A, B, C, K, K, N, M, N, K, acc, 0, pool_threads(m->pool)};
    t.split_m = M >= 8 * t.ntasks;
    pool_run(m->pool, mm_worker, &t, t.ntasks);
}

/* ------------------------------------------------------------------------------------------ */
/* operators */

void llama_rmsnorm_fused(float *out, const float *x, const float *w, int rows, int dim, float eps)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * dim;
        float *o = out + (size_t)r * dim;
        float ms = k_dot(xr, xr, dim) / (float)dim;
        float rs = 1.0f / sqrtf(ms + eps);
        k_scale_mul(o, xr, rs, w, dim);
    }
}

/* The fused kernel, also saving each row's rstd for the backward pass. */
static void rmsnorm_fused_rstd(float *out, float *rstd, const float *x, const float *w, int rows,
                               int dim, float eps)
{
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * dim;
        float *o = out + (size_t)r * dim;
        float ms = k_dot(xr, xr, dim) / (float)dim;
        float rs = 1.0f / sqrtf(ms + eps);
        rstd[r] = rs;
        k_scale_mul(o, xr, rs, w, dim);
    }
}

/*
 * The unfused RMSNorm: rsqrt(mean(x^2) + eps) * x * w as five operators, each a pass of its own
 * over the whole [rows][dim] tensor that writes a new full-size tensor — the mean broadcast
 * along the row as keepdim + expand would give it when materialised, as a naive eager framework
 * does. Same arithmetic as the fused kernel and in the same order, so the results agree.
 */
static void rmsnorm_unfused_rstd(float *out, float *rstd, const float *x, const float *w, int rows,
                                 int dim, float eps, float *scratch)
{
    size_t n = (size_t)rows * dim;
    float *x2 = scratch, *mean = scratch + n; /* two [rows][dim] tensors, reused in turn */
    float *mean_eps = x2, *rs = mean;
    TALLY_SCOPE("rmsnorm.pow", TALLY_OPERATOR)
    {
        for (int r = 0; r < rows; r++)
            k_mul(x2 + (size_t)r * dim, x + (size_t)r * dim, x + (size_t)r * dim, dim);
    }
    TALLY_SCOPE("rmsnorm.mean", TALLY_OPERATOR)
    {
        for (int r = 0; r < rows; r++) {
            float mr = k_sum(x2 + (size_t)r * dim, dim) / (float)dim;
            k_fill(mean + (size_t)r * dim, mr, (size_t)dim);
        }
    }
    TALLY_SCOPE("rmsnorm.add_eps", TALLY_OPERATOR)
    {
        k_add_scalar(mean_eps, mean, eps, n);
    }
    TALLY_SCOPE("rmsnorm.rsqrt", TALLY_OPERATOR)
    {
        k_rsqrt(rs, mean_eps, n);
    }
    TALLY_SCOPE("rmsnorm.mul", TALLY_OPERATOR)
    {
        for (int r = 0; r < rows; r++)
            k_mul3(out + (size_t)r * dim, x + (size_t)r * dim, rs + (size_t)r * dim, w, dim);
    }
    if (rstd)
        for (int r = 0; r < rows; r++)
            rstd[r] = rs[(size_t)r * dim];
}

void llama_rmsnorm_unfused(float *out, const float *x, const float *w, int rows, int dim, float eps,
                           float *scratch)
{
    rmsnorm_unfused_rstd(out, NULL, x, w, rows, dim, eps, scratch);
}

/* The norm `name` ("layers.0.attention_norm"). Memory: its output and rstd are saved for the
 * backward; unfused, as eager PyTorch runs it, x^2 and the mean are temporaries, and rsqrt's
 * output and x * rsqrt are saved too (blocks named by the keys saved_a, saved_b). */
static void rmsnorm(llama_model *m, float *out, float *rstd, const float *x, const float *w,
                    int rows, const char *name, const void *saved_a, const void *saved_b)
{
    size_t n = (size_t)rows * m->c.dim;
    int fused = m->c.rmsnorm == LLAMA_RMSNORM_FUSED;
    OP_BEGIN("rmsnorm", m->sh.norm);
    if (fused) {
        rmsnorm_fused_rstd(out, rstd, x, w, rows, m->c.dim, RMS_EPS);
    } else {
        mem_add(m, m->norm_scratch, n * FSZ, TEMP, "%s.pow", name);
        mem_add(m, m->norm_scratch + n, n * FSZ, TEMP, "%s.mean", name);
        rmsnorm_unfused_rstd(out, rstd, x, w, rows, m->c.dim, RMS_EPS, m->norm_scratch);
        mem_drop(m, m->norm_scratch);
        mem_drop(m, m->norm_scratch + n);
    }
    OP_END();
    mem_add(m, out, n * FSZ, ACT, "%s.out", name);
    mem_add(m, rstd, (size_t)rows * FSZ, ACT, "%s.rstd", name);
    if (!fused) {
        mem_add(m, saved_a, n * FSZ, ACT, "%s.rsqrt", name);
        mem_add(m, saved_b, n * FSZ, ACT, "%s.normed", name);
    }
}

/* Drop what rmsnorm saved (its backward is done). */
static void rmsnorm_drop(llama_model *m, const float *out, const float *rstd, const void *saved_a,
                         const void *saved_b)
{
    mem_drop(m, out);
    mem_drop(m, rstd);
    mem_drop(m, saved_a);
    mem_drop(m, saved_b);
}

/* Rotate pairs (2i, 2i+1) of every head by pos * theta^(-2i/hd); sign -1 undoes it. */
static void rope_rows(const llama_model *m, float *x, int rows, int width, int n, int start_pos,
                      float sign)
{
    int half = m->hd / 2;
    for (int r = 0; r < rows; r++) {
        int pos = start_pos + r % n;
        const float *cs = m->rope_cos + (size_t)pos * half, *sn = m->rope_sin + (size_t)pos * half;
        float *xr = x + (size_t)r * width;
        for (int h = 0; h < width; h += m->hd)
            for (int i = 0; i < half; i++) {
                float a = xr[h + 2 * i], b = xr[h + 2 * i + 1], s = sign * sn[i];
                xr[h + 2 * i] = a * cs[i] - b * s;
                xr[h + 2 * i + 1] = a * s + b * cs[i];
            }
    }
}

typedef struct attn_task {
    llama_model *m;
    int l, b, n, start_pos, ntasks;
    const float *q;
    float *out;
} attn_task;

/* Causal grouped-query attention of (sequence, head) pairs [lo, hi) against the KV cache. */
static void attn_worker(void *ctx, int task, int thread)
{
    const attn_task *t = ctx;
    llama_model *m = t->m;
    const llama_config *c = &m->c;
    int hd = m->hd, group = c->heads / c->kv_heads, lo, hi;
    float scale = 1.0f / sqrtf((float)hd);
    float *p = m->scores + (size_t)thread * c->seq;
    chunk(t->b * c->heads, t->ntasks, task, 1, &lo, &hi);
    TALLY_PUSH("attention.worker", TALLY_OPERATOR);
    for (int bh = lo; bh < hi; bh++) {
        int bi = bh / c->heads, h = bh % c->heads, kvh = h / group;
        size_t base = (((size_t)t->l * c->batch + bi) * c->seq) * m->kvd + (size_t)kvh * hd;
        const float *kc = m->kcache + base, *vc = m->vcache + base;
        for (int i = 0; i < t->n; i++) {
            int pos = t->start_pos + i;
            size_t row = (size_t)bi * t->n + i;
            const float *qi = t->q + row * c->dim + (size_t)h * hd;
            float *o = t->out + row * c->dim + (size_t)h * hd;
            float mx = -INFINITY;
            for (int s = 0; s <= pos; s++) {
                p[s] = k_dot(qi, kc + (size_t)s * m->kvd, hd) * scale;
                mx = p[s] > mx ? p[s] : mx;
            }
            float sum = 0;
            for (int s = 0; s <= pos; s++) {
                p[s] = expf(p[s] - mx);
                sum += p[s];
            }
            memset(o, 0, (size_t)hd * sizeof *o);
            for (int s = 0; s <= pos; s++)
                k_axpy(o, p[s] / sum, vc + (size_t)s * m->kvd, hd);
        }
    }
    TALLY_POP();
}

static float silu(float x)
{
    return x / (1.0f + expf(-x));
}

/* ------------------------------------------------------------------------------------------ */
/* forward */

static void make_shapes(llama_model *m, int b, int n)
{
    shapes *s = &m->sh;
    const llama_config *c = &m->c;
    if (s->b == b && s->n == n)
        return;
    s->b = b;
    s->n = n;
    int D = c->dim, F = c->ffn, KV = m->kvd;
    snprintf(s->embedding, sizeof s->embedding, "[[%d, %d], [%d, %d]]", c->vocab, D, b, n);
    snprintf(s->norm, sizeof s->norm, "[[%d, %d, %d], [%d]]", b, n, D, D);
    snprintf(s->q, sizeof s->q, "[[%d, %d, %d], [%d, %d]]", b, n, D, D, D);
    snprintf(s->k, sizeof s->k, "[[%d, %d, %d], [%d, %d]]", b, n, D, KV, D);
    snprintf(s->v, sizeof s->v, "[[%d, %d, %d], [%d, %d]]", b, n, D, KV, D);
    snprintf(s->o, sizeof s->o, "[[%d, %d, %d], [%d, %d]]", b, n, D, D, D);
    snprintf(s->w1, sizeof s->w1, "[[%d, %d, %d], [%d, %d]]", b, n, D, F, D);
    snprintf(s->w3, sizeof s->w3, "[[%d, %d, %d], [%d, %d]]", b, n, D, F, D);
    snprintf(s->w2, sizeof s->w2, "[[%d, %d, %d], [%d, %d]]", b, n, F, D, F);
    snprintf(s->rope, sizeof s->rope, "[[%d, %d, %d, %d], [%d, %d, %d, %d]]", b, n, c->heads, m->hd,
             b, n, c->kv_heads, m->hd);
    snprintf(s->attention, sizeof s->attention,
             "[[%d, %d, %d, %d], [%d, %d, %d, %d], [%d, %d, %d, %d]]", b, c->heads, n, m->hd, b,
             c->kv_heads, c->seq, m->hd, b, c->kv_heads, c->seq, m->hd);
    snprintf(s->swiglu, sizeof s->swiglu, "[[%d, %d, %d], [%d, %d, %d]]", b, n, F, b, n, F);
    snprintf(s->add, sizeof s->add, "[[%d, %d, %d], [%d, %d, %d]]", b, n, D, b, n, D);
    snprintf(s->lm_head, sizeof s->lm_head, "[[%d, %d, %d], [%d, %d]]", b, n, D, c->vocab, D);
    snprintf(s->xent, sizeof s->xent, "[[%d, %d], [%d]]", b * n, c->vocab, b * n);
    snprintf(s->adamw, sizeof s->adamw, "[[%zu]]", m->nparams);
}

static void forward_layer(llama_model *m, int l, int b, int n, int start_pos)
{
    const llama_config *c = &m->c;
    layer *L = &m->L[l];
    int T = b * n, D = c->dim, KV = m->kvd, F = c->ffn;
    const float *x = m->res[2 * l];
    float *h = m->res[2 * l + 1], *out = m->res[2 * l + 2];
    char name[64];

    TALLY_SCOPE("attention_block", TALLY_USER)
    {
        snprintf(name, sizeof name, "layers.%d.attention_norm", l);
        rmsnorm(m, L->xn1, L->rstd1, x, L->attn_norm, T, name, &L->xn1, &L->rstd1);
        OP_BEGIN("matmul", m->sh.q);
        matmul(m, L->xn1, L->wq, L->q, T, D, D, 0);
        OP_END();
        OP_BEGIN("matmul", m->sh.k);
        matmul(m, L->xn1, L->wk, L->k, T, KV, D, 0);
        OP_END();
        OP_BEGIN("matmul", m->sh.v);
        matmul(m, L->xn1, L->wv, L->v, T, KV, D, 0);
        OP_END();
        mem_add(m, L->q, (size_t)T * D * FSZ, ACT, "layers.%d.attention.q", l);
        mem_add(m, L->k, (size_t)T * KV * FSZ, ACT, "layers.%d.attention.k", l);
        mem_add(m, L->v, (size_t)T * KV * FSZ, ACT, "layers.%d.attention.v", l);
        OP_BEGIN("rope", m->sh.rope);
        rope_rows(m, L->q, T, D, n, start_pos, 1.0f);
        rope_rows(m, L->k, T, KV, n, start_pos, 1.0f);
        OP_END();
        OP_BEGIN("attention", m->sh.attention);
        for (int bi = 0; bi < b; bi++) {
            size_t base = (((size_t)l * c->batch + bi) * c->seq + start_pos) * KV;
            memcpy(m->kcache + base, L->k + (size_t)bi * n * KV, (size_t)n * KV * sizeof(float));
            memcpy(m->vcache + base, L->v + (size_t)bi * n * KV, (size_t)n * KV * sizeof(float));
        }
        attn_task at = {m, l, b, n, start_pos, pool_threads(m->pool), L->q, L->att};
        if (at.ntasks > b * c->heads)
            at.ntasks = b * c->heads;
        pool_run(m->pool, attn_worker, &at, at.ntasks);
        OP_END();
        /* eager attention keeps its softmax probabilities [b][heads][n][keys] for the backward:
         * the part of a step's memory that grows with the square of the sequence */
        mem_add(m, &L->att, (size_t)b * c->heads * n * (start_pos + n) * FSZ, ACT,
                "layers.%d.attention.probs", l);
        mem_add(m, L->att, (size_t)T * D * FSZ, ACT, "layers.%d.attention.out", l);
        OP_BEGIN("matmul", m->sh.o);
        matmul(m, L->att, L->wo, m->tmp, T, D, D, 0);
        OP_END();
        mem_add(m, m->tmp, (size_t)T * D * FSZ, TEMP, "layers.%d.attention.proj", l);
        OP_BEGIN("add", m->sh.add);
        k_add(h, x, m->tmp, (size_t)T * D);
        OP_END();
        mem_drop(m, m->tmp);
        mem_add(m, h, (size_t)T * D * FSZ, ACT, "layers.%d.attention.residual", l);
    }
    TALLY_SCOPE("mlp_block", TALLY_USER)
    {
        snprintf(name, sizeof name, "layers.%d.ffn_norm", l);
        rmsnorm(m, L->xn2, L->rstd2, h, L->ffn_norm, T, name, &L->xn2, &L->rstd2);
        OP_BEGIN("matmul", m->sh.w1);
        matmul(m, L->xn2, L->w1, L->h1, T, F, D, 0);
        OP_END();
        OP_BEGIN("matmul", m->sh.w3);
        matmul(m, L->xn2, L->w3, L->h3, T, F, D, 0);
        OP_END();
        mem_add(m, L->h1, (size_t)T * F * FSZ, ACT, "layers.%d.mlp.h1", l);
        mem_add(m, L->h3, (size_t)T * F * FSZ, ACT, "layers.%d.mlp.h3", l);
        OP_BEGIN("swiglu", m->sh.swiglu);
        for (size_t i = 0; i < (size_t)T * F; i++)
            L->act[i] = silu(L->h1[i]) * L->h3[i];
        OP_END();
        mem_add(m, L->act, (size_t)T * F * FSZ, ACT, "layers.%d.mlp.act", l);
        OP_BEGIN("matmul", m->sh.w2);
        matmul(m, L->act, L->w2, m->tmp, T, D, F, 0);
        OP_END();
        mem_add(m, m->tmp, (size_t)T * D * FSZ, TEMP, "layers.%d.mlp.proj", l);
        OP_BEGIN("add", m->sh.add);
        k_add(out, h, m->tmp, (size_t)T * D);
        OP_END();
        mem_drop(m, m->tmp);
        mem_add(m, out, (size_t)T * D * FSZ, ACT, "layers.%d.mlp.residual", l);
    }
}

static const float *forward(llama_model *m, const int32_t *tokens, int b, int n, int start_pos)
{
    const llama_config *c = &m->c;
    int T = b * n, D = c->dim;
    make_shapes(m, b, n);
    OP_BEGIN("embedding", m->sh.embedding);
    for (int r = 0; r < T; r++) {
        int32_t tok = tokens[r];
        if (tok < 0 || tok >= c->vocab)
            tok = 0;
        memcpy(m->res[0] + (size_t)r * D, m->embed + (size_t)tok * D, (size_t)D * sizeof(float));
    }
    OP_END();
    mem_add(m, m->res[0], (size_t)T * D * FSZ, ACT, "embedding.out");
    for (int l = 0; l < c->layers; l++) {
        TALLY_SCOPE("decoder_layer", TALLY_USER)
        {
            forward_layer(m, l, b, n, start_pos);
        }
    }
    rmsnorm(m, m->xnf, m->rstdf, m->res[2 * c->layers], m->final_norm, T, "norm", &m->xnf,
            &m->rstdf);
    OP_BEGIN("lm_head", m->sh.lm_head);
    matmul(m, m->xnf, m->lm_head, m->logits, T, c->vocab, D, 0);
    OP_END();
    mem_add(m, m->logits, (size_t)T * c->vocab * FSZ, ACT, "lm_head.out");
    return m->logits;
}

const float *llama_forward(llama_model *m, const int32_t *tokens, int batch, int n, int start_pos)
{
    const llama_config *c = &m->c;
    if (batch < 1 || batch > c->batch || n < 1 || start_pos < 0 || start_pos + n > c->seq)
        return NULL;
    const float *logits = forward(m, tokens, batch, n, start_pos);
    mem_drop_all(m); /* no backward: nothing is kept (the logits are the caller's to read) */
    return logits;
}

/* Mean cross-entropy of the logits against m->targets; saves each row's log-sum-exp. */
static float cross_entropy(llama_model *m, int T)
{
    int V = m->c.vocab;
    double total = 0;
    OP_BEGIN("cross_entropy", m->sh.xent);
    for (int r = 0; r < T; r++) {
        const float *z = m->logits + (size_t)r * V;
        float mx = z[0];
        for (int i = 1; i < V; i++)
            mx = z[i] > mx ? z[i] : mx;
        double s = 0;
        for (int i = 0; i < V; i++)
            s += expf(z[i] - mx);
        m->lse[r] = mx + (float)log(s);
        total += m->lse[r] - z[m->targets[r]];
    }
    OP_END();
    mem_add(m, m->lse, (size_t)T * FSZ, ACT, "loss.lse");
    return (float)(total / T);
}

/* ------------------------------------------------------------------------------------------ */
/* backward */

typedef struct tr_task {
    const float *src[3];
    float *dst[3];
    int rows[3], cols[3];
} tr_task;

static void tr_worker(void *ctx, int task, int thread)
{
    (void)thread;
    const tr_task *t = ctx;
    TALLY_PUSH("transpose.worker", TALLY_OPERATOR);
    k_transpose(t->dst[task], t->src[task], t->rows[task], t->cols[task]);
    TALLY_POP();
}

/*
 * Gradients of Y[T][N] = X[T][K] . W[N][K]^T: dW += dY^T . X and dX (+)= dY . W, two products of
 * the forward's size, through transposes so that both are "A times B transposed".
 */
static void linear_backward(llama_model *m, const char *arg, const float *dY, const float *X,
                            const float *W, int T, int N, int K, float *dX, int acc_dx)
{
    (void)arg;
    float *dW = m->grads + (W - m->params);
    OP_BEGIN("linear_backward", arg);
    tr_task tt = {{dY, X, W}, {m->tr_dy, m->tr_x, m->tr_w}, {T, T, N}, {N, K, K}};
    pool_run(m->pool, tr_worker, &tt, 3);
    matmul(m, m->tr_dy, m->tr_x, dW, N, K, T, 1); /* dW[N][K] += dY^T[N][T] . X^T[K][T]^T */
    matmul(m, dY, m->tr_w, dX, T, K, N, acc_dx);  /* dX[T][K] (+)= dY[T][N] . W^T[K][N]^T */
    OP_END();
}

/* Exact RMSNorm gradient: y = x * r * w with r = (mean(x^2) + eps)^-1/2.
 * dw += sum_t dy * x * r;  dx += r * w * dy - x * r^3 / D * sum_j(dy_j * w_j * x_j). */
static void rmsnorm_backward(llama_model *m, const float *dy, const float *x, const float *rstd,
                             const float *w, float *dx, int T, int acc)
{
    int D = m->c.dim;
    float *dw = m->grads + (w - m->params);
    OP_BEGIN("rmsnorm_backward", m->sh.norm);
    for (int t = 0; t < T; t++) {
        const float *dyr = dy + (size_t)t * D, *xr = x + (size_t)t * D;
        float *dxr = dx + (size_t)t * D;
        float r = rstd[t], dot = 0;
        for (int i = 0; i < D; i++) {
            dot += dyr[i] * w[i] * xr[i];
            dw[i] += dyr[i] * xr[i] * r;
        }
        float k = r * r * r * dot / (float)D;
        for (int i = 0; i < D; i++) {
            float g = r * w[i] * dyr[i] - xr[i] * k;
            dxr[i] = acc ? dxr[i] + g : g;
        }
    }
    OP_END();
}

static void backward_layer(llama_model *m, int l, int T)
{
    const llama_config *c = &m->c;
    layer *L = &m->L[l];
    int D = c->dim, KV = m->kvd, F = c->ffn, n = m->sh.n;
    int group = c->heads / c->kv_heads, hd = m->hd;

    TALLY_SCOPE("mlp_block_backward", TALLY_USER)
    {
        mem_add(m, m->dff1, (size_t)T * F * FSZ, TEMP, "layers.%d.mlp.grad_h1", l);
        mem_add(m, m->dff2, (size_t)T * F * FSZ, TEMP, "layers.%d.mlp.grad_h3", l);
        linear_backward(m, m->sh.w2, m->dres, L->act, L->w2, T, D, F, m->dff1, 0);
        OP_BEGIN("swiglu_backward", m->sh.swiglu);
        for (size_t i = 0; i < (size_t)T * F; i++) {
            float a = L->h1[i], sg = 1.0f / (1.0f + expf(-a)), g = m->dff1[i];
            m->dff1[i] = g * L->h3[i] * sg * (1.0f + a * (1.0f - sg)); /* d h1 */
            m->dff2[i] = g * a * sg;                                   /* d h3 */
        }
        OP_END();
        linear_backward(m, m->sh.w1, m->dff1, L->xn2, L->w1, T, F, D, m->dxn, 0);
        linear_backward(m, m->sh.w3, m->dff2, L->xn2, L->w3, T, F, D, m->dxn, 1);
        rmsnorm_backward(m, m->dxn, m->res[2 * l + 1], L->rstd2, L->ffn_norm, m->dres, T, 1);
        mem_drop(m, m->dff1);
        mem_drop(m, m->dff2);
        mem_drop(m, L->h1);
        mem_drop(m, L->h3);
        mem_drop(m, L->act);
        mem_drop(m, m->res[2 * l + 2]);
        rmsnorm_drop(m, L->xn2, L->rstd2, &L->xn2, &L->rstd2);
    }
    TALLY_SCOPE("attention_block_backward", TALLY_USER)
    {
        linear_backward(m, m->sh.o, m->dres, L->att, L->wo, T, D, D, m->datt, 0);
        /* Stand-in for the attention core's gradient: the output gradient goes to q as is, and
         * to k and v summed over the heads that share them (the shapes of the real thing). */
        OP_BEGIN("attention_backward", m->sh.attention);
        memcpy(m->dq, m->datt, (size_t)T * D * sizeof(float));
        for (int t = 0; t < T; t++)
            for (int kvh = 0; kvh < c->kv_heads; kvh++) {
                float *dk = m->dk + (size_t)t * KV + (size_t)kvh * hd;
                memset(dk, 0, (size_t)hd * sizeof *dk);
                for (int g = 0; g < group; g++)
                    k_axpy(dk, 1.0f, m->datt + (size_t)t * D + (size_t)(kvh * group + g) * hd, hd);
            }
        memcpy(m->dv, m->dk, (size_t)T * KV * sizeof(float));
        rope_rows(m, m->dq, T, D, n, 0, -1.0f);
        rope_rows(m, m->dk, T, KV, n, 0, -1.0f);
        OP_END();
        linear_backward(m, m->sh.q, m->dq, L->xn1, L->wq, T, D, D, m->dxn, 0);
        linear_backward(m, m->sh.k, m->dk, L->xn1, L->wk, T, KV, D, m->dxn, 1);
        linear_backward(m, m->sh.v, m->dv, L->xn1, L->wv, T, KV, D, m->dxn, 1);
        rmsnorm_backward(m, m->dxn, m->res[2 * l], L->rstd1, L->attn_norm, m->dres, T, 1);
        mem_drop(m, L->q);
        mem_drop(m, L->k);
        mem_drop(m, L->v);
        mem_drop(m, &L->att);
        mem_drop(m, L->att);
        mem_drop(m, m->res[2 * l + 1]);
        rmsnorm_drop(m, L->xn1, L->rstd1, &L->xn1, &L->rstd1);
    }
}

static void backward(llama_model *m, int T)
{
    const llama_config *c = &m->c;
    int V = c->vocab, D = c->dim;
    /* the logits' gradient, a tensor of their size (computed in place here) */
    mem_add(m, &m->logits, (size_t)T * V * FSZ, TEMP, "lm_head.grad_out");
    OP_BEGIN("cross_entropy_backward", m->sh.xent);
    for (int r = 0; r < T; r++) {
        float *z = m->logits + (size_t)r * V;
        for (int i = 0; i < V; i++)
            z[i] = expf(z[i] - m->lse[r]) / (float)T;
        z[m->targets[r]] -= 1.0f / (float)T;
    }
    OP_END();
    mem_drop(m, m->lse);
    mem_drop(m, m->logits);
    linear_backward(m, m->sh.lm_head, m->logits, m->xnf, m->lm_head, T, V, D, m->dxn, 0);
    mem_drop(m, &m->logits);
    rmsnorm_backward(m, m->dxn, m->res[2 * c->layers], m->rstdf, m->final_norm, m->dres, T, 0);
    rmsnorm_drop(m, m->xnf, m->rstdf, &m->xnf, &m->rstdf);
    for (int l = c->layers - 1; l >= 0; l--)
        TALLY_SCOPE("decoder_layer_backward", TALLY_USER)
        {
            backward_layer(m, l, T);
        }
    OP_BEGIN("embedding_backward", m->sh.embedding);
    float *gemb = m->grads + (m->embed - m->params);
    for (int r = 0; r < T; r++)
        k_axpy(gemb + (size_t)m->tokens[r] * D, 1.0f, m->dres + (size_t)r * D, D);
    OP_END();
    mem_drop(m, m->res[0]);
    mem_drop_all(m); /* nothing is left; a block missed above would otherwise show as a leak */
}

/* ------------------------------------------------------------------------------------------ */
/* optimizer */

typedef struct opt_task {
    llama_model *m;
    int ntasks;
    float scale; /* gradient clipping factor */
    float bc1, bc2;
} opt_task;

static void norm_worker(void *ctx, int task, int thread)
{
    (void)thread;
    opt_task *t = ctx;
    llama_model *m = t->m;
    int lo, hi;
    /* chunk over blocks of 4096 parameters: int-sized and cache-line aligned */
    int blocks = (int)((m->nparams + 4095) / 4096);
    chunk(blocks, t->ntasks, task, 1, &lo, &hi);
    size_t a = (size_t)lo * 4096, b = (size_t)hi * 4096;
    b = b < m->nparams ? b : m->nparams;
    TALLY_PUSH("clip_grad_norm.worker", TALLY_OPERATOR);
    m->partial[task] = a < b ? k_dot(m->grads + a, m->grads + a, (int)(b - a)) : 0;
    TALLY_POP();
}

static void adamw_worker(void *ctx, int task, int thread)
{
    (void)thread;
    opt_task *t = ctx;
    llama_model *m = t->m;
    int lo, hi;
    int blocks = (int)((m->nparams + 4095) / 4096);
    chunk(blocks, t->ntasks, task, 1, &lo, &hi);
    size_t a = (size_t)lo * 4096, b = (size_t)hi * 4096;
    b = b < m->nparams ? b : m->nparams;
    float *p = m->params, *g = m->grads, *mm = m->adam_m, *vv = m->adam_v;
    TALLY_PUSH("adamw.worker", TALLY_OPERATOR);
    for (size_t i = a; i < b; i++) {
        float gi = g[i] * t->scale;
        mm[i] = ADAM_B1 * mm[i] + (1.0f - ADAM_B1) * gi;
        vv[i] = ADAM_B2 * vv[i] + (1.0f - ADAM_B2) * gi * gi;
        float mh = mm[i] / t->bc1, vh = vv[i] / t->bc2;
        p[i] -= ADAM_LR * (mh / (sqrtf(vh) + ADAM_EPS) + ADAM_WD * p[i]);
    }
    TALLY_POP();
}

static void optimizer(llama_model *m)
{
    opt_task t = {m, pool_threads(m->pool), 1.0f, 1.0f, 1.0f};
    OP_BEGIN("clip_grad_norm", m->sh.adamw);
    pool_run(m->pool, norm_worker, &t, t.ntasks);
    double ss = 0;
    for (int i = 0; i < t.ntasks; i++)
        ss += m->partial[i];
    float norm = (float)sqrt(ss);
    t.scale = norm > CLIP_NORM ? CLIP_NORM / norm : 1.0f;
    OP_END();
    m->adam_t++;
    t.bc1 = 1.0f - powf(ADAM_B1, (float)m->adam_t);
    t.bc2 = 1.0f - powf(ADAM_B2, (float)m->adam_t);
    OP_BEGIN("adamw", m->sh.adamw);
    pool_run(m->pool, adamw_worker, &t, t.ntasks);
    OP_END();
}

/* ------------------------------------------------------------------------------------------ */
/* dataloader */

/*
 * A stand-in for reading and tokenizing a batch: synthesise text_bytes bytes of lower-case
 * "words" per token from a hash of (seed, step, sequence, position), hash each token's bytes
 * (FNV-1a) into a vocabulary id, collate into a staging buffer, then copy into the model's input
 * and target arrays. Honest work that scales with batch x seq, a few percent of a step.
 */
static void dataloader(llama_model *m, int64_t step)
{
    const llama_config *c = &m->c;
    int S1 = c->seq + 1, tb = c->text_bytes;
    size_t nbytes = (size_t)c->batch * S1 * tb;
    TALLY_SCOPE("read_text", TALLY_USER)
    {
        uint64_t h = k_mix(c->seed ^ k_mix((uint64_t)step + 0x5eed));
        for (size_t i = 0; i < nbytes; i += 8) {
            h = k_mix(h);
            for (int j = 0; j < 8 && i + j < nbytes; j++) {
                unsigned v = (unsigned)(h >> (8 * j)) & 0xff;
                m->text[i + j] = v < 40 ? ' ' : (unsigned char)('a' + v % 26);
            }
        }
    }
    TALLY_SCOPE("tokenize", TALLY_USER)
    {
        for (int s = 0; s < c->batch * S1; s++) {
            const unsigned char *p = m->text + (size_t)s * tb;
            uint32_t h = 2166136261u;
            for (int j = 0; j < tb; j++)
                h = (h ^ p[j]) * 16777619u;
            m->staging[s] = (int32_t)(h % (uint32_t)c->vocab);
        }
    }
    TALLY_SCOPE("collate", TALLY_USER)
    {
        for (int bi = 0; bi < c->batch; bi++) {
            memcpy(m->tokens + (size_t)bi * c->seq, m->staging + (size_t)bi * S1,
                   (size_t)c->seq * sizeof(int32_t));
            memcpy(m->targets + (size_t)bi * c->seq, m->staging + (size_t)bi * S1 + 1,
                   (size_t)c->seq * sizeof(int32_t));
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* step */

float llama_step(llama_model *m, int64_t step)
{
    const llama_config *c = &m->c;
    int T = c->batch * c->seq;
#ifndef TALLY_DISABLE
    if (tally_running()) {
        /* a session may have started since the last step: name the threads in it */
        TALLY_THREAD_NAME("llama-main");
        pool_rename(m->pool);
    }
#endif
    TALLY_SCOPE("dataloader", TALLY_DATALOADER)
    {
        dataloader(m, step);
    }
    TALLY_SCOPE("forward", TALLY_FORWARD)
    {
        forward(m, m->tokens, c->batch, c->seq, 0);
        m->loss = cross_entropy(m, T);
    }
    TALLY_SCOPE("backward", TALLY_BACKWARD)
    {
        backward(m, T);
    }
    TALLY_SCOPE("optimizer", TALLY_OPTIMIZER)
    {
        optimizer(m);
    }
    TALLY_SCOPE("zero_grad", TALLY_USER)
    {
        memset(m->grads, 0, m->nparams * sizeof(float));
    }
    TALLY_COUNTER("loss", m->loss);
    TALLY_STEP((uint64_t)T);
    return m->loss;
}

/* ------------------------------------------------------------------------------------------ */
/* construction */

const llama_config *llama_get_config(const llama_model *m)
{
    return &m->c;
}

size_t llama_param_count(const llama_model *m)
{
    return m->nparams;
}

void llama_set_rmsnorm(llama_model *m, int kind)
{
    m->c.rmsnorm = kind == LLAMA_RMSNORM_FUSED ? LLAMA_RMSNORM_FUSED : LLAMA_RMSNORM_UNFUSED;
}

/* Uniform(-scale, scale) weights from (seed, offset): the same model for any thread count. */
static void init_uniform(float *p, size_t n, uint64_t seed, size_t offset, float scale)
{
    for (size_t i = 0; i < n; i++)
        p[i] = scale * k_uniform(k_mix(seed ^ k_mix(offset + i)));
}

static void init_norm(float *p, size_t n, uint64_t seed, size_t offset)
{
    for (size_t i = 0; i < n; i++)
        p[i] = 1.0f + 0.1f * k_uniform(k_mix(seed ^ k_mix(offset + i)));
}

#define MAX3(a, b, c) ((a) > (b) ? ((a) > (c) ? (a) : (c)) : ((b) > (c) ? (b) : (c)))

#ifndef TALLY_DISABLE
/* The model's parameter tensors in the order of m->params, with their names. */
typedef struct param_ref {
    const float *p;
    size_t n;
    char name[64];
} param_ref;

static int param_list(const llama_model *m, param_ref *out)
{
    const llama_config *c = &m->c;
    size_t D = (size_t)c->dim, F = (size_t)c->ffn, V = (size_t)c->vocab, KV = (size_t)m->kvd;
    int k = 0;
#define PARAM(ptr, count, ...)                                                                     \
    do {                                                                                           \
        if (out) {                                                                                 \
            out[k].p = (ptr);                                                                      \
            out[k].n = (count);                                                                    \
            snprintf(out[k].name, sizeof out[k].name, __VA_ARGS__);                                \
        }                                                                                          \
        k++;                                                                                       \
    } while (0)
    PARAM(m->embed, V * D, "embedding.weight");
    for (int l = 0; l < c->layers; l++) {
        const layer *L = &m->L[l];
        PARAM(L->attn_norm, D, "layers.%d.attention_norm.weight", l);
        PARAM(L->wq, D * D, "layers.%d.attention.wq.weight", l);
        PARAM(L->wk, KV * D, "layers.%d.attention.wk.weight", l);
        PARAM(L->wv, KV * D, "layers.%d.attention.wv.weight", l);
        PARAM(L->wo, D * D, "layers.%d.attention.wo.weight", l);
        PARAM(L->ffn_norm, D, "layers.%d.ffn_norm.weight", l);
        PARAM(L->w1, F * D, "layers.%d.mlp.w1.weight", l);
        PARAM(L->w3, F * D, "layers.%d.mlp.w3.weight", l);
        PARAM(L->w2, D * F, "layers.%d.mlp.w2.weight", l);
    }
    PARAM(m->final_norm, D, "norm.weight");
    PARAM(m->lm_head, V * D, "lm_head.weight");
#undef PARAM
    return k;
}

/* Tell tally what the model holds for as long as it lives: each parameter, its gradient and
 * AdamW's two moments (at the same offsets in their arrays), and the batch's inputs. on = 0:
 * they are freed. */
static void record_model_memory(llama_model *m, int on)
{
    int n = param_list(m, NULL);
    param_ref *ps = malloc((size_t)n * sizeof *ps);
    if (!ps)
        return;
    param_list(m, ps);
    const float *arrays[4] = {m->params, m->grads, m->adam_m, m->adam_v};
    static const int cats[4] = {TALLY_MEM_PARAMETER, TALLY_MEM_GRADIENT, TALLY_MEM_OPTIMIZER_STATE,
                                TALLY_MEM_OPTIMIZER_STATE};
    static const char *const suffix[4] = {"", "", ".exp_avg", ".exp_avg_sq"};
    char name[96];
    for (int i = 0; i < n; i++)
        for (int a = 0; a < 4; a++) {
            const float *p = arrays[a] + (ps[i].p - m->params);
            if (!on) {
                tally_free(p);
                continue;
            }
            snprintf(name, sizeof name, "%s%s", ps[i].name, suffix[a]);
            tally_alloc(p, ps[i].n * FSZ, -1, cats[a], name);
        }
    free(ps);
    size_t T = (size_t)m->T;
    if (on) {
        tally_alloc(m->tokens, T * sizeof(int32_t), -1, TALLY_MEM_INPUT, "batch.tokens");
        tally_alloc(m->targets, T * sizeof(int32_t), -1, TALLY_MEM_INPUT, "batch.targets");
    } else {
        tally_free(m->tokens);
        tally_free(m->targets);
    }
}
#else
static void record_model_memory(llama_model *m, int on)
{
    (void)m, (void)on;
}
#endif

llama_model *llama_create(const llama_config *cfg, char *err, size_t errlen)
{
    if (llama_config_check(cfg, err, errlen) < 0)
        return NULL;
    llama_model *m = calloc(1, sizeof *m);
    if (!m)
        goto oom;
    m->c = *cfg;
    const llama_config *c = &m->c;
    int D = c->dim, F = c->ffn, V = c->vocab, Lc = c->layers, S = c->seq;
    m->hd = D / c->heads;
    m->kvd = c->kv_heads * m->hd;
    m->T = c->batch * S;
    size_t T = (size_t)m->T, KV = (size_t)m->kvd;

    /* parameters: embed, per layer (attn_norm wq wk wv wo ffn_norm w1 w3 w2), final_norm, lm_head
     */
    size_t per_layer = D + (size_t)D * D + 2 * KV * D + (size_t)D * D + D + 3 * (size_t)F * D;
    m->nparams = (size_t)V * D + Lc * per_layer + D + (size_t)V * D;
    if (!(m->params = alloc_floats(m->nparams)) || !(m->grads = alloc_floats(m->nparams)) ||
        !(m->adam_m = alloc_floats(m->nparams)) || !(m->adam_v = alloc_floats(m->nparams)))
        goto oom;
    if (!(m->L = calloc((size_t)Lc, sizeof *m->L)))
        goto oom;
    float *p = m->params;
    uint64_t seed = k_mix(c->seed);
    float s_d = 1.0f / sqrtf((float)D), s_f = 1.0f / sqrtf((float)F);
#define TAKE(dst, n, init)                                                                         \
    do {                                                                                           \
        (dst) = p;                                                                                 \
        init;                                                                                      \
        p += (n);                                                                                  \
    } while (0)
#define UNI(n, s) init_uniform(p, (n), seed, (size_t)(p - m->params), (s))
#define NORM(n)   init_norm(p, (n), seed, (size_t)(p - m->params))
    TAKE(m->embed, (size_t)V * D, UNI((size_t)V * D, 1.0f));
    for (int l = 0; l < Lc; l++) {
        layer *L = &m->L[l];
        TAKE(L->attn_norm, (size_t)D, NORM((size_t)D));
        TAKE(L->wq, (size_t)D * D, UNI((size_t)D * D, s_d));
        TAKE(L->wk, KV * D, UNI(KV * D, s_d));
        TAKE(L->wv, KV * D, UNI(KV * D, s_d));
        TAKE(L->wo, (size_t)D * D, UNI((size_t)D * D, s_d));
        TAKE(L->ffn_norm, (size_t)D, NORM((size_t)D));
        TAKE(L->w1, (size_t)F * D, UNI((size_t)F * D, s_d));
        TAKE(L->w3, (size_t)F * D, UNI((size_t)F * D, s_d));
        TAKE(L->w2, (size_t)D * F, UNI((size_t)D * F, s_f));
    }
    TAKE(m->final_norm, (size_t)D, NORM((size_t)D));
    TAKE(m->lm_head, (size_t)V * D, UNI((size_t)V * D, s_d));
#undef TAKE
#undef UNI
#undef NORM

    /* activations */
    for (int l = 0; l < Lc; l++) {
        layer *L = &m->L[l];
        if (!(L->xn1 = alloc_floats(T * D)) || !(L->rstd1 = alloc_floats(T)) ||
            !(L->q = alloc_floats(T * D)) || !(L->k = alloc_floats(T * KV)) ||
            !(L->v = alloc_floats(T * KV)) || !(L->att = alloc_floats(T * D)) ||
            !(L->xn2 = alloc_floats(T * D)) || !(L->rstd2 = alloc_floats(T)) ||
            !(L->h1 = alloc_floats(T * F)) || !(L->h3 = alloc_floats(T * F)) ||
            !(L->act = alloc_floats(T * F)))
            goto oom;
    }
    if (!(m->res = calloc(2 * (size_t)Lc + 1, sizeof *m->res)))
        goto oom;
    for (int i = 0; i <= 2 * Lc; i++)
        if (!(m->res[i] = alloc_floats(T * D)))
            goto oom;
    size_t cache = (size_t)Lc * c->batch * S * KV;
    size_t maxnk = MAX3((size_t)V, (size_t)F, (size_t)D);
    if (!(m->xnf = alloc_floats(T * D)) || !(m->rstdf = alloc_floats(T)) ||
        !(m->logits = alloc_floats(T * V)) || !(m->lse = alloc_floats(T)) ||
        !(m->tmp = alloc_floats(T * D)) || !(m->kcache = alloc_floats(cache)) ||
        !(m->vcache = alloc_floats(cache)) ||
        !(m->rope_cos = alloc_floats((size_t)S * m->hd / 2)) ||
        !(m->rope_sin = alloc_floats((size_t)S * m->hd / 2)) ||
        !(m->norm_scratch = alloc_floats(2 * T * D + 3 * T)) ||
        !(m->scores = alloc_floats((size_t)c->threads * S)) ||
        !(m->partial = alloc_floats((size_t)c->threads)) || !(m->dres = alloc_floats(T * D)) ||
        !(m->dxn = alloc_floats(T * D)) || !(m->datt = alloc_floats(T * D)) ||
        !(m->dq = alloc_floats(T * D)) || !(m->dk = alloc_floats(T * KV)) ||
        !(m->dv = alloc_floats(T * KV)) || !(m->dff1 = alloc_floats(T * F)) ||
        !(m->dff2 = alloc_floats(T * F)) || !(m->tr_dy = alloc_floats(T * maxnk)) ||
        !(m->tr_x = alloc_floats(T * maxnk)) || !(m->tr_w = alloc_floats(maxnk * D)))
        goto oom;
    for (int pos = 0; pos < S; pos++)
        for (int i = 0; i < m->hd / 2; i++) {
            double freq = pow(ROPE_THETA, -2.0 * i / m->hd), a = pos * freq;
            m->rope_cos[(size_t)pos * m->hd / 2 + i] = (float)cos(a);
            m->rope_sin[(size_t)pos * m->hd / 2 + i] = (float)sin(a);
        }

    size_t S1 = (size_t)S + 1;
    m->text = malloc((size_t)c->batch * S1 * c->text_bytes);
    m->staging = malloc((size_t)c->batch * S1 * sizeof(int32_t));
    m->tokens = malloc(T * sizeof(int32_t));
    m->targets = malloc(T * sizeof(int32_t));
    if (!m->text || !m->staging || !m->tokens || !m->targets)
        goto oom;
    memset(m->text, 0, (size_t)c->batch * S1 * c->text_bytes);
    memset(m->staging, 0, (size_t)c->batch * S1 * sizeof(int32_t));
    memset(m->tokens, 0, T * sizeof(int32_t));
    memset(m->targets, 0, T * sizeof(int32_t));

    if (!(m->pool = pool_create(c->threads)))
        goto oom;
    m->c.threads = pool_threads(m->pool);
    /* the blocks a step records: at most 32 per layer and a dozen more */
    m->cap_live = 32 * Lc + 32;
    if (!(m->live = malloc((size_t)m->cap_live * sizeof *m->live)))
        goto oom;
    make_shapes(m, c->batch, S);
    record_model_memory(m, 1);
    m->memory_recorded = 1;
    return m;

oom:
    if (err && errlen)
        snprintf(err, errlen, "out of memory building the model");
    llama_free(m);
    return NULL;
}

void llama_free(llama_model *m)
{
    if (!m)
        return;
    mem_drop_all(m);
    if (m->memory_recorded)
        record_model_memory(m, 0);
    free(m->live);
    pool_destroy(m->pool);
    if (m->L)
        for (int l = 0; l < m->c.layers; l++) {
            layer *L = &m->L[l];
            free(L->xn1), free(L->rstd1), free(L->q), free(L->k), free(L->v), free(L->att);
            free(L->xn2), free(L->rstd2), free(L->h1), free(L->h3), free(L->act);
        }
    free(m->L);
    if (m->res)
        for (int i = 0; i <= 2 * m->c.layers; i++)
            free(m->res[i]);
    free(m->res);
    free(m->params), free(m->grads), free(m->adam_m), free(m->adam_v);
    free(m->xnf), free(m->rstdf), free(m->logits), free(m->lse), free(m->tmp);
    free(m->kcache), free(m->vcache), free(m->rope_cos), free(m->rope_sin);
    free(m->norm_scratch), free(m->scores), free(m->partial);
    free(m->dres), free(m->dxn), free(m->datt), free(m->dq), free(m->dk), free(m->dv);
    free(m->dff1), free(m->dff2), free(m->tr_dy), free(m->tr_x), free(m->tr_w);
    free(m->text), free(m->staging), free(m->tokens), free(m->targets);
    free(m);
}
