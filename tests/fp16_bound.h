/*
 * fp16_bound.h - how far an FP16 forward pass may be from another, derived
 * from half precision's rounding rather than picked to pass.
 *
 * Every FP16 path here (the CPU's, inferd's CUDA kernels, cuDNN) accumulates
 * in FP32 and rounds each step's output to half; the model's inputs are
 * rounded once too. Rounding to nearest moves a value by at most the unit
 * roundoff u = 2^-11 of its magnitude. So:
 *
 *   FP16 against FP32:  each rounding adds at most u         -> R * u
 *   FP16 against FP16:  a rounding both make can land one ulp
 *                       (2u) apart where their FP32 sums straddle
 *                       a rounding boundary; a rounding only one
 *                       makes (cuDNN's second, see
 *                       runtime/backend/backend_cuda_cudnn.c) adds u    -> S * 2u + X * u
 *
 * R and S count the roundings along the model: its plan steps plus the
 * input. This takes each step's gain to the output as at most one, which
 * holds for the shipped (batch-normalised) models and is checked on the CPU
 * by fp16_bound_holds_on_cpu; errors are compared as max |a - b| / max |b|
 * (test_rel_error).
 */
#ifndef FP16_BOUND_H
#define FP16_BOUND_H

#include <stdbool.h>

#include "runtime/rt_model.h"

#define FP16_UNIT_ROUNDOFF (1.0 / 2048.0)

/* Roundings to half a forward pass of m makes: one per plan step plus one
 * for the input. */
int fp16_roundings(const struct rt_model *m);

/* Convolution steps of m (cuDNN rounds those twice). */
int fp16_conv_steps(const struct rt_model *m);

/* Bound on the relative error of FP16 against FP32 after `roundings`. */
double fp16_bound_vs_fp32(int roundings);

/* Bound between two FP16 passes sharing `shared` roundings, one of which
 * makes `extra` more. */
double fp16_bound_vs_fp16(int shared, int extra);

#endif /* FP16_BOUND_H */
