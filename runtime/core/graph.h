/*
 * graph.h - the model graph after parsing (internal to the runtime).
 *
 * model_json.c fills a struct rt_graph from model.json and binds weights
 * from the safetensors file; graph.c then validates it (names, producers,
 * cycles), orders it topologically, infers every tensor's shape and folds
 * batch norms into preceding convolutions. The plan (core/plan.h) is built
 * from the result.
 */
#ifndef RT_GRAPH_H
#define RT_GRAPH_H

#include "kernels/kernel_types.h"
#include "runtime/ops/op_table.h"
#include "runtime/rt_status.h"
#include "runtime/rt_types.h"

struct rt_model_config;   /* the model's inputs and outputs (rt_model.h) */

#define RT_NODE_MAX_INPUTS 16

/* Weight roles; which ones an op takes is in its family (runtime/ops/). */
enum rt_wrole { RT_W_WEIGHT = 0, RT_W_BIAS, RT_W_MEAN, RT_W_VAR, RT_W_COUNT };

struct rt_weight {
    const float *data;       /* NULL when absent (or stored as I8) */
    const int8_t *q;         /* INT8 models: I8 values [shape], else NULL */
    const float *scale;      /* with q: per-output-channel scales [shape.dims[0]] */
    struct rt_shape shape;
    char name[RT_NAME_MAX * 2];
};

struct rt_conv_attrs {
    int stride[2], pad[4] /* top, left, bottom, right */, dilation[2], groups;
};

/* conv_transpose2d: the convolution's attributes (pad: the pads removed
 * from the full output) and output_padding, added to the output's bottom
 * and right; ONNX only. */
struct rt_conv_transpose_attrs {
    struct rt_conv_attrs conv;
    int out_pad[2];
};

/* binary: the second operand is input 1, or the constant w[RT_W_WEIGHT]
 * (no batch dim, broadcast against each sample) when the node has one input;
 * const_left puts that constant on the left (it matters for sub and div). */
struct rt_binary_attrs {
    enum k_binop op;
    bool const_left;
};

/* unary: y = f(x), f and its parameters as k_unary (kernel_types.h); from
 * the ONNX loader only. */
struct rt_unary_attrs {
    enum k_unop op;
    float alpha, beta;
};

/* reduce: op over the count dims after the batch from first on (first
 * counted after the batch), kept as dims of 1 when keepdims; ONNX only. */
struct rt_reduce_attrs {
    enum k_redop op;
    int first, count;
    bool keepdims;
};

/* slice: len elements every step-th (step may be negative) from start
 * along dim `axis` after the batch (counted after it); ONNX only. */
struct rt_slice_attrs {
    int axis;
    int64_t start, step, len;
};

/* pad: begin[d] and end[d] elements before and after dim d after the
 * batch, filled per mode (k_pad); ONNX only. */
struct rt_pad_attrs {
    int64_t begin[RT_MAX_DIMS - 1], end[RT_MAX_DIMS - 1];
    enum k_pad_mode mode;
    float value;
};

/* resize: the last two dims after the batch resampled to out[0] x out[1]
 * (k_resize's rows and columns; a sample of one dim is one row, out[0] 1)
 * with the given scales, lengths before rounding, rounding, mode and
 * coordinates; ONNX only. */
struct rt_resize_attrs {
    int64_t out[2];
    double scale[2], resized[2];
    enum k_resize_round round[2];
    enum k_resize_mode mode;
    enum k_resize_coord coord;
    float cubic_a;
    bool exclude_outside;
};

/* layer_norm: each sample normalised over its dims from `first` on
 * (counted after the batch) with eps, scaled by w[RT_W_WEIGHT] and shifted
 * by w[RT_W_BIAS] ([the normalised elements], each optional); out picks
 * what is written (k_layer_norm): y shaped as the input, or the mean or
 * the inverse deviation shaped as it with the normalised dims 1; ONNX only. */
struct rt_layer_norm_attrs {
    int first;
    float eps;
    enum k_layer_norm_out out;
};

/* matmul: y = alpha * op(input 0) . op(input 1), two run-time tensors whose
 * per-sample dims are [..., M, K] and [..., K, N] (transposed when trans_a /
 * trans_b), numpy-broadcast over the leading dims (ONNX MatMul, Gemm).
 * conv2d_dyn: conv2d whose weight [OC, C/groups, KH, KW] and optional bias
 * [OC] are inputs 1 and 2 (one per sample), input 0 per-sample [N, C, H, W],
 * output [N, OC, OH, OW]; attrs in a.conv. batch_norm_dyn: batch_norm with
 * scale, bias, mean, var as inputs 1-4 (per-sample [C]), input 0 per-sample
 * [N, C, ...]; eps in a.eps. These three come from the ONNX loader only
 * (weights computed at run time); model.json refuses them. */
struct rt_matmul_attrs {
    bool trans_a, trans_b;
    float alpha;
};

struct rt_pool_attrs {
    int kernel[2], stride[2], pad[4], dilation[2];
    bool ceil_mode, count_include_pad;
};

struct rt_node {
    enum rt_op op;
    char name[RT_NAME_MAX];
    int n_inputs;
    int inputs[RT_NODE_MAX_INPUTS];   /* tensor ids */
    int output;                       /* tensor id */
    struct rt_weight w[RT_W_COUNT];
    union {
        struct rt_conv_attrs conv;
        struct rt_conv_transpose_attrs conv_transpose;
        struct rt_pool_attrs pool;
        struct rt_binary_attrs binary;
        struct rt_unary_attrs unary;
        struct rt_reduce_attrs reduce;
        struct rt_slice_attrs slice;
        struct rt_pad_attrs pad;
        struct rt_resize_attrs resize;
        struct rt_layer_norm_attrs layer_norm;
        struct rt_matmul_attrs matmul;
        float eps;                    /* batch_norm */
        bool gelu_tanh;               /* gelu approximate="tanh" */
        int axis;                     /* softmax, concat (normalised >= 1) */
        struct rt_shape reshape;      /* reshape: dims after the batch */
        int perm[RT_MAX_DIMS - 1];    /* transpose: output dim i after the batch is input dim perm[i] after it */
    } a;
    bool removed;                     /* folded into another node */
};

/* An activation tensor: shape.dims[0] is the batch (-1). */
struct rt_tensor {
    char name[RT_NAME_MAX];
    struct rt_shape shape;
    int64_t sample_elems;
    int producer;                     /* node id, or -1 for a model input */
    int input_index;                  /* index in cfg inputs, or -1 */
    int output_index;                 /* index in cfg outputs, or -1 */
    int n_consumers;
    enum rt_dtype dtype;              /* element type in the arena: F32, or I8 / I32 in INT8 models */
    float scale;                      /* INT8 activation scale (model.json); 0 when none */
};

struct rt_graph {
    int n_nodes, n_tensors;
    struct rt_node *nodes;            /* topological order after rt_graph_finish */
    struct rt_tensor *tensors;
    int cap_tensors;
    int *index;                       /* open-addressing name -> tensor id */
    int index_cap;
    /* Buffers created by folding (owned); freed with the graph. */
    int n_owned;
    float **owned;
};

/* Tensor id by name, creating it when create is true; -1 when absent or out of memory. */
int rt_graph_tensor(struct rt_graph *g, const char *name, bool create);

/* A float buffer of count elements owned (freed) by the graph; NULL when out of memory. */
float *rt_graph_alloc(struct rt_graph *g, size_t count);

/* Validates, orders, infers shapes and folds batch norms. `label` names the
 * model file in errors. */
enum rt_status rt_graph_finish(struct rt_graph *g, struct rt_model_config *cfg, const char *label,
                               struct rt_error *err);
void rt_graph_free(struct rt_graph *g);

/* Shape inference of a single node from its input shapes (exposed for tests). */
enum rt_status rt_graph_infer_node(const struct rt_graph *g, const struct rt_node *n,
                                   struct rt_shape *out, struct rt_error *err);

#endif /* RT_GRAPH_H */
