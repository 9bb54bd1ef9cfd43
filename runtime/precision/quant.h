/*
 * quant.h - the numbers every backend derives at load for an INT8 step
 * (internal to the runtime). The graph pass that gives a graph its FP16 or
 * INT8 form is in graph_precision.h. The integer semantics
 * themselves are in kernels/kernel_quant.h; the scheme is documented in
 * docs/quantization.md.
 *
 * Load order (rt_model.c): parse -> rt_graph_finish (fold batch norms) ->
 * rt_graph_apply_precision -> plan -> backend prepare_step, which for an
 * INT8 step (step->q8) calls rt_q8_step_prepare so that every backend
 * runs from the same integers: one function, one set of multipliers,
 * biases and tables, hence bit-identical results.
 */
#ifndef RT_QUANT_H
#define RT_QUANT_H

#include "kernels/kernel_quant.h"
#include "runtime/core/plan.h"

/* The fixed-point form of a real multiplier M > 0: m in [2^30, 2^31) and
 * shift with M ~ m * 2^-shift (|error| <= 2^-31 M). M below 2^-32 gives m = 0
 * (every product rounds to 0 anyway); shift is held to >= 1, which for
 * M >= 2^30 still saturates every nonzero input. */
struct k_q8_mult rt_q8_mult(double M);
/* round_half_away(bias / acc_scale), clamped to +-K_Q8_BIAS_MAX. */
int32_t rt_q8_bias(double bias, double acc_scale);
/* round_half_away(v / scale) clamped to [-127, 127]. */
int32_t rt_q8_round(double v, double scale);
/* lut[q + 128] = rt_q8_round(act(q * s_in), s_out), act in double. */
void rt_q8_lut(enum k_act act, double s_in, double s_out, int8_t lut[256]);
/* Symmetric per-output-channel weight quantisation of w [oc, per_oc]:
 * scale[o] = max |w[o, :]| / 127 as a float (1 for an all-zero row),
 * q = rt_q8_round(w, scale[o]). */
void rt_q8_quantize_weights(const float *w, int64_t oc, int64_t per_oc, int8_t *q, float *scale);

/* What an INT8 step needs besides its weights. */
struct rt_q8_step {
    struct k_q8_epilogue epi;    /* conv2d, linear (points into bias, mult) */
    int32_t *bias;               /* conv2d, linear: [oc] */
    struct k_q8_mult *mult;      /* conv2d, linear: [oc]; add, concat: [n_in];
                                  * avg_pool2d: [kh * kw + 1] by window cells;
                                  * global_avg_pool: [1] */
    float *chan_scale;           /* dequantize of I32: [channels] */
    float scale;                 /* quantize: 1 / scale; dequantize of I8: scale */
    int8_t lut[256];             /* relu, relu6, sigmoid, tanh, gelu */
};

enum rt_status rt_q8_step_prepare(const struct rt_plan *p, const struct rt_step *s, struct rt_q8_step *q,
                                  struct rt_error *err);
void rt_q8_step_free(struct rt_q8_step *q);

#endif /* RT_QUANT_H */
