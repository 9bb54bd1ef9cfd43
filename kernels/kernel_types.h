/*
 * kernel_types.h - parameter blocks shared by every kernel family.
 *
 * Kernels take raw pointers plus one of these plain structs; they never see
 * runtime structs. The same header is included by C (kernels/ref, kernels/cpu)
 * and CUDA (kernels/cuda) code, so it holds only POD types.
 *
 * Layout of activations everywhere: NCHW, row-major, float32 unless a
 * function name says otherwise.
 */
#ifndef KERNEL_TYPES_H
#define KERNEL_TYPES_H

#include <stdint.h>

/* Activation applied in a fused epilogue, after bias and residual add. */
enum k_act {
    K_ACT_NONE = 0,
    K_ACT_RELU,
    K_ACT_RELU6,
    K_ACT_SIGMOID,
    K_ACT_TANH,
    K_ACT_GELU,      /* exact: x * 0.5 * (1 + erf(x / sqrt(2))) */
    K_ACT_GELU_TANH, /* tanh approximation, as torch gelu(approximate="tanh") */
    K_ACT_HARDSWISH, /* x * relu6(x + 3) / 6 (MobileNetV3, ONNX HardSwish) */
    K_ACT_SILU,      /* x * sigmoid(x), SiLU or Swish (EfficientNet, YOLO) */
    K_ACT_COUNT
};

/* 2-D convolution, NCHW input [n, c, h, w] -> output [n, oc, oh, ow].
 * Weights [oc, c / groups, kh, kw]. Padding may be asymmetric: pad_t/pad_l
 * are the leading pads; oh/ow are given (computed by shape inference). */
struct k_conv2d {
    int n, c, h, w;
    int oc, oh, ow;
    int kh, kw;
    int stride_h, stride_w;
    int pad_t, pad_l;
    int dil_h, dil_w;
    int groups;
    enum k_act act;
};

/* conv_transpose2d reads k_conv2d as the transposed convolution (ONNX
 * ConvTranspose, PyTorch ConvTranspose2d): x [n, c, h, w] -> y [n, oc, oh,
 * ow], weights [c, oc / groups, kh, kw], input channel ci of group g feeding
 * output channels g * oc / groups on; input pixel (iy, ix) adds x * w into
 * output (iy * stride_h - pad_t + ky * dil_h, ix * stride_w - pad_l + kx *
 * dil_w) where that lies in [0, oh) x [0, ow); oh and ow are given. */

/* Fully connected: y[n, m] = act(x[n, k] . w[m, k]^T + bias[m] (+ res[n, m])). */
struct k_linear {
    int n, k, m;
    enum k_act act;
};

/* 2-D max or average pooling over [n, c, h, w] -> [n, c, oh, ow]. */
struct k_pool2d {
    int n, c, h, w;
    int oh, ow;
    int kh, kw;
    int stride_h, stride_w;
    int pad_t, pad_l;
    int dil_h, dil_w;          /* max pooling only; 1 for average */
    int count_include_pad;     /* average pooling only */
};

/* Per-channel affine y = x * scale[c] + shift[c] over [n, c, inner]
 * (a batch norm that could not be folded into a convolution). */
struct k_channel_affine {
    int n, c;
    int64_t inner;
};

/* Layer normalisation (ONNX LayerNormalization) of each of rows rows of
 * cols elements: with the row's mean m and variance v (the mean of
 * (x - m)^2), y = (x - m) / sqrt(v + eps) * scale[i] + bias[i] (scale 1 and
 * bias 0 when absent). out says what is written: y [rows, cols], or per row
 * the mean or 1 / sqrt(v + eps) [rows] (ONNX's optional outputs). */
enum k_layer_norm_out { K_LN_Y = 0, K_LN_MEAN, K_LN_INV_STD };

struct k_layer_norm {
    int64_t rows, cols;
    float eps;
    enum k_layer_norm_out out;
};

/* Softmax along one axis of a tensor seen as [outer, axis_len, inner]. */
struct k_softmax {
    int64_t outer, axis_len, inner;
    int log;                   /* log-softmax: x - max - ln(sum of e^(x - max)) (CPU and reference only) */
};

/* Element-wise binary op with numpy broadcasting (ONNX Add, Mul, ...);
 * prelu is a < 0 ? a * b : a, b the slope; pow is a^b (C's pow). */
enum k_binop { K_BIN_ADD = 0, K_BIN_SUB, K_BIN_MUL, K_BIN_DIV, K_BIN_MAX, K_BIN_MIN, K_BIN_PRELU, K_BIN_POW, K_BIN_COUNT };

#define K_BINARY_MAX_DIMS 8

/* y[s, i...] = a op b over n samples of an output of per-sample dims[rank]
 * (rank 0: one element). Each operand is addressed by its element stride per
 * output dim (0 along a broadcast dim) and per sample (0 for a constant that
 * every sample shares). y is contiguous. */
struct k_binary {
    int n, rank;
    enum k_binop op;
    int64_t dims[K_BINARY_MAX_DIMS];
    int64_t a_stride[K_BINARY_MAX_DIMS], b_stride[K_BINARY_MAX_DIMS];
    int64_t a_sample, b_sample;
};

/* Element-wise function of one operand (ONNX Abs, Exp, LeakyRelu, ...):
 * y[i] = f(x[i]) over count elements, with the parameters alpha and beta:
 *   softplus ln(1 + e^x)             softsign x / (1 + |x|)
 *   elu x < 0 ? alpha (e^x - 1) : x  selu beta (x <= 0 ? alpha (e^x - 1) : x)
 *   celu x > 0 ? x : alpha (e^(x / alpha) - 1)
 *   leaky_relu x < 0 ? alpha x : x   hard_sigmoid clamp(alpha x + beta, 0, 1)
 *   thresholded_relu x > alpha ? x : 0
 * and the others as their names say (reciprocal 1 / x). */
enum k_unop {
    K_UN_ABS = 0, K_UN_NEG, K_UN_EXP, K_UN_LOG, K_UN_SQRT, K_UN_RECIPROCAL, K_UN_FLOOR, K_UN_CEIL, K_UN_ERF,
    K_UN_SOFTPLUS, K_UN_SOFTSIGN, K_UN_ELU, K_UN_SELU, K_UN_CELU, K_UN_LEAKY_RELU, K_UN_HARD_SIGMOID,
    K_UN_THRESHOLDED_RELU, K_UN_COUNT
};

struct k_unary {
    int64_t count;
    enum k_unop op;
    float alpha, beta;
};

/* A reduction over the middle axis of x seen as [outer, len, inner] into
 * y [outer, inner] (ONNX ReduceSum, ReduceMean, ...): sum, mean, max, min,
 * prod, l1 (sum of |x|), l2 (sqrt of the sum of squares), sum_square,
 * log_sum (ln of the sum), log_sum_exp (ln of the sum of e^x). */
enum k_redop {
    K_RED_SUM = 0, K_RED_MEAN, K_RED_MAX, K_RED_MIN, K_RED_PROD, K_RED_L1, K_RED_L2, K_RED_SUM_SQUARE,
    K_RED_LOG_SUM, K_RED_LOG_SUM_EXP, K_RED_COUNT
};

struct k_reduce {
    int64_t outer, len, inner;
    enum k_redop op;
};

/* Every step-th element along the middle axis of x seen as [outer, in_len,
 * inner], len of them from start: y[o][i][j] = x[o][start + i * step][j]
 * (step may be negative; every index read lies in [0, in_len)). ONNX Slice
 * and Split, one axis at a time. */
struct k_slice {
    int64_t outer, in_len, inner;
    int64_t start, step, len;
};

/* Each of n samples of dims[rank] padded by begin[d] before and end[d]
 * after each dim d (ONNX Pad): with value (constant), the nearest edge
 * element (edge), or the elements mirrored about the edge, the edge itself
 * not repeated (reflect, whose pads must be below the dim). */
enum k_pad_mode { K_PAD_CONSTANT = 0, K_PAD_EDGE, K_PAD_REFLECT };

struct k_pad {
    int n, rank;
    int64_t dims[K_BINARY_MAX_DIMS];
    int64_t begin[K_BINARY_MAX_DIMS], end[K_BINARY_MAX_DIMS];
    enum k_pad_mode mode;
    float value;
};

/* Resampling (ONNX Resize, Upsample): each of n planes [in, in] of x
 * (axis 0 its rows, axis 1 its columns) into y [out, out]. Per axis, output
 * position o maps to coordinate c in the input by coord (ONNX's
 * coordinate_transformation_mode; s = scale, the output length over the
 * input's unless given):
 *   half_pixel          (o + 0.5) / s - 0.5
 *   pytorch_half_pixel  the same, or 0 when resized is 1
 *   align_corners       o * (in - 1) / (resized - 1), or 0 when resized is 1
 *   asymmetric          o / s
 *   tf_half_pixel_for_nn (o + 0.5) / s
 * and y is, per mode: nearest, x at c rounded per the axis's round and
 * clamped into [0, in); linear, the two neighbours floor(c) and floor(c) + 1
 * weighted 1 - t and t (t = c - floor(c)); cubic, the four from floor(c) - 1
 * weighted by Keys' cubic convolution of parameter cubic_a. Neighbours
 * outside [0, in) read the edge, or (exclude_outside) weigh 0 with the
 * other weights scaled to sum to 1. Two-axis weights multiply. resized is
 * ONNX's output length before it is rounded down: in * scale when the
 * scales were given, else out. */
enum k_resize_mode { K_RESIZE_NEAREST = 0, K_RESIZE_LINEAR, K_RESIZE_CUBIC };
enum k_resize_coord {
    K_COORD_HALF_PIXEL = 0, K_COORD_PYTORCH_HALF_PIXEL, K_COORD_ALIGN_CORNERS, K_COORD_ASYMMETRIC,
    K_COORD_TF_HALF_PIXEL_FOR_NN
};
enum k_resize_round { K_ROUND_PREFER_FLOOR = 0, K_ROUND_PREFER_CEIL, K_ROUND_FLOOR, K_ROUND_CEIL };

struct k_resize_axis {
    int64_t in, out;
    double scale, resized;
    enum k_resize_round round;
};

struct k_resize {
    int64_t n;
    struct k_resize_axis axis[2];
    enum k_resize_mode mode;
    enum k_resize_coord coord;
    float cubic_a;
    int exclude_outside;
};

/* The axes of each of n samples permuted: a sample of x has dims[rank];
 * output axis i is input axis perm[i] (ONNX Transpose). */
struct k_transpose {
    int n, rank;
    int64_t dims[K_BINARY_MAX_DIMS];
    int perm[K_BINARY_MAX_DIMS];
};

/* Concatenation along one axis: each input is [outer, len_i, inner]. */
struct k_concat {
    int64_t outer, inner;
    int count;                 /* number of inputs */
};

/* Matrix product y = alpha * op(A) . op(B) over n samples, numpy-broadcast
 * over rank leading (batch) dims of the output dims[rank]; op() transposes
 * when trans_a / trans_b. Per matrix: op(A) is [m, k], op(B) [k, cols]; A is
 * stored [m, k] ([k, m] when trans_a), B [k, cols] ([cols, k] when trans_b).
 * a_stride / b_stride: element offset of the operand's matrix per step of
 * each batch dim (0 along a broadcast dim); a_sample / b_sample per sample.
 * y is contiguous [n, dims..., m, cols]. */
struct k_matmul {
    int n, rank;
    int64_t dims[K_BINARY_MAX_DIMS];
    int64_t a_stride[K_BINARY_MAX_DIMS], b_stride[K_BINARY_MAX_DIMS];
    int64_t a_sample, b_sample;
    int64_t m, k, cols;
    int trans_a, trans_b;
    float alpha;
};

/* Batch normalisation (inference) with per-sample parameters: each of n
 * samples holds x [in_n, c, inner] and its own scale, bias, mean, var [c];
 * y = (x - mean) / sqrt(var + eps) * scale + bias. */
struct k_batch_norm {
    int n;
    int64_t in_n, c, inner;
    float eps;
};

#endif /* KERNEL_TYPES_H */
