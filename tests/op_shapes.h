/*
 * op_shapes.h - the op shapes every kernel and backend test draws from: one
 * random generator per op family (convolution, pooling), the shipped
 * models' layers, and the INT8 epilogues. The CPU kernel tests, the CUDA
 * op tests and test_backend_ops all take their cases from here, so every
 * backend is tried on the same kinds of shape.
 */
#ifndef OP_SHAPES_H
#define OP_SHAPES_H

#include <stdbool.h>

#include "kernels/kernel_quant.h"
#include "kernels/kernel_types.h"

/* A random convolution: depthwise (channel multiplier 1-2), grouped, a
 * 1x1 stride-1 "direct" one, or dense; strides 1 half the time, dilation
 * 1-2, asymmetric padding up to the kernel size (the trailing padding is
 * implied by oh / ow), a random activation. `big` allows more channels
 * (now and then over 128 output channels, past one GPU tile) and larger
 * planes. Every output cell's window touches the input. */
struct k_conv2d test_random_conv(bool big);

/* A random depthwise convolution with channel multiplier 1 (groups == c
 * == oc, the INT8 direct kernel's case): kernels 1-7 (3x3 and 5x5 most
 * often, non-square now and then), strides 1-2 (3 now and then), dilation
 * 1-3, asymmetric padding up to the kernel size, a random activation.
 * `big` allows planes up to 70x70 and 40 channels. */
struct k_conv2d test_random_depthwise(bool big);

/* The trailing padding (bottom, right) that gives p's output size. */
void test_conv_trailing_pad(const struct k_conv2d *p, int *pad_b, int *pad_r);

/* A random pooling window: kernel 1-4, stride 1 half the time, padding up
 * to half the kernel, ceil mode now and then (PyTorch's rule: the last
 * window starts inside the input), dilation 1-2 for max pooling only,
 * count_include_pad either way; LeNet's 2x2 stride 2 one time in six.
 * Every window holds at least one input cell. */
struct k_pool2d test_random_pool(bool max_pool);

/* The shipped models' convolutions (LeNet-5, ResNet-mini), batch n. */
extern const struct k_conv2d TEST_MODEL_CONVS[];
extern const int TEST_MODEL_CONV_COUNT;

/* count random INT8 values in [-127, 127]; count floats in [lo, hi]. */
int8_t *test_rand_q8(int64_t count);
float *test_rand_floats(int64_t count, float lo, float hi);

/* A random requantisation multiplier: mostly around `typical` (a real
 * multiplier; 0 for the default 2^-28 .. 2^-15), and one time in seven
 * extreme (saturating, rounding everything to 0, or m = 0). */
struct k_q8_mult test_rand_mult(double typical);

/* A random INT8 GEMM epilogue over oc channels of reduction length depth:
 * biases (now and then at the limit), multipliers that spread outputs over
 * INT8 and saturate sometimes, a clamp (none, ReLU or ReLU6-like), and
 * I32 output when out_i32. Free with test_epilogue_free. */
struct test_epilogue {
    struct k_q8_epilogue e;   /* points into bias and mult */
    int32_t *bias;
    struct k_q8_mult *mult;
};
void test_epilogue_init(struct test_epilogue *t, int oc, int64_t depth, bool out_i32);
void test_epilogue_free(struct test_epilogue *t);

#endif /* OP_SHAPES_H */
