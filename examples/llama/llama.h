/*
 * llama.h — the built-in workload: a Llama-style decoder in plain C, instrumented with tally.
 *
 * A model on random weights (deterministic seed): token embedding, RMSNorm, rotary embedding,
 * grouped-query attention with a KV cache, SwiGLU MLP, LM head and a cross-entropy loss. One
 * training-like step (llama_step) is
 *
 *   dataloader  (TALLY_DATALOADER) synthesise text with a hash, tokenize it, copy the batch into
 *                                  a staging buffer and then into the model's input
 *   forward     (TALLY_FORWARD)    the forward pass over batch x seq tokens, ranges per layer
 *                                  ("decoder_layer", "attention_block", "mlp_block") and per
 *                                  operator (TALLY_OPERATOR: "embedding", "rmsnorm", "matmul",
 *                                  "rope", "attention", "swiglu", "add", "lm_head",
 *                                  "cross_entropy") with their input shapes as the argument
 *   backward    (TALLY_BACKWARD)   gradient-shaped work: the cross-entropy and LM-head gradients
 *                                  are exact; every linear layer gets its weight and input
 *                                  gradients (two matmuls of the forward's size); SwiGLU's
 *                                  gradient is exact; RMSNorm's drops the projection term and
 *                                  the attention core's gradient is the identity (so its cost
 *                                  is understated — it is load, not a real backward)
 *   optimizer   (TALLY_OPTIMIZER)  AdamW over every parameter
 *   zero_grad                      clearing the gradients (outside the optimizer: "Other")
 *   tally_step(batch * seq)        throughput in tokens
 *
 * Matrix products, attention and the optimizer run on a small persistent thread pool (the
 * calling thread takes part); every participant's share is inside a range of its own
 * ("matmul.worker", "attention.worker", "adamw.worker") on its own thread.
 *
 * The model is a library so that `tally demo`, the tally-llama program, the overhead benchmark
 * and the tests share it. It never prints; errors come back as return values.
 */
#ifndef TALLY_LLAMA_H
#define TALLY_LLAMA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum llama_rmsnorm_kind {
    LLAMA_RMSNORM_UNFUSED = 0, /* five passes with intermediate tensors, as in eager PyTorch */
    LLAMA_RMSNORM_FUSED = 1    /* one pass per row */
} llama_rmsnorm_kind;

typedef struct llama_config {
    int layers;     /* decoder layers */
    int dim;        /* model width */
    int heads;      /* query heads; dim % heads == 0, head_dim even */
    int kv_heads;   /* key/value heads; heads % kv_heads == 0 */
    int ffn;        /* SwiGLU hidden width */
    int seq;        /* tokens per sequence (and the KV cache's length) */
    int batch;      /* sequences per step */
    int vocab;      /* vocabulary size */
    int steps;      /* steps a driver runs */
    int threads;    /* threads doing matrix products, the calling thread included (>= 1) */
    int rmsnorm;    /* llama_rmsnorm_kind */
    uint64_t seed;  /* weights and data */
    int text_bytes; /* bytes of synthetic text the dataloader generates per token */
} llama_config;

/* The default size: profiles in a few seconds on a 2-core machine. */
void llama_config_default(llama_config *c);

/* Check the sizes; returns 0, or -1 with a one-line reason in err. */
int llama_config_check(const llama_config *c, char *err, size_t errlen);

/*
 * Parse one model option at argv[*i] ("--dim 256" or "--dim=256"): --layers --dim --heads
 * --kv-heads --ffn --seq --batch --vocab --steps --threads --seed --rmsnorm unfused|fused.
 * Returns 1 when it was one (and *i is advanced past its value), 0 when argv[*i] is not a model
 * option, -1 on a bad value (one-line reason in err).
 */
int llama_parse_option(llama_config *c, int argc, char **argv, int *i, char *err, size_t errlen);

/* The help lines of those options, for a command's usage text, with the defaults of `defaults`
 * (NULL: llama_config_default's); show_rmsnorm = 0 leaves --rmsnorm out (a command that
 * describes it itself). */
void llama_options_help(FILE *f, const llama_config *defaults, int show_rmsnorm);

/* "unfused" / "fused" */
const char *llama_rmsnorm_name(int kind);

typedef struct llama_model llama_model;

/* Build the model: weights, optimizer state, activations, KV cache (all touched up front, so
 * no step takes page faults) and the thread pool. Returns NULL on a bad config or out of memory
 * (reason in err). */
llama_model *llama_create(const llama_config *c, char *err, size_t errlen);
void llama_free(llama_model *m);

const llama_config *llama_get_config(const llama_model *m);
/* Number of parameters. */
size_t llama_param_count(const llama_model *m);

/* Switch the RMSNorm implementation (the weights stay the same). */
void llama_set_rmsnorm(llama_model *m, int kind);

/* One training-like step: dataloader, forward, backward, optimizer, zero_grad, tally_step.
 * step is the data index (the batch is a function of seed and step). Returns the loss. */
float llama_step(llama_model *m, int64_t step);

/*
 * The forward pass alone over tokens[batch * n] (row-major [batch][n]) at positions
 * start_pos .. start_pos + n - 1, using and filling the KV cache (positions < start_pos must
 * have been filled by earlier calls). batch <= config batch, start_pos + n <= config seq.
 * Returns the logits [batch * n][vocab] (owned by the model, valid until the next call).
 */
const float *llama_forward(llama_model *m, const int32_t *tokens, int batch, int n, int start_pos);

/* The RMSNorm kernels themselves, for tests: out[rows][dim] = x * rsqrt(mean(x^2) + eps) * w.
 * The unfused one needs scratch of 2 * rows * dim + 3 * rows floats. */
void llama_rmsnorm_fused(float *out, const float *x, const float *w, int rows, int dim, float eps);
void llama_rmsnorm_unfused(float *out, const float *x, const float *w, int rows, int dim, float eps,
                           float *scratch);

#ifdef __cplusplus
}
#endif

#endif
