/*
 * op_table.h - what an op is: one line per op in RT_OP_LIST, read by every
 * part of the runtime instead of lists of their own.
 *
 * A line gives the op's enum name, its model.json name, how many inputs it
 * takes, its traits, the activation it applies (activations only) and its
 * family: the file in runtime/ops/ that holds its shape rule, the builder of
 * its kernel parameter block, its model.json attributes and weights, and the
 * numbers its INT8 form needs (see ops_impl.h). Ops of one family share that
 * code (the five activations share one).
 *
 * Adding an op: a line here (and a family file when no family fits), its
 * reference kernel (kernels/ref and runtime/backend/backend_ref.c), its CPU kernel
 * (kernels/cpu and runtime/backend/backend_cpu*.c), a case in tests/test_backend_ops.c.
 * An activation needs only the line and its K_ACT_ kernels: backends run
 * every activation through one kernel.
 */
#ifndef RT_OP_TABLE_H
#define RT_OP_TABLE_H

#include <stdbool.h>

#include "kernels/kernel_types.h"

/* Traits of an op. */
enum {
    RT_T_JSON = 1 << 0,        /* model.json may name it (else ONNX or the runtime only) */
    RT_T_ACT = 1 << 1,         /* element-wise activation: act names it */
    RT_T_INT8 = 1 << 2,        /* runs on I8 tensors in INT8 models (else F32 between a dequantize and a quantize) */
    RT_T_GEMM = 1 << 3,        /* weights [out, ...] packed per backend, quantised per output channel in INT8;
                                * a following residual add and activation fuse into its epilogue */
    RT_T_KEEPS_SCALE = 1 << 4, /* INT8 output is a selection or view of the input: same scale */
    RT_T_VIEW = 1 << 5,        /* no step: the output shares the input's storage */
};

/*  op                 model.json name     inputs  traits                                      act            family */
#define RT_OP_LIST(X)                                                                                                   \
    X(CONV2D,          "conv2d",           1, 1,   RT_T_JSON | RT_T_INT8 | RT_T_GEMM,          K_ACT_NONE,    conv2d)   \
    X(LINEAR,          "linear",           1, 1,   RT_T_JSON | RT_T_INT8 | RT_T_GEMM,          K_ACT_NONE,    linear)   \
    X(BATCH_NORM,      "batch_norm",       1, 1,   RT_T_JSON,                                  K_ACT_NONE,    batch_norm) \
    X(RELU,            "relu",             1, 1,   RT_T_JSON | RT_T_INT8 | RT_T_ACT,           K_ACT_RELU,    act)      \
    X(RELU6,           "relu6",            1, 1,   RT_T_JSON | RT_T_INT8 | RT_T_ACT,           K_ACT_RELU6,   act)      \
    X(SIGMOID,         "sigmoid",          1, 1,   RT_T_JSON | RT_T_INT8 | RT_T_ACT,           K_ACT_SIGMOID, act)      \
    X(TANH,            "tanh",             1, 1,   RT_T_JSON | RT_T_INT8 | RT_T_ACT,           K_ACT_TANH,    act)      \
    X(GELU,            "gelu",             1, 1,   RT_T_JSON | RT_T_INT8 | RT_T_ACT,           K_ACT_GELU,    gelu)     \
    X(HARDSWISH,       "hardswish",        1, 1,   RT_T_JSON | RT_T_INT8 | RT_T_ACT,           K_ACT_HARDSWISH, act)    \
    X(SILU,            "silu",             1, 1,   RT_T_JSON | RT_T_INT8 | RT_T_ACT,           K_ACT_SILU,    act)      \
    X(MAX_POOL2D,      "max_pool2d",       1, 1,   RT_T_JSON | RT_T_INT8 | RT_T_KEEPS_SCALE,   K_ACT_NONE,    max_pool2d) \
    X(AVG_POOL2D,      "avg_pool2d",       1, 1,   RT_T_JSON | RT_T_INT8,                      K_ACT_NONE,    avg_pool2d) \
    X(GLOBAL_AVG_POOL, "global_avg_pool",  1, 1,   RT_T_JSON | RT_T_INT8,                      K_ACT_NONE,    global_avg_pool) \
    X(ADD,             "add",              2, 2,   RT_T_JSON | RT_T_INT8,                      K_ACT_NONE,    add)      \
    X(FLATTEN,         "flatten",          1, 1,   RT_T_JSON | RT_T_INT8 | RT_T_KEEPS_SCALE | RT_T_VIEW, K_ACT_NONE, flatten) \
    X(RESHAPE,         "reshape",          1, 1,   RT_T_JSON | RT_T_INT8 | RT_T_KEEPS_SCALE | RT_T_VIEW, K_ACT_NONE, reshape) \
    X(CONCAT,          "concat",           1, 16,  RT_T_JSON | RT_T_INT8,                      K_ACT_NONE,    concat)   \
    X(SOFTMAX,         "softmax",          1, 1,   RT_T_JSON,                                  K_ACT_NONE,    softmax)  \
    X(LOG_SOFTMAX,     "log_softmax",      1, 1,   0,                                          K_ACT_NONE,    log_softmax) \
    X(QUANTIZE,        "quantize",         1, 1,   0,                                          K_ACT_NONE,    quantize) \
    X(DEQUANTIZE,      "dequantize",       1, 1,   0,                                          K_ACT_NONE,    dequantize) \
    X(BINARY,          "binary",           1, 2,   0,                                          K_ACT_NONE,    binary)   \
    X(UNARY,           "unary",            1, 1,   0,                                          K_ACT_NONE,    unary)    \
    X(TRANSPOSE,       "transpose",        1, 1,   0,                                          K_ACT_NONE,    transpose) \
    X(REDUCE,          "reduce",           1, 1,   0,                                          K_ACT_NONE,    reduce)   \
    X(SLICE,           "slice",            1, 1,   0,                                          K_ACT_NONE,    slice)    \
    X(PAD,             "pad",              1, 1,   0,                                          K_ACT_NONE,    pad)      \
    X(RESIZE,          "resize",           1, 1,   0,                                          K_ACT_NONE,    resize)   \
    X(LAYER_NORM,      "layer_norm",       1, 1,   0,                                          K_ACT_NONE,    layer_norm) \
    X(CONV_TRANSPOSE2D, "conv_transpose2d", 1, 1,  0,                                          K_ACT_NONE,    conv_transpose2d) \
    X(MATMUL,          "matmul",           2, 2,   0,                                          K_ACT_NONE,    matmul)   \
    X(CONV2D_DYN,      "conv2d_dyn",       2, 3,   0,                                          K_ACT_NONE,    conv2d_dyn) \
    X(BATCH_NORM_DYN,  "batch_norm_dyn",   5, 5,   0,                                          K_ACT_NONE,    batch_norm_dyn)

enum rt_op {
#define RT_OP_ENUM(op, name, lo, hi, traits, act, family) RT_OP_##op,
    RT_OP_LIST(RT_OP_ENUM)
#undef RT_OP_ENUM
    RT_OP_COUNT
};

struct rt_op_family;   /* ops_impl.h */

struct rt_op_info {
    const char *name;
    int min_inputs, max_inputs;
    unsigned traits;
    enum k_act act;
    const struct rt_op_family *family;
};

/* The table entry of op (op < RT_OP_COUNT). */
const struct rt_op_info *rt_op_info(enum rt_op op);

static inline bool rt_op_has(enum rt_op op, unsigned trait) { return (rt_op_info(op)->traits & trait) != 0; }

const char *rt_op_name(enum rt_op op);
struct rt_node;
/* The activation a node applies: the table's, gelu's per its attribute. */
enum k_act rt_node_act(const struct rt_node *n);
bool rt_op_from_name(const char *name, enum rt_op *out);

#endif /* RT_OP_TABLE_H */
