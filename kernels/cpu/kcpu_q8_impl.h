/*
 * kcpu_q8_impl.h - internals of the CPU INT8 kernels: the packed layouts,
 * the GEMM block that convolution and linear reduce to, and its per-ISA
 * entry points. Not for use outside kernels/cpu and the kernel tests.
 *
 * GEMM shape: C[m, ncols] = A[m, k] . B[k, ncols], int8 x int8 -> int32.
 * The depth k is split into quads of 4 (the unit vpdpbusd reduces):
 *
 *   A (weights, packed once): per KQ8_MR-row panel, [kq][KQ8_MR][4] int8,
 *       rows past m and k past the depth zero; after every group's panels,
 *       int32 wsum[oc] = sum of the row's weights.
 *   B (activations, packed per call): strips of KQ8_NR columns,
 *       [kq][KQ8_NR][4] int8, the 4 k values of one column adjacent.
 *
 * VNNI multiplies unsigned by signed bytes, so for that kernel the packers
 * flip B's sign bits (x + 128 as u8, kq8_b_flipped()) and the kernel
 * subtracts 128 * wsum[row] afterwards; AVX2 uses |b| * sign(a, b) with
 * vpmaddubsw, exact because |a|, |b| <= 127 keeps a pair sum within int16.
 * Every kernel yields the exact int32 sums.
 *
 * Output mapping: tile lane t of a strip goes to the runs of its strip map,
 * lanes [l0, l1) of a run landing contiguously at y + off (+ row * ldc);
 * lanes in no run (padding columns) are computed and dropped.
 */
#ifndef KCPU_Q8_IMPL_H
#define KCPU_Q8_IMPL_H

#include <stdint.h>
#include <string.h>

#include "kcpu_impl.h"
#include "kcpu_q8.h"

#define KQ8_MR 8
#define KQ8_NR 32
#define KQ8_STRIP_QUAD ((int64_t)KQ8_NR * 4)   /* bytes of one depth quad of a B strip */
#define KQ8_PANEL_QUAD ((int64_t)KQ8_MR * 4)   /* bytes of one depth quad of an A panel */

struct kq8_run {
    int l0, l1;
    int64_t off;
};

struct kq8_strip {
    int nruns;
    struct kq8_run runs[KQ8_NR];
};

/* One task's GEMM: every row of a group against nstrips packed strips. */
struct kq8_block {
    int m;                          /* rows */
    int64_t kq;                     /* depth in quads */
    const int8_t *a;                /* the rows' panels */
    const int32_t *wsum;            /* [m] */
    const int8_t *b;                /* nstrips strips of kq * KQ8_STRIP_QUAD bytes */
    int nstrips;
    const struct kq8_strip *maps;   /* [nstrips] */
    int64_t ldc;                    /* output elements between rows */
    const int32_t *bias;            /* [m], the group's rows */
    const struct k_q8_mult *mult;   /* [m] */
    const struct k_q8_epilogue *e;  /* res_mult, lo, hi, out_i32 */
    const int8_t *res;              /* or NULL; y's layout */
    void *y;                        /* int8, or int32 with e->out_i32 */
};

/* The block for a few samples (linear at small batch, VNNI only): n
 * samples of k bytes at x, k apart, one strip whose map sends lane t to
 * sample t; B is not packed. A strip of 32 lanes would compute 32 columns
 * for each of them. Same exact sums and epilogue as kq8_block_avx512. */
#define KQ8_GEMV_MAX_N 4
void kq8_gemv_avx512(const struct kq8_block *b, const int8_t *x, int n, int64_t k);
/* The same without VNNI, for any AVX2 CPU (B unflipped; exact sums). */
void kq8_gemv_avx2(const struct kq8_block *b, const int8_t *x, int n, int64_t k);

/* Runs the block with the kernel kcpu_isa() selects. */
void kq8_block_run(const struct kq8_block *b);
void kq8_block_scalar(const struct kq8_block *b);
void kq8_block_avx2(const struct kq8_block *b);
void kq8_block_avx512(const struct kq8_block *b);

/* The scalar epilogue of one tile acc[KQ8_MR][KQ8_NR] (exact sums) for rows
 * [i0, i0 + mr) of the block. */
void kq8_store_tile(const struct kq8_block *b, const int32_t *acc, int i0, int mr,
                    const struct kq8_strip *map);

/* Residual bytes of row i gathered into lanes (others 0), and a row of
 * int8 results scattered by the map. */
void kq8_gather_row(const struct kq8_block *b, int i, const struct kq8_strip *map, int8_t *lanes);
void kq8_scatter_row(const struct kq8_block *b, int i, const struct kq8_strip *map, const int8_t *lanes);

/* Interleaves four rows of KQ8_NR bytes (k = 4q .. 4q + 3) into one depth
 * quad of a B strip. */
void kq8_interleave4(const int8_t *r0, const int8_t *r1, const int8_t *r2, const int8_t *r3,
                     int8_t *dst);
/* A whole strip from KQ8_NR-byte slices: depth index k reads base + koff[k]
 * (zeros past kg), sign bits flipped when flip. Dispatches to the AVX2
 * version on AVX2 CPUs. */
void kq8_pack_slices(const int8_t *base, const int64_t *koff, int64_t kg, int flip, int8_t *dst);
void kq8_pack_slices_avx2(const int8_t *base, const int64_t *koff, int64_t kg, int flip, int8_t *dst);
/* Whether kq8_block_run's kernel takes B with flipped sign bits (VNNI), and
 * the flip itself for strips packed without it. */
int kq8_b_flipped(void);
void kq8_flip(int8_t *b, int64_t bytes);

/* Depth quads of a reduction over k. */
static inline int64_t kq8_quads(int64_t k) { return (k + 3) / 4; }

/* memcpy for the short rows of small feature maps, without a call: fixed-
 * size copies that GCC inlines, overlapping to cover any length. */
static inline void kq8_copy_short(int8_t *dst, const int8_t *src, int64_t n)
{
    while (n > 32) {
        memcpy(dst, src, 32);
        dst += 32, src += 32, n -= 32;
    }
    if (n >= 16) {
        memcpy(dst, src, 16);
        memcpy(dst + n - 16, src + n - 16, 16);
    } else if (n >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else {
        for (int64_t i = 0; i < n; i++)
            dst[i] = src[i];
    }
}

/* Bytes 4q .. 4q + 3 of a sample of k bytes as one int32, zeros past k
 * (the matrix-vector kernels' broadcast). */
static inline int32_t kq8_sample_quad(const int8_t *x, int64_t q, int64_t k)
{
    int32_t v = 0;
    if (4 * q + 4 <= k)
        memcpy(&v, x + 4 * q, sizeof(v));
    else
        for (int64_t i = 4 * q; i < k; i++)
            memcpy((int8_t *)&v + (i - 4 * q), x + i, 1);
    return v;
}

/* Whether this CPU runs the VNNI kernel when kcpu_isa() is AVX-512. */
int kq8_has_vnni(void);

/* Whether the channels-last convolution's dense layers run on AMX: the
 * ISA is AVX-512 with VNNI, the CPU and OS allow AMX-INT8
 * (kcpu_q8_amx_usable) and kcpu_q8_amx_allow has not turned it off. */
int kq8_amx(void);

/* dst[i] = src[2 i] for i < n (stride-2 convolution planes). */
void kq8_gather2_avx512(int8_t *dst, const int8_t *src, int64_t n);
/* kref_quantize_q8, vectorised. */
void kq8_quantize_avx2(int64_t count, const float *x, float inv_scale, int8_t *y);
void kq8_quantize_avx512(int64_t count, const float *x, float inv_scale, int8_t *y);

/* FP16 rounding with F16C (vcvtps2ph, round to nearest even); y may equal x. */
void kcpu_round_f16_avx2(int64_t count, const float *x, float *y);
void kcpu_round_f16_avx512(int64_t count, const float *x, float *y);

#endif /* KCPU_Q8_IMPL_H */
