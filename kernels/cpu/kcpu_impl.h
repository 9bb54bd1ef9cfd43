/*
 * kcpu_impl.h - internals shared by the CPU kernels: the GEMM block that
 * convolution and linear reduce to, the per-ISA entry points, and a way for
 * tests to force an instruction set. Not for use outside kernels/cpu and the
 * kernel tests.
 *
 * GEMM shape: C[m, n] = A[m, k] . B[k, n] with A packed once (weights for a
 * convolution, the activations for linear) in panels of KCPU_MR rows, and B
 * read in strips of KCPU_NR columns. Every ISA uses the same packed layouts,
 * so packed weights do not depend on the ISA that runs them.
 */
#ifndef KCPU_IMPL_H
#define KCPU_IMPL_H

#include <math.h>
#include <stdint.h>

#include "kcpu.h"

#define KCPU_MR 8   /* rows of a packed A panel: element (i, kk) at kk * KCPU_MR + i */
#define KCPU_NR 32  /* columns of a B strip */

/* One block of work for a GEMM microkernel loop.
 * B element (kk, j0 + t) is at b[(t / KCPU_NR) * b_strip + kk * ldb + t % KCPU_NR].
 * C element (i, j), j global, is at
 *     c[(j / seg_len) * seg_stride + j % seg_len + i * ldc]
 * which describes both a plain row-major matrix (seg_len >= every j) and a
 * batch of NCHW images whose pixels form one column space (seg_len = oh * ow,
 * seg_stride = oc * oh * ow, ldc = oh * ow). res, when set, has C's layout.
 * Epilogue: c = act(acc + bias_row[i] + bias_col[j] + res). */
struct kcpu_gemm {
    int m;
    int64_t k;
    const float *a;        /* ceil(m / KCPU_MR) panels of [k][KCPU_MR] */
    const float *b;
    int64_t ldb, b_strip;
    int64_t j0, n;
    int64_t seg_len, seg_stride, ldc;
    float *c;
    const float *res;      /* or NULL */
    const float *bias_row; /* [m] or NULL */
    const float *bias_col; /* indexed by global column j, or NULL */
    enum k_act act;
};

/* Runs the block with the ISA kcpu_isa() selects. */
void kcpu_gemm_run(const struct kcpu_gemm *g);
void kcpu_gemm_scalar(const struct kcpu_gemm *g);
void kcpu_gemm_avx2(const struct kcpu_gemm *g);
void kcpu_gemm_avx512(const struct kcpu_gemm *g);

/* Stores an accumulator tile tmp[mr][KCPU_NR] (columns j .. j + nr of the
 * block) through the epilogue; act_row applies the activation in place. */
typedef void (*kcpu_act_row_fn)(enum k_act act, int64_t count, const float *x, float *y);
void kcpu_gemm_store_tile(const struct kcpu_gemm *g, const float *tmp, int i0, int mr,
                          int64_t j, int nr, kcpu_act_row_fn act_row);

/* Vectorised element-wise loops; y may alias x, a or b element for element. */
void kcpu_act_scalar(enum k_act act, int64_t count, const float *x, float *y);
void kcpu_act_avx2(enum k_act act, int64_t count, const float *x, float *y);
void kcpu_act_avx512(enum k_act act, int64_t count, const float *x, float *y);
void kcpu_add_avx2(int64_t count, const float *a, const float *b, float *y);
void kcpu_add_avx512(int64_t count, const float *a, const float *b, float *y);
/* y = x * s + t for count elements (one channel of an affine). */
void kcpu_affine_avx2(int64_t count, const float *x, float s, float t, float *y);
void kcpu_affine_avx512(int64_t count, const float *x, float s, float t, float *y);

/* The best ISA the CPU itself supports, ignoring INFERD_CPU_ISA. */
enum kcpu_isa kcpu_isa_hardware(void);
/* Makes kcpu_isa() return isa from now on (tests run every kernel under
 * every ISA the CPU has). Returns 0, or -1 when the CPU lacks isa. Packed
 * weights stay valid across the switch. */
int kcpu_isa_set_for_testing(enum kcpu_isa isa);

/* Scalar activation shared by the plain-C paths and vector tails. */
static inline float kcpu_act1(enum k_act act, float x)
{
    switch (act) {
    case K_ACT_RELU:
        return x < 0 ? 0.0f : x;
    case K_ACT_RELU6:
        return x < 0 ? 0.0f : x > 6 ? 6.0f : x;
    case K_ACT_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case K_ACT_TANH:
        return tanhf(x);
    case K_ACT_GELU:
        /* erfc rather than 1 + erf: no cancellation in the negative tail. */
        return 0.5f * x * erfcf(-x * 0.70710678118654752f);
    case K_ACT_GELU_TANH:
        /* x/2 * (1 + tanh(u)) == x * sigmoid(2u), likewise. */
        return x / (1.0f + expf(-1.59576912160573072f * (x + 0.044715f * x * x * x)));
    default:
        return x;
    }
}

static inline int64_t kcpu_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t kcpu_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t kcpu_max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Rounds a caller's scratch pointer up to a 64-byte boundary; the
 * *_scratch_bytes functions include the slack. */
static inline float *kcpu_align64(void *p)
{
    return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

#endif /* KCPU_IMPL_H */
