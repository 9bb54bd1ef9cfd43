/*
 * plan.h - the execution plan: fused steps plus an arena layout.
 *
 * Built once per model from the finished graph. Steps are the graph's nodes
 * in order, with conv2d / linear absorbing a following residual add and
 * activation (the fused epilogue), and flatten / reshape turned into views
 * that share their input's storage. Where the backend asks for it (the
 * CPU, for float steps), a 1x1 conv2d also absorbs the depthwise 3x3 conv2d that
 * reads its output (a chain; MobileNetV2's expansion and depthwise
 * layers), whose input then never exists whole. Every activation tensor
 * gets an offset in one arena, reusing space by liveness.
 *
 * All tensors are [batch, ...], so the plan is made per sample: a tensor of
 * root r lives at offset[r] * batch in an arena of sample_bytes * batch.
 * One allocation sized for max_batch_size serves every smaller batch.
 *
 *   arena (batch b):  | t0: off0*b .. | t3: off3*b .. | t1 reuses t0 ... |
 */
#ifndef RT_PLAN_H
#define RT_PLAN_H

#include "runtime/core/graph.h"

#define RT_ARENA_ALIGN 64

/* A step's kernel parameters, worked out once when the plan is built (by
 * the op's family, runtime/ops/) for one sample; rt_step_params scales them
 * to a batch. Backends read the member their op uses. */
struct rt_channels {
    int64_t n, c, inner;          /* [n, c, inner]: n grows with the batch */
};

struct rt_concat_params {
    struct k_concat k;
    int64_t lens[RT_NODE_MAX_INPUTS];   /* each input's length along the axis */
};

/* conv2d with a chained depthwise convolution: the 1x1 (conv, the first
 * member, as for any conv2d), then the depthwise. */
struct rt_conv_chain_params {
    struct k_conv2d conv, dw;
};

/* conv2d_dyn: one sample's convolution (never scaled; backends loop over
 * the batch) and each operand's elements per sample. */
struct rt_conv_dyn_params {
    struct k_conv2d conv;
    int64_t x_elems, w_elems, b_elems /* 0: no bias */, y_elems;
};

union rt_step_params {
    struct k_conv2d conv;           /* conv2d */
    struct rt_conv_chain_params chain;   /* conv2d with a chained depthwise */
    struct rt_conv_dyn_params conv_dyn;
    struct k_linear linear;
    struct k_pool2d pool;           /* max_pool2d, avg_pool2d */
    struct k_channel_affine affine; /* batch_norm left unfolded */
    struct k_batch_norm bn;         /* batch_norm_dyn */
    struct k_binary binary;
    struct k_unary unary;
    struct k_transpose transpose;
    struct k_reduce reduce;
    struct k_slice slice;
    struct k_pad pad;
    struct k_resize resize;
    struct k_matmul matmul;
    struct k_softmax softmax;
    struct k_layer_norm layer_norm;
    struct rt_concat_params concat;
    struct rt_channels channels;    /* global_avg_pool [n, c, h*w]; dequantize (I32: per channel) */
    int64_t count;                  /* element-wise ops: elements */
};

struct rt_step {
    enum rt_op op;
    const struct rt_node *node;   /* weights, attrs, name */
    int n_in;
    int in[RT_NODE_MAX_INPUTS];   /* tensor ids */
    int out;                      /* tensor id */
    int residual;                 /* tensor id added before the activation, or -1 */
    enum k_act act;               /* fused (conv2d, linear) or the op's own */
    bool q8;                      /* INT8 kernels: input I8, or a quantize / dequantize */
    const struct rt_node *chain;  /* conv2d only: the depthwise conv2d run on this 1x1's output in the
                                     same step (out is then its output; core/plan.c), or NULL */
    union rt_step_params k;       /* for one sample */
    void *prep;                   /* backend-prepared data (packed weights...) */
};

struct rt_plan {
    const struct rt_graph *g;
    const struct rt_model_config *cfg;   /* precision, conv engine (set by the model loader) */
    int n_steps;
    struct rt_step *steps;
    int *root;                    /* per tensor: the tensor whose storage it uses */
    size_t *offset;               /* per root tensor: byte offset per sample */
    size_t sample_bytes;          /* arena bytes per sample */
};

/* Which chains a backend runs: the 1x1's and the depthwise's parameters
 * for one sample. */
typedef bool (*rt_chain_rule)(const struct k_conv2d *pw, const struct k_conv2d *dw);

/* chains: the backend's rule, or NULL to form none. */
enum rt_status rt_plan_build(const struct rt_graph *g, rt_chain_rule chains, struct rt_plan *out,
                             struct rt_error *err);
/* The same without fusion: every node is a step and every tensor lives in
 * the arena (the calibration run observes them all). */
enum rt_status rt_plan_build_unfused(const struct rt_graph *g, struct rt_plan *out, struct rt_error *err);
void rt_plan_free(struct rt_plan *p);

/* Byte offset of tensor t in an arena for `batch` samples. */
static inline size_t rt_plan_offset(const struct rt_plan *p, int t, int batch)
{
    return p->offset[p->root[t]] * (size_t)batch;
}

/* The step's kernel parameters for `batch` samples. */
union rt_step_params rt_step_params(const struct rt_step *s, int batch);

/* Bytes of the step's constant weights as stored for the kernels: INT8
 * weights one byte, FP16 models' weights two, biases and the rest four. */
double rt_step_weight_bytes(const struct rt_plan *p, const struct rt_step *s);

#endif /* RT_PLAN_H */
