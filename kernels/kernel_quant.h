/*
 * kernel_quant.h - the INT8 and FP16 number formats and their arithmetic,
 * shared by every backend: C (kernels/ref, kernels/cpu) and CUDA
 * (kernels/cuda) include this header, so an integer result computed on one
 * is bit-identical on the other. docs/quantization.md states the same rules
 * in prose.
 *
 * INT8 tensors: int8_t, NCHW like FP32 ones (the CPU backend keeps some
 * channels last between its own steps: runtime/backend/layout_nhwc.h),
 * symmetric (zero point 0),
 * values in [-127, 127] (-128 never occurs, so a product of two values fits
 * the s8 x s8 tricks of the CPU kernels). A tensor's real value is
 * q * scale with one float scale per tensor. Weights have one scale per
 * output channel; conv / linear accumulate in int32 and add an int32 bias.
 *
 * Requantisation: a real multiplier M (e.g. s_in * s_w / s_out) is stored as
 * m * 2^-shift with m an int32 in [2^30, 2^31) (or 0) and 1 <= shift <= 62;
 * applying it to an int32 x is
 *
 *     k_q8_apply(x, M) = (x * m + 2^(shift - 1)) >> shift      (64-bit, arithmetic shift)
 *
 * i.e. floor(x * m / 2^shift + 1/2): round to nearest, halves toward +inf.
 * |x * m| < 2^62, so the 64-bit sum never overflows. The results of one or
 * two k_q8_apply calls are added in 64 bits and then clamped to [lo, hi].
 *
 * Float edges: quantise is q = clamp(round_half_away(x * inv_scale)) with a
 * float product (NaN -> 0); dequantise is (float)q * scale. Both are single
 * IEEE binary32 operations with round-to-nearest-even, so CUDA must use
 * __fmul_rn / __int2float_rn (no fast-math, no contraction).
 *
 * FP16: binary16 with round-to-nearest-even, overflow to infinity, NaNs
 * quieted with their top payload bits kept - what F16C's vcvtps2ph and
 * CUDA's __float2half_rn do.
 */
#ifndef KERNEL_QUANT_H
#define KERNEL_QUANT_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define K_QFN static inline __host__ __device__
#else
#define K_QFN static inline
#endif

#ifdef __cplusplus
#define K_QASSERT(c, msg) static_assert(c, msg)
#else
#define K_QASSERT(c, msg) _Static_assert(c, msg)
#endif

#define K_Q8_MIN (-127)
#define K_Q8_MAX 127
#define K_Q8_MAX_DEPTH 65536   /* conv / linear reduction length: 65536 * 127 * 127 + 2^30 < 2^31 */
#define K_Q8_BIAS_MAX (1 << 30) /* |int32 bias| is clamped to this at load */

/* M = m * 2^-shift. */
struct k_q8_mult {
    int32_t m;       /* [2^30, 2^31) or 0 */
    int32_t shift;   /* [1, 62] */
};
K_QASSERT(sizeof(struct k_q8_mult) == 8, "two int32 fields, no padding");

/* Requantising epilogue of an INT8 conv2d or linear layer, per output
 * channel oc:
 *   y = clamp(apply(acc + bias[oc], mult[oc]) [+ apply(residual, res_mult)], lo, hi)
 * With out_i32 set the layer instead writes acc + bias[oc] as int32 (the
 * last layer, dequantised per channel by the next step) and takes no
 * residual. ReLU is lo = 0, ReLU6 also hi = quantise(6). */
struct k_q8_epilogue {
    const int32_t *bias;             /* [oc], never NULL (zeros for no bias) */
    const struct k_q8_mult *mult;    /* [oc] */
    struct k_q8_mult res_mult;       /* residual scale / output scale; read only with a residual */
    int32_t lo, hi;                  /* within [-127, 127] */
    int32_t out_i32;
};

/* ------------------------------------------------------------ integer core */

K_QFN int64_t k_q8_apply(int32_t x, struct k_q8_mult q)
{
    return ((int64_t)x * q.m + ((int64_t)1 << (q.shift - 1))) >> q.shift;
}

K_QFN int8_t k_q8_clamp(int64_t v, int32_t lo, int32_t hi)
{
    return (int8_t)(v < lo ? lo : v > hi ? hi : v);
}

/* One conv / linear output from its accumulator (bias not yet added). */
K_QFN int8_t k_q8_requant(int32_t acc, int32_t bias, struct k_q8_mult m, int32_t lo, int32_t hi)
{
    return k_q8_clamp(k_q8_apply(acc + bias, m), lo, hi);
}

/* The same with a residual int8 value added after both rescalings. */
K_QFN int8_t k_q8_requant_res(int32_t acc, int32_t bias, struct k_q8_mult m, int8_t res,
                              struct k_q8_mult rm, int32_t lo, int32_t hi)
{
    return k_q8_clamp(k_q8_apply(acc + bias, m) + k_q8_apply(res, rm), lo, hi);
}

/* Element-wise add of two int8 tensors with their own scales. */
K_QFN int8_t k_q8_add(int8_t a, struct k_q8_mult ma, int8_t b, struct k_q8_mult mb)
{
    return k_q8_clamp(k_q8_apply(a, ma) + k_q8_apply(b, mb), K_Q8_MIN, K_Q8_MAX);
}

/* Activation table: y = lut[x + 128]. */
K_QFN int8_t k_q8_lut(const int8_t *lut, int8_t x)
{
    return lut[x + 128];
}

/* ------------------------------------------------------------ float edges */

/* round_half_away(x * inv_scale), saturated to [-127, 127]; NaN -> 0. */
K_QFN int8_t k_q8_quantize(float x, float inv_scale)
{
    float v = x * inv_scale;
    if (v != v)
        return 0;
    if (v >= 127.0f)
        return K_Q8_MAX;
    if (v <= -127.0f)
        return K_Q8_MIN;
    /* |v| < 127: truncation and the fraction test are exact */
    int32_t t = (int32_t)v;
    float frac = v - (float)t;
    if (frac >= 0.5f)
        t++;
    else if (frac <= -0.5f)
        t--;
    return (int8_t)t;
}

K_QFN float k_q8_dequantize(int32_t q, float scale)
{
    return (float)q * scale;
}

/* ------------------------------------------------------------ FP16 */

K_QFN uint32_t k_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

K_QFN float k_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* binary32 -> binary16 bits, round to nearest even. */
K_QFN uint16_t k_f16_from_f32(float f)
{
    uint32_t x = k_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u)   /* inf, or NaN: quiet it, keep the top payload */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
    if (ax >= 0x477ff000u)   /* >= 65520 rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {  /* below 2^-14: a subnormal half, k * 2^-24 */
        int e = (int)(ax >> 23);
        if (e < 102)         /* < 2^-25: rounds to zero */
            return (uint16_t)sign;
        uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
        int shift = 126 - e; /* 14..24 */
        uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);
    }
    uint32_t v = ax - (112u << 23);   /* rebias the exponent: 127 -> 15 */
    v += 0xfffu + ((v >> 13) & 1u);
    return (uint16_t)(sign | (v >> 13));
}

/* binary16 bits -> binary32 (exact). */
K_QFN float k_f32_from_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (e == 0x1f)
        return k_f32_from_bits(sign | 0x7f800000u | (mant << 13));
    if (e == 0) {
        if (mant == 0)
            return k_f32_from_bits(sign);
        /* subnormal: normalise */
        e = 113;
        while (!(mant & 0x400u)) {
            mant <<= 1;
            e--;
        }
        return k_f32_from_bits(sign | (e << 23) | ((mant & 0x3ffu) << 13));
    }
    return k_f32_from_bits(sign | ((e + 112u) << 23) | (mant << 13));
}

/* x rounded to the nearest binary16 value, as a float. */
K_QFN float k_f16_round(float x)
{
    return k_f32_from_f16(k_f16_from_f32(x));
}

#endif /* KERNEL_QUANT_H */
