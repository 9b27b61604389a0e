/*
 * kernels.h — the workload's arithmetic, free of instrumentation and threads.
 *
 * Written with GCC/Clang vector types (4 floats) so that the default -O2 build gets SIMD code on
 * any target without architecture flags. Every reduction keeps four vector accumulators and adds
 * them in one fixed order, so results are deterministic and the same for every caller (the fused
 * and unfused RMSNorm sum their squares identically).
 */
#ifndef TALLY_LLAMA_KERNELS_H
#define TALLY_LLAMA_KERNELS_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

typedef float v4f __attribute__((vector_size(16)));

static inline v4f k_load(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void k_store(float *p, v4f v)
{
    memcpy(p, &v, sizeof v);
}

static inline v4f k_splat(float x)
{
    return (v4f){x, x, x, x};
}

static inline float k_hsum(v4f v)
{
    return (v[0] + v[1]) + (v[2] + v[3]);
}

/* sum of a[i] * b[i] */
static inline float k_dot(const float *a, const float *b, int n)
{
    v4f s0 = k_splat(0), s1 = s0, s2 = s0, s3 = s0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 += k_load(a + i) * k_load(b + i);
        s1 += k_load(a + i + 4) * k_load(b + i + 4);
        s2 += k_load(a + i + 8) * k_load(b + i + 8);
        s3 += k_load(a + i + 12) * k_load(b + i + 12);
    }
    for (; i + 4 <= n; i += 4)
        s0 += k_load(a + i) * k_load(b + i);
    float s = k_hsum((s0 + s1) + (s2 + s3));
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* sum of a[i] (the same order as k_dot, so sum(x*x) == k_dot(x, x)) */
static inline float k_sum(const float *a, int n)
{
    v4f s0 = k_splat(0), s1 = s0, s2 = s0, s3 = s0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 += k_load(a + i);
        s1 += k_load(a + i + 4);
        s2 += k_load(a + i + 8);
        s3 += k_load(a + i + 12);
    }
    for (; i + 4 <= n; i += 4)
        s0 += k_load(a + i);
    float s = k_hsum((s0 + s1) + (s2 + s3));
    for (; i < n; i++)
        s += a[i];
    return s;
}

/* y[i] += a * x[i] */
static inline void k_axpy(float *y, float a, const float *x, int n)
{
    v4f va = k_splat(a);
    int i = 0;
    for (; i + 4 <= n; i += 4)
        k_store(y + i, k_load(y + i) + va * k_load(x + i));
    for (; i < n; i++)
        y[i] += a * x[i];
}

/* lane-wise square root */
static inline v4f k_sqrt(v4f v)
{
#if defined(__SSE__)
    return (v4f)_mm_sqrt_ps((__m128)v);
#else
    return (v4f){sqrtf(v[0]), sqrtf(v[1]), sqrtf(v[2]), sqrtf(v[3])};
#endif
}

/* out[i] = a[i] * b[i] */
static inline void k_mul(float *out, const float *a, const float *b, int n)
{
    int i = 0;
    for (; i + 4 <= n; i += 4)
        k_store(out + i, k_load(a + i) * k_load(b + i));
    for (; i < n; i++)
        out[i] = a[i] * b[i];
}

/* out[i] = a[i] * s */
static inline void k_scale(float *out, const float *a, float s, int n)
{
    v4f vs = k_splat(s);
    int i = 0;
    for (; i + 4 <= n; i += 4)
        k_store(out + i, k_load(a + i) * vs);
    for (; i < n; i++)
        out[i] = a[i] * s;
}

/* out[i] = (a[i] * s) * w[i]: the fused RMSNorm's scaling, in the unfused order */
static inline void k_scale_mul(float *out, const float *a, float s, const float *w, int n)
{
    v4f vs = k_splat(s);
    int i = 0;
    for (; i + 4 <= n; i += 4)
        k_store(out + i, (k_load(a + i) * vs) * k_load(w + i));
    for (; i < n; i++)
        out[i] = (a[i] * s) * w[i];
}

/* out[i] = (a[i] * b[i]) * c[i] */
static inline void k_mul3(float *out, const float *a, const float *b, const float *c, int n)
{
    int i = 0;
    for (; i + 4 <= n; i += 4)
        k_store(out + i, (k_load(a + i) * k_load(b + i)) * k_load(c + i));
    for (; i < n; i++)
        out[i] = (a[i] * b[i]) * c[i];
}

/* out[i] = v */
static inline void k_fill(float *out, float v, size_t n)
{
    v4f vv = k_splat(v);
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        k_store(out + i, vv);
    for (; i < n; i++)
        out[i] = v;
}

/* out[i] = a[i] + s */
static inline void k_add_scalar(float *out, const float *a, float s, size_t n)
{
    v4f vs = k_splat(s);
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        k_store(out + i, k_load(a + i) + vs);
    for (; i < n; i++)
        out[i] = a[i] + s;
}

/* out[i] = 1 / sqrt(a[i]) (a true division, not the approximate rsqrt instruction) */
static inline void k_rsqrt(float *out, const float *a, size_t n)
{
    v4f one = k_splat(1.0f);
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        k_store(out + i, one / k_sqrt(k_load(a + i)));
    for (; i < n; i++)
        out[i] = 1.0f / sqrtf(a[i]);
}

/* out[i] = a[i] + b[i] */
static inline void k_add(float *out, const float *a, const float *b, size_t n)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        k_store(out + i, k_load(a + i) + k_load(b + i));
    for (; i < n; i++)
        out[i] = a[i] + b[i];
}

/*
 * C[m][n] (+)= sum_k A[m][k] * B[n][k] for m in [m0, m1), n in [n0, n1): "A times B transposed",
 * the shape of x @ W.T with torch's [out, in] weights. Row strides lda, ldb, ldc in floats.
 */
void k_gemm_nt(const float *A, int lda, const float *B, int ldb, float *C, int ldc, int K, int m0,
               int m1, int n0, int n1, int accumulate);

/* dst[c][r] = src[r][c] for a rows x cols matrix. */
void k_transpose(float *dst, const float *src, int rows, int cols);

/* splitmix64: the workload's only source of randomness. */
static inline uint64_t k_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* uniform in [-1, 1) from a 64-bit hash */
static inline float k_uniform(uint64_t h)
{
    return (float)((double)(h >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

#endif
