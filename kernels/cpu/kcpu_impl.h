/*
 * kcpu_impl.h - internals shared by the CPU kernels: the GEMM block that
 * convolution and linear reduce to, the per-ISA entry points, and a way for
 * tests to force an instruction set. Not for use outside kernels/cpu and the
 * kernel tests.
 *
 * GEMM shape: C[m, n] = A[m, k] . B[k, n] with A packed once (weights for a
 * convolution, the activations for linear) in panels of KCPU_MR rows, and B
 * read in strips of KCPU_NR columns. Every ISA uses the same packed layouts,
 * so packed weights do not depend on the ISA that runs them. A panel pair
 * is two panels interleaved, KCPU_PAIR rows a depth step, element (i, kk)
 * at kk * KCPU_PAIR + i: one 64-byte line holds 16 rows of a step, which
 * the pixel-tile kernel loads as one AVX-512 vector (kcpu_conv2d_pack).
 */
#ifndef KCPU_IMPL_H
#define KCPU_IMPL_H

#include <math.h>
#include <stdint.h>

#include "kcpu.h"

#define KCPU_MR 8   /* rows of a packed A panel: element (i, kk) at kk * KCPU_MR + i */
#define KCPU_NR 32  /* columns of a B strip */
#define KCPU_PAIR ((int64_t)2 * KCPU_MR)   /* rows of a panel pair */

/* Least multiply-adds worth a task of their own (about half a microsecond
 * on one AVX-512 core). A hot worker takes a task in well under that; a
 * sleeping one is woken only for tasks that outlast a wake-up (the pool
 * times the first, kcpu_threads.c). 256k before 2026-11-26: 64k gave
 * MobileNetV2 +7% and resnet-mini +3% at batch 1 on two threads, the same
 * at batch 64 and on lenet5 (docs/performance.md). */
#define KCPU_MIN_TASK_MACS ((int64_t)64 * 1024)

/* Elements per task of the memory-bound kernels (element-wise, softmax,
 * concat): large enough to amortise a task claim, small enough that a few
 * tasks exist per thread for mid-sized tensors. */
#define KCPU_CHUNK 16384

/* One block of work for a GEMM microkernel loop.
 *
 * B element (kk, j0 + t) is at b[(t / KCPU_NR) * b_strip + row(kk) + t % KCPU_NR]
 * with row(kk) = boff ? boff[kk] : kk * ldb. The offset table lets a
 * stride-1 convolution read its padded input directly (implicit GEMM).
 *
 * Columns j are mapped to outputs in two levels, images then rows:
 *     img = j / seg_len, row = j % seg_len / row_len, col = j % seg_len % row_len
 * and only row < rows_valid, col < row_valid are real outputs, stored at
 *     c[img * seg_stride + row * row_stride + col + i * ldc]
 * (row_stride 0 meaning row_valid: output rows back to back; more when the
 * outputs are a rectangle inside a larger map).
 * A plain row-major matrix has one huge segment and row; the im2col path's
 * NCHW batch has seg_len = row_len = row_valid = oh * ow, rows_valid = 1;
 * the implicit path's columns cover a padded grid whose extra rows and
 * columns are computed and dropped. res, when set, has C's layout.
 * Epilogue: c = act(acc + bias_row[i] + bias_col[j] + res). */
struct kcpu_gemm {
    int m;
    int64_t k;
    const float *a;        /* ceil(m / KCPU_MR) panels of [k][KCPU_MR], or pairs of them */
    int64_t a_step;        /* floats from a depth step of a panel to the next: KCPU_MR, or KCPU_PAIR in pairs */
    const float *b;
    const int64_t *boff;   /* [k] or NULL */
    int64_t ldb, b_strip;
    int64_t j0, n;
    int64_t seg_len, seg_stride, row_len, row_valid, rows_valid, row_stride, ldc;
    float *c;
    const float *res;      /* or NULL */
    const float *bias_row; /* [m] or NULL */
    const float *bias_col; /* indexed by global column j, or NULL */
    enum k_act act;
};

/* Packs A = w [m][k] (row-major) as the GEMM reads it: ceil(m / KCPU_MR)
 * panels, rows past m zero; a_step KCPU_MR for single panels, KCPU_PAIR
 * for pairs (then the panels' count is even: m a multiple of KCPU_PAIR).
 * packed holds ceil(m / KCPU_MR) * KCPU_MR * k floats. */
void kcpu_gemm_pack_a(const float *w, int64_t m, int64_t k, int64_t a_step, float *packed);

/* The panel of rows i0 .. i0 + KCPU_MR - 1 (i0 a multiple of KCPU_MR),
 * single or half of a pair. */
static inline const float *kcpu_gemm_panel(const struct kcpu_gemm *g, int64_t i0)
{
    return g->a + i0 / g->a_step * g->a_step * g->k + i0 % g->a_step;
}

/* The first run of real outputs in columns [j, end): returns its length
 * (0 if none) and sets *first to its first column and *off to that
 * column's offset in c (row i adds i * ldc). */
static inline int64_t kcpu_gemm_next_run(const struct kcpu_gemm *g, int64_t j, int64_t end,
                                         int64_t *first, int64_t *off)
{
    while (j < end) {
        int64_t img = j / g->seg_len, r = j % g->seg_len;
        int64_t row = r / g->row_len, col = r % g->row_len;
        if (row >= g->rows_valid) {
            j = (img + 1) * g->seg_len;
        } else if (col >= g->row_valid) {
            j += g->row_len - col;
        } else {
            int64_t len = g->row_valid - col;
            *first = j;
            *off = img * g->seg_stride + row * (g->row_stride ? g->row_stride : g->row_valid) + col;
            return len < end - j ? len : end - j;
        }
    }
    return 0;
}

/* Runs the block with the ISA kcpu_isa() selects. */
void kcpu_gemm_run(const struct kcpu_gemm *g);
void kcpu_gemm_scalar(const struct kcpu_gemm *g);
void kcpu_gemm_avx2(const struct kcpu_gemm *g);
void kcpu_gemm_avx512(const struct kcpu_gemm *g);
/* FMA loops of kcpu_peak_gflops: iters steps of 12 FMAs; the result only
 * keeps the loop alive. */
float kcpu_peak_fma_avx2(int64_t iters);
float kcpu_peak_fma_avx512(int64_t iters);

/* Stores an accumulator tile tmp[mr][KCPU_NR] (columns j .. j + nr of the
 * block) through the epilogue; act_row applies the activation in place. */
typedef void (*kcpu_act_row_fn)(enum k_act act, int64_t count, const float *x, float *y);
void kcpu_gemm_store_tile(const struct kcpu_gemm *g, const float *tmp, int i0, int mr,
                          int64_t j, int nr, kcpu_act_row_fn act_row);

/* im2col of one KCPU_NR-column strip of a convolution: the strip's columns
 * are split into runs, each inside one output row of one image. */
struct kcpu_col_run {
    int lane, len;             /* strip lanes [lane, lane + len) */
    int ih0, iw0;              /* input position of the first column's window origin */
    const float *img;          /* this group's first input channel in the run's image */
};
/* Writes dst[kk * KCPU_NR + lane] for kk over (input channel of the group,
 * ki, kj), zero where the window is in the padding. Lanes that no run
 * covers (past the last column) hold nothing useful: the microkernels mask
 * them. */
void kcpu_im2col_strip(const struct k_conv2d *p, const struct kcpu_col_run *runs, int nruns,
                       float *dst);
/* Returns -1, writing nothing, for kernels too large for its tables. */
int kcpu_im2col_strip_avx512(const struct k_conv2d *p, const struct kcpu_col_run *runs, int nruns,
                             float *dst);

/* dst[t] = src[iw0 + t * sw] for t < len where 0 <= iw0 + t * sw < w, else
 * 0: one row of a stride phase of a convolution's zero-padded input grid.
 * sw is 1 or 2. */
void kcpu_pad_row_avx512(const float *src, int w, int iw0, int sw, float *dst, int64_t len);

/* The window cells start + t * dil, t in [*lo, *hi), that fall in [0, size). */
static inline void kcpu_window_clip(int start, int k, int dil, int size, int *lo, int *hi)
{
    int l = 0, h = k;
    if (start < 0)
        l = (-start + dil - 1) / dil;
    if (start + (k - 1) * dil >= size)
        h = size - start <= 0 ? 0 : (size - start + dil - 1) / dil;
    *lo = l;
    *hi = h > l ? h : l;
}

/* Max pooling of one (image, channel) plane by rows (pool_avx512.c): x and
 * y float, or int8 when s8. Only where kcpu_max_pool_rows_fits(p): on
 * AVX-512, stride 1 or 2 across, rows of a bounded length. */
int kcpu_max_pool_rows_fits(const struct k_pool2d *p);
void kcpu_max_pool_rows(const struct k_pool2d *p, int s8, const void *x, void *y);
/* 2x2 stride-2 max pooling of one plane, every window inside the input
 * (unpadded, undilated), on AVX-512; the same element types. */
/* Channels-last INT8 pooling on AVX-512 (pool_avx512.c), for
 * kcpu_q8_nhwc.c: max pooling of output row oy of one image (x [h][w][c],
 * out [ow][c]); the per-channel int32 sums over hw pixels of channels
 * [c0, c0 + nc) of one image (x [hw][c]). */
void kcpu_max_pool_nhwc_row_q8_avx512(const struct k_pool2d *p, const int8_t *x, int64_t oy, int8_t *out);
void kcpu_sum_pixels_nhwc_q8_avx512(int64_t hw, int64_t c, const int8_t *x, int64_t c0, int64_t nc, int32_t *sum);
void kcpu_max_pool_2x2_avx512(const struct k_pool2d *p, int s8, const void *x, void *y);

/* Vectorised element-wise loops; y may alias x, a or b element for element. */
/* y = act(x) for count elements on the calling thread, vectorised per ISA
 * (kcpu_elementwise.c); y may be x. */
void kcpu_act_run(enum k_act act, int64_t count, const float *x, float *y);
void kcpu_act_scalar(enum k_act act, int64_t count, const float *x, float *y);
void kcpu_act_avx2(enum k_act act, int64_t count, const float *x, float *y);
void kcpu_act_avx512(enum k_act act, int64_t count, const float *x, float *y);
void kcpu_add_avx2(int64_t count, const float *a, const float *b, float *y);
void kcpu_add_avx512(int64_t count, const float *a, const float *b, float *y);
/* The sum of count floats, in vector lanes (global average pooling). */
float kcpu_sum_avx2(int64_t count, const float *x);
float kcpu_sum_avx512(int64_t count, const float *x);
/* y = softmax(x) along len contiguous elements (kcpu_softmax.c); y may be x. */
void kcpu_softmax_row_avx2(int64_t len, const float *x, float *y);
void kcpu_softmax_row_avx512(int64_t len, const float *x, float *y);
/* A row of an element-wise binary op in vectors (kcpu_binary.c): y[i] =
 * a[i * sa] op b[i * sb] for i < len; 0 where taken, -1 where the op or the
 * strides are not kcpu_binary_row_vectors' (the caller loops instead). y
 * is a, b or apart from both. */
static inline bool kcpu_binary_row_vectors(enum k_binop op, int64_t sa, int64_t sb)
{
    return (op == K_BIN_ADD || op == K_BIN_SUB || op == K_BIN_MUL || op == K_BIN_DIV) &&
           ((sa == 1 && (sb == 0 || sb == 1)) || (sa == 0 && sb == 1));
}
int kcpu_binary_row_avx2(enum k_binop op, int64_t len, const float *a, int64_t sa, const float *b, int64_t sb,
                         float *y);
int kcpu_binary_row_avx512(enum k_binop op, int64_t len, const float *a, int64_t sa, const float *b, int64_t sb,
                           float *y);

/* dst = the sum of w[k] * rows[k] over n rows of len elements (resampling's
 * row blend, kcpu_resize.c). */
void kcpu_blend_rows_scalar(int n, const float *const *rows, const float *w, int64_t len, float *dst);
void kcpu_blend_rows_avx2(int n, const float *const *rows, const float *w, int64_t len, float *dst);
void kcpu_blend_rows_avx512(int n, const float *const *rows, const float *w, int64_t len, float *dst);
/* One row of a layer normalisation (kcpu_layer_norm.c): stats[0] and
 * stats[1] receive the mean and 1 / sqrt(variance + eps); y (NULL: none)
 * receives (x - mean) * that * s + b, s and b each NULL for 1 and 0. */
void kcpu_layer_norm_row_scalar(int64_t n, float eps, const float *x, const float *s, const float *b, float *y,
                                float stats[2]);
void kcpu_layer_norm_row_avx2(int64_t n, float eps, const float *x, const float *s, const float *b, float *y,
                              float stats[2]);
void kcpu_layer_norm_row_avx512(int64_t n, float eps, const float *x, const float *s, const float *b, float *y,
                                float stats[2]);
/* y = x * s + t for count elements (one channel of an affine). */
void kcpu_affine_avx2(int64_t count, const float *x, float s, float t, float *y);
void kcpu_affine_avx512(int64_t count, const float *x, float s, float t, float *y);

/* Scalar activation of the plain-C paths (libm, so also the accuracy anchor). */
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
    case K_ACT_HARDSWISH:
        return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
    case K_ACT_SILU:
        return x / (1.0f + expf(-x));
    default:
        return x;
    }
}

static inline int64_t kcpu_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t kcpu_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t kcpu_max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Rounds a caller's scratch pointer up to a 64-byte boundary; the
 * *_scratch_bytes functions include the slack. */
static inline void *kcpu_align64(void *p)
{
    return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

#endif /* KCPU_IMPL_H */
