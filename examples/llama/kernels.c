/*
 * kernels.c — matrix product and transpose (see kernels.h).
 *
 * The product is blocked over B's rows so that a block of B (64 rows) stays in cache while the
 * rows of A stream past it, and computes a 2 x 4 tile of C per pass over k: 8 vector
 * accumulators, 6 loads per 4 k — enough work per load to run near the adders' rate without
 * spilling the 16 vector registers of baseline x86-64.
 */
#include "kernels.h"

#define NB 64 /* rows of B per block */

static inline float tile_finish(v4f acc, const float *a, const float *b, int k0, int K)
{
    float s = k_hsum(acc);
    for (int k = k0; k < K; k++)
        s += a[k] * b[k];
    return s;
}

static void tile_2x4(const float *a0, const float *a1, const float *B, int ldb, float *c0,
                     float *c1, int K, int acc)
{
    const float *b0 = B, *b1 = B + ldb, *b2 = B + 2 * (size_t)ldb, *b3 = B + 3 * (size_t)ldb;
    v4f s00 = k_splat(0), s01 = s00, s02 = s00, s03 = s00;
    v4f s10 = s00, s11 = s00, s12 = s00, s13 = s00;
    int k = 0;
    for (; k + 4 <= K; k += 4) {
        v4f x0 = k_load(a0 + k), x1 = k_load(a1 + k);
        v4f w0 = k_load(b0 + k), w1 = k_load(b1 + k);
        s00 += x0 * w0;
        s01 += x0 * w1;
        s10 += x1 * w0;
        s11 += x1 * w1;
        v4f w2 = k_load(b2 + k), w3 = k_load(b3 + k);
        s02 += x0 * w2;
        s03 += x0 * w3;
        s12 += x1 * w2;
        s13 += x1 * w3;
    }
    float r[8] = {
        tile_finish(s00, a0, b0, k, K), tile_finish(s01, a0, b1, k, K),
        tile_finish(s02, a0, b2, k, K), tile_finish(s03, a0, b3, k, K),
        tile_finish(s10, a1, b0, k, K), tile_finish(s11, a1, b1, k, K),
        tile_finish(s12, a1, b2, k, K), tile_finish(s13, a1, b3, k, K),
    };
    for (int j = 0; j < 4; j++) {
        c0[j] = acc ? c0[j] + r[j] : r[j];
        c1[j] = acc ? c1[j] + r[4 + j] : r[4 + j];
    }
}

/* One element with the tile's accumulation order, so that every element of C is computed the
 * same way wherever it falls (results do not depend on the thread split or on M). */
static inline float dot_1(const float *a, const float *b, int K)
{
    v4f s = k_splat(0);
    int k = 0;
    for (; k + 4 <= K; k += 4)
        s += k_load(a + k) * k_load(b + k);
    return tile_finish(s, a, b, k, K);
}

static void tile_1x4(const float *a0, const float *B, int ldb, float *c0, int K, int acc)
{
    const float *b0 = B, *b1 = B + ldb, *b2 = B + 2 * (size_t)ldb, *b3 = B + 3 * (size_t)ldb;
    v4f s0 = k_splat(0), s1 = s0, s2 = s0, s3 = s0;
    int k = 0;
    for (; k + 4 <= K; k += 4) {
        v4f x0 = k_load(a0 + k);
        s0 += x0 * k_load(b0 + k);
        s1 += x0 * k_load(b1 + k);
        s2 += x0 * k_load(b2 + k);
        s3 += x0 * k_load(b3 + k);
    }
    float r[4] = {tile_finish(s0, a0, b0, k, K), tile_finish(s1, a0, b1, k, K),
                  tile_finish(s2, a0, b2, k, K), tile_finish(s3, a0, b3, k, K)};
    for (int j = 0; j < 4; j++)
        c0[j] = acc ? c0[j] + r[j] : r[j];
}

void k_gemm_nt(const float *A, int lda, const float *B, int ldb, float *C, int ldc, int K, int m0,
               int m1, int n0, int n1, int accumulate)
{
    for (int nb = n0; nb < n1; nb += NB) {
        int ne = nb + NB < n1 ? nb + NB : n1;
        int m = m0;
        for (; m + 2 <= m1; m += 2) {
            const float *a0 = A + (size_t)m * lda, *a1 = a0 + lda;
            float *c0 = C + (size_t)m * ldc, *c1 = c0 + ldc;
            int n = nb;
            for (; n + 4 <= ne; n += 4)
                tile_2x4(a0, a1, B + (size_t)n * ldb, ldb, c0 + n, c1 + n, K, accumulate);
            for (; n < ne; n++) {
                const float *b = B + (size_t)n * ldb;
                float s0 = dot_1(a0, b, K), s1 = dot_1(a1, b, K);
                c0[n] = accumulate ? c0[n] + s0 : s0;
                c1[n] = accumulate ? c1[n] + s1 : s1;
            }
        }
        for (; m < m1; m++) {
            const float *a = A + (size_t)m * lda;
            float *c = C + (size_t)m * ldc;
            int n = nb;
            for (; n + 4 <= ne; n += 4)
                tile_1x4(a, B + (size_t)n * ldb, ldb, c + n, K, accumulate);
            for (; n < ne; n++) {
                float s = dot_1(a, B + (size_t)n * ldb, K);
                c[n] = accumulate ? c[n] + s : s;
            }
        }
    }
}

void k_transpose(float *dst, const float *src, int rows, int cols)
{
    enum { T = 32 };
    for (int r0 = 0; r0 < rows; r0 += T)
        for (int c0 = 0; c0 < cols; c0 += T) {
            int r1 = r0 + T < rows ? r0 + T : rows, c1 = c0 + T < cols ? c0 + T : cols;
            for (int r = r0; r < r1; r++)
                for (int c = c0; c < c1; c++)
                    dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
        }
}
