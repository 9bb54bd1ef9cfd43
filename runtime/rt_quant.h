/*
 * rt_quant.h - reduced precision in the runtime (internal): the graph pass
 * that turns a loaded graph into its FP16 or INT8 form, and the numbers
 * every backend derives at load for an INT8 step. The integer semantics
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

#include "../kernels/kernel_quant.h"
#include "rt_plan.h"

/* FP16: rounds every weight through binary16 (after folding, as a GPU
 * converting the folded FP32 weights would). INT8: gives every tensor its
 * dtype and scale and inserts the float edges:
 *  - conv2d, linear, activations, pooling, add, concat, flatten, reshape run
 *    on I8 tensors; batch_norm (unfolded) and softmax run in FP32 between a
 *    dequantize and a quantize;
 *  - a quantize node turns each model input (F32) into I8, a dequantize
 *    node turns I8 back into F32 for each model output;
 *  - a conv2d / linear none of whose readers is an INT8 op (the classifier)
 *    writes its I32 accumulators, dequantised per channel;
 *  - max pooling, flatten and reshape keep their input's scale (a scale
 *    given for their output must equal it); every other I8 tensor needs a
 *    scale in model.json, else RT_ERR_BAD_MODEL naming the tensor.
 * FP32: nothing. `label` names model.json in errors. */
enum rt_status rt_graph_apply_precision(struct rt_graph *g, const struct rt_model_config *cfg,
                                        const char *label, struct rt_error *err);

/* ------------------------------------------------------------ load-time numbers */

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
