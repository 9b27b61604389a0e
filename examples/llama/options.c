/*
 * options.c — the workload's size and flags, shared by `tally demo`, tally-llama and the
 * benchmark so that all three accept the same options with the same meaning.
 */
#include "llama.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

void llama_config_default(llama_config *c)
{
    memset(c, 0, sizeof *c);
    c->layers = 4;
    c->dim = 256;
    c->heads = 8;
    c->kv_heads = 4;
    c->ffn = 704;
    c->seq = 128;
    c->batch = 4;
    c->vocab = 2048;
    c->steps = 10;
    c->threads = 2;
    c->rmsnorm = LLAMA_RMSNORM_UNFUSED;
    c->seed = 42;
    c->text_bytes = 8192;
}

const char *llama_rmsnorm_name(int kind)
{
    return kind == LLAMA_RMSNORM_FUSED ? "fused" : "unfused";
}

int llama_config_check(const llama_config *c, char *err, size_t errlen)
{
#define BAD(...)                                                                                   \
    do {                                                                                           \
        if (err && errlen)                                                                         \
            snprintf(err, errlen, __VA_ARGS__);                                                    \
        return -1;                                                                                 \
    } while (0)
    if (c->layers < 1 || c->layers > 256)
        BAD("--layers must be 1..256, not %d", c->layers);
    if (c->dim < 4 || c->dim > 16384)
        BAD("--dim must be 4..16384, not %d", c->dim);
    if (c->heads < 1 || c->dim % c->heads != 0)
        BAD("--heads (%d) must divide --dim (%d)", c->heads, c->dim);
    if ((c->dim / c->heads) % 2 != 0)
        BAD("head size --dim/--heads (%d) must be even for the rotary embedding",
            c->dim / c->heads);
    if (c->kv_heads < 1 || c->heads % c->kv_heads != 0)
        BAD("--kv-heads (%d) must divide --heads (%d)", c->kv_heads, c->heads);
    if (c->ffn < 1 || c->ffn > 65536)
        BAD("--ffn must be 1..65536, not %d", c->ffn);
    if (c->seq < 2 || c->seq > 65536)
        BAD("--seq must be 2..65536, not %d", c->seq);
    if (c->batch < 1 || c->batch > 4096)
        BAD("--batch must be 1..4096, not %d", c->batch);
    if ((long long)c->batch * c->seq > (1 << 22))
        BAD("--batch x --seq must be at most %d tokens", 1 << 22);
    if (c->vocab < 2 || c->vocab > (1 << 22))
        BAD("--vocab must be 2..%d, not %d", 1 << 22, c->vocab);
    if (c->steps < 1)
        BAD("--steps must be at least 1, not %d", c->steps);
    if (c->threads < 1 || c->threads > 256)
        BAD("--threads must be 1..256, not %d", c->threads);
    if (c->rmsnorm != LLAMA_RMSNORM_UNFUSED && c->rmsnorm != LLAMA_RMSNORM_FUSED)
        BAD("--rmsnorm must be unfused or fused");
    if (c->text_bytes < 1 || c->text_bytes > (1 << 20))
        BAD("--text-bytes must be 1..%d, not %d", 1 << 20, c->text_bytes);
    return 0;
#undef BAD
}

static const struct opt {
    const char *name;
    size_t off; /* offset of the int field */
    const char *help;
} opts[] = {
    {"layers", offsetof(llama_config, layers), "decoder layers"},
    {"dim", offsetof(llama_config, dim), "model width"},
    {"heads", offsetof(llama_config, heads), "query heads"},
    {"kv-heads", offsetof(llama_config, kv_heads), "key/value heads, for grouped-query attention"},
    {"ffn", offsetof(llama_config, ffn), "SwiGLU hidden width"},
    {"seq", offsetof(llama_config, seq), "tokens per sequence"},
    {"batch", offsetof(llama_config, batch), "sequences per step"},
    {"vocab", offsetof(llama_config, vocab), "vocabulary size"},
    {"steps", offsetof(llama_config, steps), "training steps"},
    {"threads", offsetof(llama_config, threads),
     "threads for matrix products, the caller included"},
    {"text-bytes", offsetof(llama_config, text_bytes), "dataloader: bytes of text per token"},
};

void llama_options_help(FILE *f, const llama_config *defaults, int show_rmsnorm)
{
    llama_config d;
    if (defaults)
        d = *defaults;
    else
        llama_config_default(&d);
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        char flag[32];
        snprintf(flag, sizeof flag, "    --%s N", opts[i].name);
        fprintf(f, "  %-24s %s (default %d)\n", flag, opts[i].help,
                *(const int *)((const char *)&d + opts[i].off));
    }
    fprintf(f, "  %-24s %s (default %llu)\n", "    --seed N", "weights and data seed",
            (unsigned long long)d.seed);
    if (show_rmsnorm)
        fprintf(f, "  %-24s %s (default %s)\n", "    --rmsnorm KIND",
                "unfused (five passes) or fused (one)", llama_rmsnorm_name(d.rmsnorm));
}

/* "--name" or "--name=value": the value, or NULL when argv[*i] is not --name. */
static const char *match(int argc, char **argv, int *i, const char *name, int *consumed_next,
                         int *missing)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    *consumed_next = 0;
    *missing = 0;
    if (strncmp(a, "--", 2) != 0 || strncmp(a + 2, name, n) != 0)
        return NULL;
    if (a[2 + n] == '=')
        return a + 3 + n;
    if (a[2 + n] != 0)
        return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return "";
    }
    *consumed_next = 1;
    return argv[*i + 1];
}

static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int llama_parse_option(llama_config *c, int argc, char **argv, int *i, char *err, size_t errlen)
{
    int next, missing;
    const char *v;
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        if (!(v = match(argc, argv, i, opts[k].name, &next, &missing)))
            continue;
        long long x;
        if (missing) {
            snprintf(err, errlen, "--%s needs a value", opts[k].name);
            return -1;
        }
        if (parse_int(v, INT_MIN, INT_MAX, &x) < 0) {
            snprintf(err, errlen, "--%s: expected an integer, got '%s'", opts[k].name, v);
            return -1;
        }
        *(int *)((char *)c + opts[k].off) = (int)x;
        *i += next;
        return 1;
    }
    if ((v = match(argc, argv, i, "seed", &next, &missing))) {
        long long x;
        if (missing || parse_int(v, 0, LLONG_MAX, &x) < 0) {
            snprintf(err, errlen, "--seed: expected a non-negative integer, got '%s'", v);
            return -1;
        }
        c->seed = (uint64_t)x;
        *i += next;
        return 1;
    }
    if ((v = match(argc, argv, i, "rmsnorm", &next, &missing))) {
        if (!strcmp(v, "unfused"))
            c->rmsnorm = LLAMA_RMSNORM_UNFUSED;
        else if (!strcmp(v, "fused"))
            c->rmsnorm = LLAMA_RMSNORM_FUSED;
        else {
            snprintf(err, errlen, "--rmsnorm: expected unfused or fused, got '%s'", v);
            return -1;
        }
        *i += next;
        return 1;
    }
    return 0;
}
