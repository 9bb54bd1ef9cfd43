/*
 * test_backend_ops.c - one table of op cases run through every backend
 * present against the reference backend (kernels/ref), ggml's
 * test-backend-ops in spirit.
 *
 * Each case builds a small graph in memory around the op under test (model
 * inputs, the node, any node it needs around it), loads it through the same
 * path as a model file (finish, precision pass, plan, backend prepare) and
 * runs it at a few batch sizes on fresh random data. FP32 must agree with
 * the reference within 1e-5 relative (to the largest reference value), FP16
 * within two half roundings per step, INT8 bit for bit. A backend that has
 * no kernel for a case says so in the table ("lacks") instead of failing;
 * the CPU backend must run every case. Every op of the table must appear in
 * some case (or the test fails, naming it). The CPU backend runs once per
 * instruction set the CPU has, the CUDA backend once per kernel set (new:
 * INT8 on tensor cores where the GPU has them, channels-last activations,
 * which the "nhwc:" cases must reach; baseline: the kernels they replace,
 * NCHW throughout); backend_ops_random_shapes adds fresh random
 * convolutions and pooling windows from tests/op_shapes.c. Under run-tests
 * --gpu (tests/gpu_check.sh) a missing CUDA backend is a skip, not a pass.
 */
#include <stdlib.h>

#include "runtime/backend/backend.h"
#include "runtime/backend/layout_nhwc.h"
#include "runtime/rt_model_impl.h"
#include "kernels/cpu/kcpu.h"
#include "op_shapes.h"
#include "runtime/precision/quant.h"
#include "test.h"

#define MAX_NODES 8
#define MAX_BATCH 9

/* ---- a graph under construction */

struct gb {
    struct rt_graph g;
    struct rt_model_config cfg;
    enum rt_precision prec;
    uint64_t rng;              /* weights: the same on every build of a case */
    bool failed;
};

static float gb_rand(struct gb *b, float lo, float hi)
{
    b->rng ^= b->rng << 13;   /* xorshift64 */
    b->rng ^= b->rng >> 7;
    b->rng ^= b->rng << 17;
    return lo + (hi - lo) * (float)((double)(b->rng >> 40) * (1.0 / 16777216.0));
}

/* Tensor t's shape is [-1, dims...] (rank - 1 dims after the batch). */
static void set_shape(struct rt_tensor *t, int rank, const int64_t *dims)
{
    t->shape.rank = rank;
    t->shape.dims[0] = -1;
    t->sample_elems = 1;
    for (int i = 1; i < rank; i++) {
        t->shape.dims[i] = dims[i - 1];
        t->sample_elems *= dims[i - 1];
    }
}

static int gb_input(struct gb *b, int rank, const int64_t *dims)
{
    char name[16];
    snprintf(name, sizeof(name), "x%d", b->cfg.n_inputs);
    int t = rt_graph_tensor(&b->g, name, true);
    struct rt_io_desc *d = &b->cfg.inputs[b->cfg.n_inputs];
    set_shape(&b->g.tensors[t], rank, dims);
    b->g.tensors[t].input_index = b->cfg.n_inputs++;
    snprintf(d->name, sizeof(d->name), "%s", name);
    d->dtype = RT_DTYPE_F32;
    d->shape = b->g.tensors[t].shape;
    d->sample_elems = b->g.tensors[t].sample_elems;
    return t;
}

/* A node of op over inputs; the caller sets its weights and attrs, then
 * gb_done infers its output shape. */
static struct rt_node *gb_node(struct gb *b, enum rt_op op, int n_in, const int *in)
{
    struct rt_node *n = &b->g.nodes[b->g.n_nodes];
    memset(n, 0, sizeof(*n));
    n->op = op;
    snprintf(n->name, sizeof(n->name), "n%d", b->g.n_nodes);
    n->n_inputs = n_in;
    memcpy(n->inputs, in, sizeof(int) * (size_t)n_in);
    char name[16];
    snprintf(name, sizeof(name), "t%d", b->g.n_nodes);
    n->output = rt_graph_tensor(&b->g, name, true);
    b->g.tensors[n->output].producer = b->g.n_nodes++;
    return n;
}

/* Random weight of role r: [dims]; INT8 GEMM weights are quantised per row. */
static void gb_weight(struct gb *b, struct rt_node *n, enum rt_wrole r, int rank, const int64_t *dims, float lo,
                      float hi)
{
    struct rt_weight *w = &n->w[r];
    int64_t count = 1;
    w->shape.rank = rank;
    for (int i = 0; i < rank; i++)
        count *= w->shape.dims[i] = dims[i];
    float *data = rt_graph_alloc(&b->g, (size_t)count);
    if (!data) {
        b->failed = true;
        return;
    }
    for (int64_t i = 0; i < count; i++)
        data[i] = gb_rand(b, lo, hi);
    snprintf(w->name, sizeof(w->name), "%s.w%d", n->name, (int)r);
    w->data = data;
    if (b->prec == RT_PRECISION_INT8 && r == RT_W_WEIGHT && rt_op_has(n->op, RT_T_GEMM)) {
        int8_t *q = (int8_t *)rt_graph_alloc(&b->g, (size_t)count / 4 + 1);
        float *scale = rt_graph_alloc(&b->g, (size_t)dims[0]);
        if (!q || !scale) {
            b->failed = true;
            return;
        }
        rt_q8_quantize_weights(data, dims[0], count / dims[0], q, scale);
        w->q = q;
        w->scale = scale;
        w->data = NULL;
    }
}

/* Infers the node's output shape (its weights and attrs set). */
static int gb_done(struct gb *b, struct rt_node *n)
{
    struct rt_error err = {0};
    struct rt_tensor *o = &b->g.tensors[n->output];
    if (rt_graph_infer_node(&b->g, n, &o->shape, &err) != RT_OK) {
        printf("  case graph: %s\n", err.msg);
        b->failed = true;
        return n->output;
    }
    o->sample_elems = 1;
    for (int i = 1; i < o->shape.rank; i++)
        o->sample_elems *= o->shape.dims[i];
    return n->output;
}

static void gb_output(struct gb *b, int t)
{
    struct rt_io_desc *d = &b->cfg.outputs[b->cfg.n_outputs++];
    b->g.tensors[t].output_index = b->cfg.n_outputs - 1;
    snprintf(d->name, sizeof(d->name), "%s", b->g.tensors[t].name);
    d->dtype = RT_DTYPE_F32;
    d->shape = b->g.tensors[t].shape;
    d->sample_elems = b->g.tensors[t].sample_elems;
}

/* ---- the cases: each builds its graph; `value` sets the inputs' range */

struct op_case {
    const char *name;
    unsigned precisions;              /* bits of 1 << enum rt_precision */
    float lo, hi;                     /* input values */
    void (*build)(struct gb *b, const struct op_case *c);
    int a[8];                         /* case parameters, as build reads them */
};

/* The shape of the random case being run (backend_ops_random_shapes). */
static struct k_conv2d random_conv;
static struct k_pool2d random_pool;

#define P_F32 (1u << RT_PRECISION_FP32)
#define P_F16 (1u << RT_PRECISION_FP16)
#define P_I8 (1u << RT_PRECISION_INT8)
#define P_ALL (P_F32 | P_F16 | P_I8)
#define P_FLOAT (P_F32 | P_F16)

/* conv2d: a = {c, h, w, oc, k, stride, pad, groups}; dilation 2 when k is
 * negative (|k|), a fused residual add + relu when oc is negative (|oc|). */
static void build_conv(struct gb *b, const struct op_case *c)
{
    const int *a = c->a;
    int k = abs(a[4]), oc = abs(a[3]);
    bool fuse = a[3] < 0;
    int x = gb_input(b, 4, (int64_t[]){a[0], a[1], a[2]});
    struct rt_node *n = gb_node(b, RT_OP_CONV2D, 1, &x);
    n->a.conv = (struct rt_conv_attrs){{a[5], a[5]}, {a[6], a[6], a[6], a[6]}, {1, 1}, a[7]};
    if (a[4] < 0)
        n->a.conv.dilation[0] = n->a.conv.dilation[1] = 2;
    gb_weight(b, n, RT_W_WEIGHT, 4, (int64_t[]){oc, a[0] / a[7], k, k}, -0.5f, 0.5f);
    gb_weight(b, n, RT_W_BIAS, 1, (int64_t[]){oc}, -0.5f, 0.5f);
    int y = gb_done(b, n);
    if (fuse) {
        const struct rt_shape *s = &b->g.tensors[y].shape;
        int r = gb_input(b, 4, s->dims + 1);
        struct rt_node *add = gb_node(b, RT_OP_ADD, 2, (int[]){y, r});
        y = gb_done(b, add);
        y = gb_done(b, gb_node(b, RT_OP_RELU, 1, &y));
    }
    gb_output(b, y);
}

/* conv_transpose2d of [N, a0, a1, a2] to a3 channels, kernel a4, stride
 * a5, pads a6 (a7: 1 groups 2 and dilation 2; 2 output_padding 1 and no
 * bottom or right pad; 3 no bias) */
static void build_conv_transpose(struct gb *b, const struct op_case *c)
{
    const int *a = c->a;
    int groups = a[7] == 1 ? 2 : 1, dil = a[7] == 1 ? 2 : 1, far = a[7] == 2 ? 0 : a[6];
    int x = gb_input(b, 4, (int64_t[]){a[0], a[1], a[2]});
    struct rt_node *n = gb_node(b, RT_OP_CONV_TRANSPOSE2D, 1, &x);
    n->a.conv_transpose = (struct rt_conv_transpose_attrs){
        {{a[5], a[5]}, {a[6], a[6], far, far}, {dil, dil}, groups}, {a[7] == 2, a[7] == 2}};
    gb_weight(b, n, RT_W_WEIGHT, 4, (int64_t[]){a[0], a[3] / groups, a[4], a[4]}, -0.5f, 0.5f);
    if (a[7] != 3)
        gb_weight(b, n, RT_W_BIAS, 1, (int64_t[]){a[3]}, -0.5f, 0.5f);
    gb_output(b, gb_done(b, n));
}

/* conv with asymmetric padding [top, left, bottom, right] = a[0..3] */
static void build_conv_asym(struct gb *b, const struct op_case *c)
{
    int x = gb_input(b, 4, (int64_t[]){3, 8, 7});
    struct rt_node *n = gb_node(b, RT_OP_CONV2D, 1, &x);
    n->a.conv = (struct rt_conv_attrs){{2, 1}, {c->a[0], c->a[1], c->a[2], c->a[3]}, {1, 1}, 1};
    gb_weight(b, n, RT_W_WEIGHT, 4, (int64_t[]){4, 3, 3, 2}, -0.5f, 0.5f);
    gb_output(b, gb_done(b, n));
}

/* linear: a = {rows per sample (0: rank 2), k, m, act} */
static void build_linear(struct gb *b, const struct op_case *c)
{
    const int *a = c->a;
    int x = a[0] ? gb_input(b, 3, (int64_t[]){a[0], a[1]}) : gb_input(b, 2, (int64_t[]){a[1]});
    struct rt_node *n = gb_node(b, RT_OP_LINEAR, 1, &x);
    gb_weight(b, n, RT_W_WEIGHT, 2, (int64_t[]){a[2], a[1]}, -0.5f, 0.5f);
    if (a[2] > 1)
        gb_weight(b, n, RT_W_BIAS, 1, (int64_t[]){a[2]}, -0.5f, 0.5f);
    int y = gb_done(b, n);
    if (a[3])
        y = gb_done(b, gb_node(b, (enum rt_op)a[3], 1, &y));
    gb_output(b, y);
}

/* One-input op on [N, a0, a1, a2] (rank from how many of a are set). */
static int unary_input(struct gb *b, const int *a)
{
    int rank = 1 + (a[0] > 0) + (a[1] > 0) + (a[2] > 0);
    return gb_input(b, rank, (int64_t[]){a[0], a[1], a[2]});
}

/* activation a[3] (an enum rt_op), gelu's tanh form when a[4] */
static void build_act(struct gb *b, const struct op_case *c)
{
    int x = unary_input(b, c->a);
    struct rt_node *n = gb_node(b, (enum rt_op)c->a[3], 1, &x);
    n->a.gelu_tanh = c->a[4];
    gb_output(b, gb_done(b, n));
}

/* pooling: a = {c, h, w, op, k, stride, pad, flags: 1 ceil_mode, 2 exclude pad, 4 dilation 2} */
static void build_pool(struct gb *b, const struct op_case *c)
{
    const int *a = c->a;
    int x = gb_input(b, 4, (int64_t[]){a[0], a[1], a[2]});
    struct rt_node *n = gb_node(b, (enum rt_op)a[3], 1, &x);
    int d = a[7] & 4 ? 2 : 1;
    n->a.pool = (struct rt_pool_attrs){{a[4], a[4]}, {a[5], a[5]}, {a[6], a[6], a[6], a[6]}, {d, d},
                                       (a[7] & 1) != 0, (a[7] & 2) == 0};
    gb_output(b, gb_done(b, n));
}

static void build_global_avg_pool(struct gb *b, const struct op_case *c)
{
    int x = gb_input(b, 4, (int64_t[]){c->a[0], c->a[1], c->a[2]});
    gb_output(b, gb_done(b, gb_node(b, RT_OP_GLOBAL_AVG_POOL, 1, &x)));
}

/* standalone batch norm (its input is a model input: nothing to fold into) */
static void build_batch_norm(struct gb *b, const struct op_case *c)
{
    int x = unary_input(b, c->a);
    struct rt_node *n = gb_node(b, RT_OP_BATCH_NORM, 1, &x);
    int64_t ch = c->a[0];
    gb_weight(b, n, RT_W_WEIGHT, 1, &ch, 0.5f, 1.5f);
    gb_weight(b, n, RT_W_BIAS, 1, &ch, -0.5f, 0.5f);
    gb_weight(b, n, RT_W_MEAN, 1, &ch, -0.5f, 0.5f);
    gb_weight(b, n, RT_W_VAR, 1, &ch, 0.2f, 2.0f);
    n->a.eps = 1e-5f;
    gb_output(b, gb_done(b, n));
}

static void build_add(struct gb *b, const struct op_case *c)
{
    int x = unary_input(b, c->a), y = unary_input(b, c->a);
    gb_output(b, gb_done(b, gb_node(b, RT_OP_ADD, 2, (int[]){x, y})));
}

/* [N, 3, 4, 5] -> flatten or reshape [a0, -1] -> relu (a view needs a reader) */
static void build_view(struct gb *b, const struct op_case *c)
{
    int x = gb_input(b, 4, (int64_t[]){3, 4, 5});
    struct rt_node *n = gb_node(b, c->a[0] ? RT_OP_RESHAPE : RT_OP_FLATTEN, 1, &x);
    n->a.reshape = (struct rt_shape){2, {c->a[0], -1}};
    int y = gb_done(b, n);
    gb_output(b, gb_done(b, gb_node(b, RT_OP_RELU, 1, &y)));
}

/* concat of a[0] inputs [N, 2 + i, 3, 4] along axis 1, or [N, 3, 2 + i, 4] along axis a[1] = 2 */
static void build_concat(struct gb *b, const struct op_case *c)
{
    int in[RT_NODE_MAX_INPUTS];
    for (int i = 0; i < c->a[0]; i++) {
        int64_t dims[3] = {3, 3, 4};
        dims[c->a[1] - 1] = 2 + i;
        in[i] = gb_input(b, 4, dims);
    }
    struct rt_node *n = gb_node(b, RT_OP_CONCAT, c->a[0], in);
    n->a.axis = c->a[1];
    gb_output(b, gb_done(b, n));
}

/* softmax (log_softmax when a[4]) over axis a[3] of [N, a0, a1, a2] */
static void build_softmax(struct gb *b, const struct op_case *c)
{
    int x = unary_input(b, c->a);
    struct rt_node *n = gb_node(b, c->a[4] ? RT_OP_LOG_SOFTMAX : RT_OP_SOFTMAX, 1, &x);
    n->a.axis = c->a[3];
    gb_output(b, gb_done(b, n));
}

/* binary a[0] (enum k_binop) of [N, 3, 1, 5] and [N, 4, 1] (a[1] = 0), or
 * with a constant [4, 1] (a[1] = 1 right, 2 left) */
static void build_binary(struct gb *b, const struct op_case *c)
{
    int x = gb_input(b, 4, (int64_t[]){3, 1, 5});
    int in[2] = {x, c->a[1] ? -1 : gb_input(b, 3, (int64_t[]){4, 1})};
    struct rt_node *n = gb_node(b, RT_OP_BINARY, c->a[1] ? 1 : 2, in);
    n->a.binary = (struct rt_binary_attrs){(enum k_binop)c->a[0], c->a[1] == 2};
    if (c->a[1])   /* away from 0: div */
        gb_weight(b, n, RT_W_WEIGHT, 2, (int64_t[]){4, 1}, 0.5f, 2.0f);
    gb_output(b, gb_done(b, n));
}

/* unary a[3] (enum k_unop) of [N, a0, a1, a2]; alpha a[4] / 100, beta a[5] / 100 */
static void build_unary(struct gb *b, const struct op_case *c)
{
    int x = unary_input(b, c->a);
    struct rt_node *n = gb_node(b, RT_OP_UNARY, 1, &x);
    n->a.unary = (struct rt_unary_attrs){(enum k_unop)c->a[3], (float)c->a[4] / 100, (float)c->a[5] / 100};
    gb_output(b, gb_done(b, n));
}

/* transpose of [N, 2, 3, 4, 5] (or [N, a[4..7]] when a[4] is set) by perm
 * a[0..3] of the dims after the batch */
static void build_transpose(struct gb *b, const struct op_case *c)
{
    const int *a = c->a;
    int x = gb_input(b, 5, a[4] ? (int64_t[]){a[4], a[5], a[6], a[7]} : (int64_t[]){2, 3, 4, 5});
    struct rt_node *n = gb_node(b, RT_OP_TRANSPOSE, 1, &x);
    for (int i = 0; i < 4; i++)
        n->a.perm[i] = c->a[i];
    gb_output(b, gb_done(b, n));
}

/* reduce a[0] (enum k_redop) of [N, 3, 4, 5] over a[2] dims after the
 * batch from a[1] on, keepdims a[3] */
static void build_reduce(struct gb *b, const struct op_case *c)
{
    int x = gb_input(b, 4, (int64_t[]){3, 4, 5});
    struct rt_node *n = gb_node(b, RT_OP_REDUCE, 1, &x);
    n->a.reduce = (struct rt_reduce_attrs){(enum k_redop)c->a[0], c->a[1], c->a[2], c->a[3] != 0};
    gb_output(b, gb_done(b, n));
}

/* slice of [N, 3, 7, 5] along dim a[0] after the batch: a[3] elements
 * every a[2]-th from a[1] */
static void build_slice(struct gb *b, const struct op_case *c)
{
    int x = gb_input(b, 4, (int64_t[]){3, 7, 5});
    struct rt_node *n = gb_node(b, RT_OP_SLICE, 1, &x);
    n->a.slice = (struct rt_slice_attrs){c->a[0], c->a[1], c->a[2], c->a[3]};
    gb_output(b, gb_done(b, n));
}

/* pad of [N, 3, 4, 5] in mode a[0] (enum k_pad_mode): a[1..3] before and
 * a[4..6] after each dim after the batch, value 0.75 */
static void build_pad(struct gb *b, const struct op_case *c)
{
    int x = gb_input(b, 4, (int64_t[]){3, 4, 5});
    struct rt_node *n = gb_node(b, RT_OP_PAD, 1, &x);
    n->a.pad.mode = (enum k_pad_mode)c->a[0];
    n->a.pad.value = 0.75f;
    for (int d = 0; d < 3; d++) {
        n->a.pad.begin[d] = c->a[1 + d];
        n->a.pad.end[d] = c->a[4 + d];
    }
    gb_output(b, gb_done(b, n));
}

/* conv2d of [N, a[0], a[1], a[2]] by a[3] x a[4] taps at dilation a[5]
 * (rows) and a[6] (columns), padded as much, stride 1, 20 output
 * channels, relu; a residual add when a[7] (rates near the map's size: the
 * taps that read the input, kcpu_conv_taps.c) */
static void build_conv_atrous(struct gb *b, const struct op_case *c)
{
    const int *a = c->a;
    int x = gb_input(b, 4, (int64_t[]){a[0], a[1], a[2]});
    struct rt_node *n = gb_node(b, RT_OP_CONV2D, 1, &x);
    int ph = a[5] * (a[3] - 1) / 2, pw = a[6] * (a[4] - 1) / 2;
    n->a.conv = (struct rt_conv_attrs){{1, 1}, {ph, pw, ph, pw}, {a[5], a[6]}, 1};
    gb_weight(b, n, RT_W_WEIGHT, 4, (int64_t[]){20, a[0], a[3], a[4]}, -0.5f, 0.5f);
    gb_weight(b, n, RT_W_BIAS, 1, (int64_t[]){20}, -0.5f, 0.5f);
    int y = gb_done(b, n);
    if (a[7]) {
        int r = gb_input(b, 4, (int64_t[]){20, a[1], a[2]});
        y = gb_done(b, gb_node(b, RT_OP_ADD, 2, (int[]){y, r}));
    }
    gb_output(b, gb_done(b, gb_node(b, RT_OP_RELU, 1, &y)));
}

/* resize of [N, 3, 5, 6] to a[2] x a[3] (rows x columns): mode a[0]
 * (enum k_resize_mode), coordinates a[1], rounding a[4], exclude_outside
 * a[5]; scales out / in, or a[6] / 100 on both axes when a[6] is set */
static void build_resize(struct gb *b, const struct op_case *c)
{
    const int *a = c->a;
    int x = gb_input(b, 4, (int64_t[]){3, 5, 6});
    struct rt_node *n = gb_node(b, RT_OP_RESIZE, 1, &x);
    struct rt_resize_attrs *r = &n->a.resize;
    *r = (struct rt_resize_attrs){{a[2], a[3]}, {a[2] / 5.0, a[3] / 6.0}, {a[2], a[3]}, {a[4], a[4]}, a[0], a[1],
                                  -0.75f, a[5]};
    if (a[6]) {
        r->scale[0] = r->scale[1] = a[6] / 100.0;
        r->resized[0] = 5 * r->scale[0];
        r->resized[1] = 6 * r->scale[1];
    }
    gb_output(b, gb_done(b, n));
}

/* layer_norm of [N, a[5], a[6], a[7]] over the dims from a[0] (after the
 * batch) with eps a[1] / 1000, writing a[2] (enum k_layer_norm_out); a
 * scale when a[3], a bias when a[4] */
static void build_layer_norm(struct gb *b, const struct op_case *c)
{
    const int *a = c->a;
    int64_t dims[3] = {a[5], a[6], a[7]}, cols = 1;
    int x = gb_input(b, 4, dims);
    struct rt_node *n = gb_node(b, RT_OP_LAYER_NORM, 1, &x);
    n->a.layer_norm = (struct rt_layer_norm_attrs){a[0], (float)a[1] / 1000, (enum k_layer_norm_out)a[2]};
    for (int d = a[0]; d < 3; d++)
        cols *= dims[d];
    if (a[3])
        gb_weight(b, n, RT_W_WEIGHT, 1, &cols, -2, 2);
    if (a[4])
        gb_weight(b, n, RT_W_BIAS, 1, &cols, -1, 1);
    gb_output(b, gb_done(b, n));
}

/* matmul [N, 2, 3, 4] . [N, 4, 5] (b transposed: [N, 5, 4] when a[0]) */
static void build_matmul(struct gb *b, const struct op_case *c)
{
    int x = gb_input(b, 4, (int64_t[]){2, 3, 4});
    int y = c->a[0] ? gb_input(b, 3, (int64_t[]){5, 4}) : gb_input(b, 3, (int64_t[]){4, 5});
    struct rt_node *n = gb_node(b, RT_OP_MATMUL, 2, (int[]){x, y});
    n->a.matmul = (struct rt_matmul_attrs){false, c->a[0] != 0, c->a[0] ? 0.5f : 1.0f};
    gb_output(b, gb_done(b, n));
}

/* conv2d_dyn: x [N, 2, 3, 6, 6], weight [N, 4, 3 / g, 3, 3], bias [N, 4]; groups a[0] */
static void build_conv2d_dyn(struct gb *b, const struct op_case *c)
{
    int64_t g = c->a[0];
    int x = gb_input(b, 5, (int64_t[]){2, 3 * g, 6, 6});
    int w = gb_input(b, 5, (int64_t[]){4 * g, 3, 3, 3});
    int bias = gb_input(b, 2, (int64_t[]){4 * g});
    struct rt_node *n = gb_node(b, RT_OP_CONV2D_DYN, 3, (int[]){x, w, bias});
    n->a.conv = (struct rt_conv_attrs){{1, 1}, {1, 1, 1, 1}, {1, 1}, (int)g};
    gb_output(b, gb_done(b, n));
}

/* batch_norm_dyn: x [N, 2, 3, 4], scale, bias, mean, var [N, 3] (var from the range [lo, hi] shifted above 0) */
static void build_batch_norm_dyn(struct gb *b, const struct op_case *c)
{
    int in[5] = {gb_input(b, 4, (int64_t[]){2, 3, 4})};
    for (int k = 1; k < 5; k++)
        in[k] = gb_input(b, 2, (int64_t[]){3});
    struct rt_node *n = gb_node(b, RT_OP_BATCH_NORM_DYN, 5, in);
    n->a.eps = 1e-3f;
    gb_output(b, gb_done(b, n));
}

/* The activation op computing a (gelu's tanh form: RT_OP_GELU + gelu_tanh). */
static enum rt_op act_op(enum k_act a, bool *gelu_tanh)
{
    *gelu_tanh = a == K_ACT_GELU_TANH;
    if (*gelu_tanh)
        a = K_ACT_GELU;
    for (int op = 0; op < RT_OP_COUNT; op++)
        if (rt_op_has((enum rt_op)op, RT_T_ACT) && rt_op_info((enum rt_op)op)->act == a)
            return (enum rt_op)op;
    return RT_OP_RELU;
}

/* conv2d of the shape random_conv (its activation a node after it; a fused
 * residual add before that when a[0]). */
static void build_conv_shape(struct gb *b, const struct op_case *c)
{
    const struct k_conv2d *p = &random_conv;
    int pad_b, pad_r;
    test_conv_trailing_pad(p, &pad_b, &pad_r);
    int x = gb_input(b, 4, (int64_t[]){p->c, p->h, p->w});
    struct rt_node *n = gb_node(b, RT_OP_CONV2D, 1, &x);
    n->a.conv = (struct rt_conv_attrs){{p->stride_h, p->stride_w}, {p->pad_t, p->pad_l, pad_b, pad_r},
                                       {p->dil_h, p->dil_w}, p->groups};
    gb_weight(b, n, RT_W_WEIGHT, 4, (int64_t[]){p->oc, p->c / p->groups, p->kh, p->kw}, -0.5f, 0.5f);
    gb_weight(b, n, RT_W_BIAS, 1, (int64_t[]){p->oc}, -0.5f, 0.5f);
    int y = gb_done(b, n);
    if (c->a[0]) {
        int r = gb_input(b, 4, b->g.tensors[y].shape.dims + 1);
        y = gb_done(b, gb_node(b, RT_OP_ADD, 2, (int[]){y, r}));
    }
    if (p->act != K_ACT_NONE) {
        bool gelu_tanh;
        struct rt_node *a = gb_node(b, act_op(p->act, &gelu_tanh), 1, &y);
        a->a.gelu_tanh = gelu_tanh;
        y = gb_done(b, a);
    }
    gb_output(b, y);
}

/* max or average pooling (a[0]) of the shape random_pool; ceil mode when the
 * shape's output needs it */
static void build_pool_shape(struct gb *b, const struct op_case *c)
{
    const struct k_pool2d *p = &random_pool;
    int x = gb_input(b, 4, (int64_t[]){p->c, p->h, p->w});
    struct rt_node *n = gb_node(b, c->a[0] ? RT_OP_MAX_POOL2D : RT_OP_AVG_POOL2D, 1, &x);
    int floor_h = (p->h + 2 * p->pad_t - p->dil_h * (p->kh - 1) - 1) / p->stride_h + 1;
    int floor_w = (p->w + 2 * p->pad_l - p->dil_w * (p->kw - 1) - 1) / p->stride_w + 1;
    n->a.pool = (struct rt_pool_attrs){{p->kh, p->kw}, {p->stride_h, p->stride_w},
                                       {p->pad_t, p->pad_l, p->pad_t, p->pad_l}, {p->dil_h, p->dil_w},
                                       p->oh != floor_h || p->ow != floor_w, p->count_include_pad};
    gb_output(b, gb_done(b, n));
}

/* A convolution of x (square kernel k, stride 1, padding k / 2) to oc channels. */
static int gb_conv(struct gb *b, int x, int oc, int k)
{
    struct rt_node *n = gb_node(b, RT_OP_CONV2D, 1, &x);
    int p = k / 2;
    n->a.conv = (struct rt_conv_attrs){{1, 1}, {p, p, p, p}, {1, 1}, 1};
    gb_weight(b, n, RT_W_WEIGHT, 4, (int64_t[]){oc, b->g.tensors[x].shape.dims[1], k, k}, -0.5f, 0.5f);
    gb_weight(b, n, RT_W_BIAS, 1, (int64_t[]){oc}, -0.5f, 0.5f);
    return gb_done(b, n);
}

/* Channels last on a GPU backend (runtime/backend/layout_nhwc.h): x [a0,
 * a1, a2] -> conv 3x3 to a4 channels (reads NCHW, writes NHWC) -> the ops
 * of kind a3 in NHWC -> conv 3x3 (NHWC to NHWC) -> conv 1x1 (NHWC to the
 * NCHW output). a4 is a multiple of 8: every layout form runs, FP32 and
 * FP16. Kinds: 0 nothing between, 1 relu6 + max pool, 2 average pool +
 * batch norm (not folded: after a pool), 3 the middle conv with a fused
 * residual add + relu, 4 a concat of two convs along channels, 5 the middle
 * conv into global average pooling (the output). */
static void build_nhwc_chain(struct gb *b, const struct op_case *c)
{
    const int *a = c->a;
    int ch = a[4];
    int x = gb_input(b, 4, (int64_t[]){a[0], a[1], a[2]});
    int t = gb_conv(b, x, ch, 3);
    if (a[3] == 1) {
        t = gb_done(b, gb_node(b, RT_OP_RELU6, 1, &t));
        struct rt_node *n = gb_node(b, RT_OP_MAX_POOL2D, 1, &t);
        n->a.pool = (struct rt_pool_attrs){{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, true};
        t = gb_done(b, n);
    } else if (a[3] == 2) {
        struct rt_node *n = gb_node(b, RT_OP_AVG_POOL2D, 1, &t);
        n->a.pool = (struct rt_pool_attrs){{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, false};
        t = gb_done(b, n);
        n = gb_node(b, RT_OP_BATCH_NORM, 1, &t);
        int64_t chs = ch;
        gb_weight(b, n, RT_W_WEIGHT, 1, &chs, 0.5f, 1.5f);
        gb_weight(b, n, RT_W_BIAS, 1, &chs, -0.5f, 0.5f);
        gb_weight(b, n, RT_W_MEAN, 1, &chs, -0.5f, 0.5f);
        gb_weight(b, n, RT_W_VAR, 1, &chs, 0.2f, 2.0f);
        n->a.eps = 1e-5f;
        t = gb_done(b, n);
    } else if (a[3] == 4) {
        int u = gb_conv(b, x, ch / 2, 1);
        struct rt_node *n = gb_node(b, RT_OP_CONCAT, 2, (int[]){t, u});
        n->a.axis = 1;
        t = gb_done(b, n);
    }
    int m = gb_conv(b, t, ch, 3);
    if (a[3] == 3) {
        m = gb_done(b, gb_node(b, RT_OP_ADD, 2, (int[]){m, t}));
        m = gb_done(b, gb_node(b, RT_OP_RELU, 1, &m));
    }
    if (a[3] == 5)
        gb_output(b, gb_done(b, gb_node(b, RT_OP_GLOBAL_AVG_POOL, 1, &m)));
    else
        gb_output(b, gb_conv(b, m, 5, 1));
}

/* A 1x1 conv2d of x [a0, a1, a2] to a3 channels, then a depthwise 3x3
 * at stride a4, padding a5 (MobileNetV2's expansion and depthwise pair),
 * each followed by relu6 when a6: the CPU runs the pair as one chained
 * step in FP32, which the "chain:" cases check. */
static void build_expand_dw(struct gb *b, const struct op_case *c)
{
    const int *a = c->a;
    int x = gb_input(b, 4, (int64_t[]){a[0], a[1], a[2]});
    int t = gb_conv(b, x, a[3], 1);
    if (a[6])
        t = gb_done(b, gb_node(b, RT_OP_RELU6, 1, &t));
    struct rt_node *n = gb_node(b, RT_OP_CONV2D, 1, &t);
    n->a.conv = (struct rt_conv_attrs){{a[4], a[4]}, {a[5], a[5], a[5], a[5]}, {1, 1}, a[3]};
    gb_weight(b, n, RT_W_WEIGHT, 4, (int64_t[]){a[3], 1, 3, 3}, -0.5f, 0.5f);
    gb_weight(b, n, RT_W_BIAS, 1, (int64_t[]){a[3]}, -0.5f, 0.5f);
    t = gb_done(b, n);
    if (a[6])
        t = gb_done(b, gb_node(b, RT_OP_RELU6, 1, &t));
    gb_output(b, t);
}

static const struct op_case CASES[] = {
    {"conv2d 1x1 on 1x1", P_ALL, -1, 1, build_conv, {3, 1, 1, 5, 1, 1, 0, 1}},
    {"conv2d 3x3 s1 p1 odd", P_ALL, -1, 1, build_conv, {4, 7, 9, 6, 3, 1, 1, 1}},
    {"conv2d 3x3 s2 p1 g2", P_ALL, -1, 1, build_conv, {4, 9, 8, 6, 3, 2, 1, 2}},
    {"conv2d depthwise 3x3", P_ALL, -1, 1, build_conv, {8, 6, 6, 8, 3, 1, 1, 8}},
    {"conv2d depthwise 5x5 s2 + add + relu", P_ALL, -1, 1, build_conv, {6, 19, 17, -6, 5, 2, 2, 6}},
    {"conv2d depthwise 3x3 dilation 2", P_ALL, -1, 1, build_conv, {5, 21, 18, 5, -3, 1, 2, 5}},
    {"conv2d 3x3 dilation 2", P_ALL, -1, 1, build_conv, {3, 9, 9, 4, -3, 1, 2, 1}},
    {"conv2d 5x5 s2 + add + relu", P_ALL, -1, 1, build_conv, {5, 11, 10, -7, 5, 2, 2, 1}},
    {"conv2d 33 ch 1x1 + add + relu", P_ALL, -1, 1, build_conv, {33, 5, 3, -17, 1, 1, 0, 1}},
    {"conv2d asymmetric pad", P_ALL, -1, 1, build_conv_asym, {1, 0, 2, 1}},
    {"conv2d 3x3 on 4x4 + add + relu", P_ALL, -1, 1, build_conv, {64, 4, 4, -96, 3, 1, 1, 1}},
    /* conv_transpose2d accumulates in float, the reference in double: no
     * INT8 case (see resize below) */
    {"conv_transpose2d 3x3 s2 p1", P_FLOAT, -1, 1, build_conv_transpose, {4, 5, 6, 3, 3, 2, 1, 0}},
    {"conv_transpose2d groups 2 dilation 2", P_FLOAT, -1, 1, build_conv_transpose, {4, 4, 5, 6, 3, 1, 2, 1}},
    {"conv_transpose2d 4x4 s3 output_padding", P_FLOAT, -1, 1, build_conv_transpose, {3, 3, 4, 5, 4, 3, 1, 2}},
    {"conv_transpose2d 2x2 s2 no bias", P_FLOAT, -1, 1, build_conv_transpose, {5, 4, 4, 2, 2, 2, 0, 3}},
    {"linear 1 -> 1", P_ALL, -1, 1, build_linear, {0, 1, 1, 0}},
    {"linear 37 -> 13", P_ALL, -1, 1, build_linear, {0, 37, 13, 0}},
    {"linear rows 3x20 -> 7 + relu6", P_ALL, -2, 2, build_linear, {3, 20, 7, RT_OP_RELU6}},
    {"linear 300 -> 129 + relu", P_ALL, -1, 1, build_linear, {0, 300, 129, RT_OP_RELU}},
    {"linear 400 -> 120 + relu (lenet5 fc1)", P_ALL, -1, 1, build_linear, {0, 400, 120, RT_OP_RELU}},
    {"batch_norm standalone", P_FLOAT, -1, 1, build_batch_norm, {6, 5, 5}},
    {"relu", P_ALL, -4, 4, build_act, {3, 7, 5, RT_OP_RELU}},
    {"relu6", P_ALL, -8, 8, build_act, {3, 7, 5, RT_OP_RELU6}},
    {"sigmoid", P_ALL, -6, 6, build_act, {3, 7, 5, RT_OP_SIGMOID}},
    {"tanh", P_ALL, -3, 3, build_act, {33, 0, 0, RT_OP_TANH}},
    {"gelu", P_ALL, -4, 4, build_act, {3, 7, 5, RT_OP_GELU}},
    {"gelu tanh", P_ALL, -4, 4, build_act, {3, 7, 5, RT_OP_GELU, 1}},
    {"hardswish", P_ALL, -5, 5, build_act, {3, 7, 5, RT_OP_HARDSWISH}},
    {"silu", P_ALL, -12, 12, build_act, {3, 7, 5, RT_OP_SILU}},
    {"max_pool2d 3 s2 p1", P_ALL, -1, 1, build_pool, {3, 9, 8, RT_OP_MAX_POOL2D, 3, 2, 1, 0}},
    {"max_pool2d 2 s2 ceil", P_ALL, -1, 1, build_pool, {2, 7, 7, RT_OP_MAX_POOL2D, 2, 2, 0, 1}},
    {"max_pool2d 3 dilation 2", P_ALL, -1, 1, build_pool, {2, 9, 9, RT_OP_MAX_POOL2D, 3, 1, 1, 4}},
    {"avg_pool2d 3 s2 p1", P_ALL, -1, 1, build_pool, {3, 9, 8, RT_OP_AVG_POOL2D, 3, 2, 1, 0}},
    {"avg_pool2d 3 s2 p1 exclude pad ceil", P_ALL, -1, 1, build_pool, {3, 8, 8, RT_OP_AVG_POOL2D, 3, 2, 1, 3}},
    {"global_avg_pool", P_ALL, -1, 1, build_global_avg_pool, {7, 5, 3}},
    {"global_avg_pool 1x1", P_ALL, -1, 1, build_global_avg_pool, {4, 1, 1}},
    {"add", P_ALL, -1, 1, build_add, {3, 4, 5}},
    {"flatten", P_ALL, -1, 1, build_view, {0}},
    {"reshape", P_ALL, -1, 1, build_view, {6}},
    {"concat 3 along channels", P_ALL, -1, 1, build_concat, {3, 1}},
    {"concat 2 along height", P_ALL, -1, 1, build_concat, {2, 2}},
    {"softmax axis 1", P_FLOAT, -4, 4, build_softmax, {10, 0, 0, 1}},
    {"softmax axis 2 of 4", P_FLOAT, -4, 4, build_softmax, {3, 5, 4, 2}},
    {"softmax axis -1", P_FLOAT, -4, 4, build_softmax, {3, 5, 7, -1}},
    {"log_softmax axis 2 of 4", P_FLOAT, -4, 4, build_softmax, {3, 5, 4, 2, 1}},
    {"log_softmax axis -1", P_FLOAT, -40, 40, build_softmax, {33, 0, 0, -1, 1}},
    {"binary add broadcast", P_FLOAT, -1, 1, build_binary, {K_BIN_ADD, 0}},
    {"binary mul broadcast", P_FLOAT, -1, 1, build_binary, {K_BIN_MUL, 0}},
    {"binary sub constant", P_FLOAT, -1, 1, build_binary, {K_BIN_SUB, 1}},
    {"binary div constant left", P_FLOAT, 0.5f, 2, build_binary, {K_BIN_DIV, 2}},
    {"binary max broadcast", P_FLOAT, -1, 1, build_binary, {K_BIN_MAX, 0}},
    {"binary min constant", P_FLOAT, -1, 1, build_binary, {K_BIN_MIN, 1}},
    {"binary prelu broadcast", P_FLOAT, -1, 1, build_binary, {K_BIN_PRELU, 0}},
    {"binary prelu constant slope", P_FLOAT, -1, 1, build_binary, {K_BIN_PRELU, 1}},
    {"binary pow constant exponent", P_FLOAT, 0.25f, 2, build_binary, {K_BIN_POW, 1}},
    {"binary pow constant base", P_FLOAT, -1, 1, build_binary, {K_BIN_POW, 2}},
    {"transpose last axis moved", P_ALL, -1, 1, build_transpose, {3, 0, 1, 2}},
    {"transpose last axis kept", P_FLOAT, -1, 1, build_transpose, {2, 0, 1, 3}},
    /* the tiled matrix transpose, after axes of 1 go and adjacent ones merge */
    {"transpose NCHW to NHWC", P_ALL, -1, 1, build_transpose, {1, 2, 3, 0, 5, 7, 9, 11}},
    {"transpose last two, batched matrices", P_FLOAT, -1, 1, build_transpose, {0, 1, 3, 2}},
    {"transpose 300x70 between axes of 1", P_FLOAT, -1, 1, build_transpose, {0, 2, 1, 3, 1, 300, 70, 1}},
    {"transpose axes of 1 moved too", P_FLOAT, -1, 1, build_transpose, {2, 3, 0, 1, 3, 1, 1, 5}},
    {"reduce sum inner axis", P_FLOAT, -1, 1, build_reduce, {K_RED_SUM, 1, 1, 1}},
    {"reduce mean last two", P_ALL, -1, 1, build_reduce, {K_RED_MEAN, 1, 2, 0}},
    {"reduce max first", P_FLOAT, -1, 1, build_reduce, {K_RED_MAX, 0, 1, 1}},
    {"reduce min all", P_FLOAT, -1, 1, build_reduce, {K_RED_MIN, 0, 3, 0}},
    {"reduce prod", P_FLOAT, 0.5f, 1.5f, build_reduce, {K_RED_PROD, 2, 1, 1}},
    {"reduce l1", P_FLOAT, -1, 1, build_reduce, {K_RED_L1, 1, 1, 0}},
    {"reduce l2", P_FLOAT, -1, 1, build_reduce, {K_RED_L2, 0, 2, 1}},
    {"reduce sum_square", P_FLOAT, -1, 1, build_reduce, {K_RED_SUM_SQUARE, 2, 1, 0}},
    {"reduce log_sum", P_FLOAT, 0.25f, 2, build_reduce, {K_RED_LOG_SUM, 1, 2, 1}},
    {"reduce log_sum_exp", P_FLOAT, -8, 8, build_reduce, {K_RED_LOG_SUM_EXP, 0, 2, 0}},
    {"reduce log_sum_exp past exp's range", P_FLOAT, 700, 800, build_reduce, {K_RED_LOG_SUM_EXP, 2, 1, 1}},
    {"slice middle dim step 2", P_FLOAT, -1, 1, build_slice, {1, 1, 2, 3}},
    {"slice last dim reversed", P_ALL, -1, 1, build_slice, {2, 4, -1, 5}},
    {"slice first dim", P_FLOAT, -1, 1, build_slice, {0, 2, 1, 1}},
    {"slice last dim step 1 (attention's q, k, v)", P_ALL, -1, 1, build_slice, {2, 1, 1, 3}},
    {"slice middle dim step 1", P_FLOAT, -1, 1, build_slice, {1, 2, 1, 4}},
    {"pad constant", P_FLOAT, -1, 1, build_pad, {K_PAD_CONSTANT, 1, 0, 2, 0, 3, 1}},
    {"pad edge", P_FLOAT, -1, 1, build_pad, {K_PAD_EDGE, 0, 2, 3, 1, 1, 4}},
    {"pad reflect", P_ALL, -1, 1, build_pad, {K_PAD_REFLECT, 2, 3, 4, 1, 0, 2}},
    {"resize nearest up, asymmetric floor", P_ALL, -1, 1, build_resize,
     {K_RESIZE_NEAREST, K_COORD_ASYMMETRIC, 10, 12, K_ROUND_FLOOR, 0, 0}},
    {"resize nearest down, round_prefer_ceil", P_FLOAT, -1, 1, build_resize,
     {K_RESIZE_NEAREST, K_COORD_HALF_PIXEL, 3, 4, K_ROUND_PREFER_CEIL, 0, 0}},
    {"resize nearest scale 1.7, tf_half_pixel ceil", P_FLOAT, -1, 1, build_resize,
     {K_RESIZE_NEAREST, K_COORD_TF_HALF_PIXEL_FOR_NN, 8, 10, K_ROUND_CEIL, 0, 170}},
    /* linear and cubic blend in float, the reference in double: at INT8 a
     * value on a rounding boundary may quantise one step apart */
    {"resize linear up, half_pixel", P_FLOAT, -1, 1, build_resize,
     {K_RESIZE_LINEAR, K_COORD_HALF_PIXEL, 11, 13, 0, 0, 0}},
    {"resize linear down, align_corners", P_FLOAT, -1, 1, build_resize,
     {K_RESIZE_LINEAR, K_COORD_ALIGN_CORNERS, 2, 4, 0, 0, 0}},
    {"resize linear to one row, pytorch_half_pixel", P_FLOAT, -1, 1, build_resize,
     {K_RESIZE_LINEAR, K_COORD_PYTORCH_HALF_PIXEL, 1, 9, 0, 0, 0}},
    {"resize cubic up, half_pixel", P_FLOAT, -1, 1, build_resize,
     {K_RESIZE_CUBIC, K_COORD_HALF_PIXEL, 9, 9, 0, 0, 0}},
    {"resize cubic scale 0.6, exclude_outside", P_FLOAT, -1, 1, build_resize,
     {K_RESIZE_CUBIC, K_COORD_ASYMMETRIC, 3, 3, 0, 1, 60}},
    {"unary abs", P_FLOAT, -4, 4, build_unary, {3, 7, 5, K_UN_ABS}},
    {"unary neg", P_FLOAT, -4, 4, build_unary, {3, 7, 5, K_UN_NEG}},
    {"unary exp", P_FLOAT, -4, 4, build_unary, {3, 7, 5, K_UN_EXP}},
    {"unary log", P_FLOAT, 0.25f, 4, build_unary, {3, 7, 5, K_UN_LOG}},
    {"unary sqrt", P_FLOAT, 0.25f, 4, build_unary, {3, 7, 5, K_UN_SQRT}},
    {"unary reciprocal", P_FLOAT, 0.25f, 4, build_unary, {3, 7, 5, K_UN_RECIPROCAL}},
    {"unary floor", P_FLOAT, -4, 4, build_unary, {3, 7, 5, K_UN_FLOOR}},
    {"unary ceil", P_FLOAT, -4, 4, build_unary, {3, 7, 5, K_UN_CEIL}},
    {"unary erf", P_FLOAT, -3, 3, build_unary, {3, 7, 5, K_UN_ERF}},
    {"unary softplus", P_FLOAT, -6, 6, build_unary, {3, 7, 5, K_UN_SOFTPLUS}},
    {"unary softsign", P_FLOAT, -6, 6, build_unary, {3, 7, 5, K_UN_SOFTSIGN}},
    {"unary elu alpha 1.5", P_FLOAT, -4, 4, build_unary, {3, 7, 5, K_UN_ELU, 150}},
    {"unary selu", P_FLOAT, -4, 4, build_unary, {3, 7, 5, K_UN_SELU, 167, 105}},
    {"unary celu alpha 0.8", P_FLOAT, -4, 4, build_unary, {3, 7, 5, K_UN_CELU, 80}},
    {"unary leaky_relu 0.1", P_ALL, -4, 4, build_unary, {33, 0, 0, K_UN_LEAKY_RELU, 10}},
    {"unary hard_sigmoid", P_FLOAT, -4, 4, build_unary, {3, 7, 5, K_UN_HARD_SIGMOID, 20, 50}},
    {"unary thresholded_relu 0.5", P_FLOAT, -2, 2, build_unary, {3, 7, 5, K_UN_THRESHOLDED_RELU, 50}},
    {"matmul broadcast", P_FLOAT, -1, 1, build_matmul, {0}},
    {"matmul trans_b alpha", P_FLOAT, -1, 1, build_matmul, {1}},
    {"nhwc: conv chain", P_FLOAT, -1, 1, build_nhwc_chain, {3, 9, 7, 0, 16}},
    {"nhwc: relu6 + max_pool2d", P_FLOAT, -1, 1, build_nhwc_chain, {4, 10, 9, 1, 8}},
    {"nhwc: avg_pool2d + batch_norm", P_FLOAT, -1, 1, build_nhwc_chain, {2, 7, 8, 2, 16}},
    {"nhwc: residual add + relu", P_FLOAT, -1, 1, build_nhwc_chain, {3, 8, 8, 3, 24}},
    {"nhwc: concat along channels", P_FLOAT, -1, 1, build_nhwc_chain, {1, 6, 9, 4, 16}},
    {"nhwc: global_avg_pool", P_FLOAT, -1, 1, build_nhwc_chain, {3, 9, 9, 5, 32}},
    {"nhwc: 4x4 map (split-k)", P_FLOAT, -1, 1, build_nhwc_chain, {8, 4, 4, 3, 64}},
    {"chain: 1x1 + relu6, depthwise s2 + relu6", P_ALL, -1, 1, build_expand_dw, {5, 13, 11, 20, 2, 1, 1}},
    {"chain: 1x1, depthwise s1 unpadded", P_ALL, -1, 1, build_expand_dw, {3, 9, 9, 12, 1, 0, 0}},
    {"conv2d_dyn", P_FLOAT, -1, 1, build_conv2d_dyn, {1}},
    {"conv2d_dyn groups 2", P_FLOAT, -1, 1, build_conv2d_dyn, {2}},
    {"batch_norm_dyn", P_FLOAT, 0.25f, 2, build_batch_norm_dyn, {0}},
    /* atrous rates near the map: the taps that read the input (whole-row taps read in place, others
     * gathered), 7x11 not square, 40 input channels past one strip's gather */
    {"conv2d 3x3 at rate 6 on 9x9", P_FLOAT, -1, 1, build_conv_atrous, {6, 9, 9, 3, 3, 6, 6, 0}},
    {"conv2d 3x3 at rates 5, 8 on 7x11 + residual", P_FLOAT, -1, 1, build_conv_atrous, {40, 7, 11, 3, 3, 5, 8, 1}},
    {"conv2d 3x5 at rates 4, 3 on 5x6", P_FLOAT, -1, 1, build_conv_atrous, {3, 5, 6, 3, 5, 4, 3, 0}},
    /* rows of 37 (vector body and tail), 20, 42; values far from 0 (the mean's correction) */
    {"layer_norm last dim, scale and bias", P_FLOAT, -3, 3, build_layer_norm, {2, 10, K_LN_Y, 1, 1, 3, 4, 37}},
    {"layer_norm last two dims, scale", P_FLOAT, 100, 101, build_layer_norm, {1, 1, K_LN_Y, 1, 0, 3, 4, 5}},
    {"layer_norm whole sample, eps 0.1", P_FLOAT, -1, 1, build_layer_norm, {0, 100, K_LN_Y, 0, 0, 2, 3, 7}},
    {"layer_norm mean", P_FLOAT, -1, 3, build_layer_norm, {1, 1, K_LN_MEAN, 0, 0, 3, 4, 5}},
    {"layer_norm inverse deviation", P_FLOAT, 5, 6, build_layer_norm, {2, 1, K_LN_INV_STD, 0, 0, 3, 2, 37}},
};

/* ---- running a case */

static const int BATCHES[] = {1, 4, MAX_BATCH};

/* A backend under test; the CPU backend appears once per instruction set
 * this CPU has (the ISA is process-wide: set before each load and run). */
struct backend_slot {
    char name[24];
    struct rt_backend *b;
    int isa;                          /* enum kcpu_isa, or -1 */
    bool must_run;                    /* may not lack a case (the CPU backend) */
    int nhwc;                         /* "nhwc:" cases: 1 must, 0 must not run a step channels last; -1 either */
};

struct backends {
    struct backend_slot s[3 + KCPU_ISA_AVX512 + 1];
    int n;
    struct rt_backend *cpu, *cuda, *cuda_base;
    char cuda_why[160];               /* why there is no CUDA slot */
};

static void use_slot(const struct backend_slot *s)
{
    if (s->isa >= 0)
        kcpu_isa_set((enum kcpu_isa)s->isa);
}

/* The case's graph at precision prec. */
static uint64_t case_seed;   /* drawn per case run from the test's seed */

static bool build_case(const struct op_case *c, enum rt_precision prec, const float *scales, struct gb *b)
{
    memset(b, 0, sizeof(*b));
    b->rng = case_seed | 1;
    b->prec = prec;
    b->g.nodes = calloc(MAX_NODES, sizeof(*b->g.nodes));
    snprintf(b->cfg.name, sizeof(b->cfg.name), "case");
    b->cfg.precision = prec;
    b->cfg.max_batch_size = MAX_BATCH;
    if (!b->g.nodes)
        return false;
    c->build(b, c);
    if (scales) {   /* in node order, so views inherit their input's scale */
        for (int t = 0; t < b->g.n_tensors; t++)
            b->g.tensors[t].scale = scales[t];
        for (int i = 0; i < b->g.n_nodes; i++) {
            const struct rt_node *n = &b->g.nodes[i];
            if (rt_op_has(n->op, RT_T_KEEPS_SCALE))
                b->g.tensors[n->output].scale = b->g.tensors[n->inputs[0]].scale;
        }
    }
    return !b->failed;
}

/* Random inputs for a case (the same for every backend). */
struct case_data {
    int n_in, n_out;
    float *in[RT_MAX_IO];
    int64_t in_elems[RT_MAX_IO], out_elems[RT_MAX_IO];
};

static void case_data_free(struct case_data *d)
{
    for (int i = 0; i < d->n_in; i++)
        free(d->in[i]);
    memset(d, 0, sizeof(*d));
}

static bool case_data_make(const struct op_case *c, const struct rt_model_config *cfg, struct case_data *d)
{
    memset(d, 0, sizeof(*d));
    d->n_in = cfg->n_inputs;
    d->n_out = cfg->n_outputs;
    for (int i = 0; i < cfg->n_inputs; i++) {
        d->in_elems[i] = cfg->inputs[i].sample_elems;
        if (!(d->in[i] = malloc(sizeof(float) * (size_t)(d->in_elems[i] * MAX_BATCH))))
            return false;
        test_rand_fill(d->in[i], d->in_elems[i] * MAX_BATCH, c->lo, c->hi);
    }
    for (int i = 0; i < cfg->n_outputs; i++)
        d->out_elems[i] = cfg->outputs[i].sample_elems;
    return true;
}

/* A case loaded on one backend, ready to run at any batch. */
struct loaded {
    struct rt_model *m;
    struct rt_session *s;
};

static void unload(struct loaded *l)
{
    rt_session_free(l->s);
    rt_model_free(l->m);
    memset(l, 0, sizeof(*l));
}

/* RT_ERR_UNSUPPORTED when the backend has no kernel for a step (why in err).
 * seen (when given) marks the ops of the loaded graph. */
static enum rt_status load_case(const struct op_case *c, enum rt_precision prec, const float *scales,
                                struct rt_backend *be, bool *seen, struct loaded *l, struct rt_error *err)
{
    struct gb b;
    memset(l, 0, sizeof(*l));
    if (!build_case(c, prec, scales, &b)) {
        rt_graph_free(&b.g);
        return rt_error_set(err, RT_ERR_INTERNAL, "the case's graph is invalid");
    }
    enum rt_status st = rt_model_from_graph(&b.g, &b.cfg, be, NULL, &l->m, err);
    if (st == RT_OK)
        st = rt_session_create(l->m, &l->s, err);
    if (st == RT_OK && seen) {
        const struct rt_graph *g = rt_model_graph(l->m);
        for (int i = 0; i < g->n_nodes; i++)
            seen[g->nodes[i].op] = true;
    }
    if (st != RT_OK)
        unload(l);
    return st;
}

/* Per-tensor INT8 scales: max |value| / 127 over a reference FP32 run of the
 * unfused graph (every tensor observed) at the largest batch. Tensor ids of
 * the FP32 graph are those of the INT8 one before its precision pass. */
struct observed {
    const struct rt_graph *g;
    float *maxabs;
};

static void observe_max(void *user, int tensor, const float *data, int batch)
{
    struct observed *ob = user;
    int64_t n = ob->g->tensors[tensor].sample_elems * batch;
    for (int64_t i = 0; i < n; i++)
        ob->maxabs[tensor] = fmaxf(ob->maxabs[tensor], fabsf(data[i]));
}

static bool int8_scales(const struct op_case *c, struct rt_backend *ref, const struct case_data *d, float **scales)
{
    struct gb b;
    *scales = NULL;
    if (!build_case(c, RT_PRECISION_FP32, NULL, &b)) {
        rt_graph_free(&b.g);
        return false;
    }
    int nt = b.g.n_tensors;
    struct observed ob = {NULL, calloc((size_t)nt, sizeof(float))};
    struct rt_model *m = NULL;
    struct rt_session *s = NULL;
    struct rt_error err = {0};
    float *out[RT_MAX_IO] = {0};
    bool ok = ob.maxabs != NULL;
    for (int i = 0; ok && i < d->n_out; i++)
        ok = (out[i] = malloc(sizeof(float) * (size_t)(d->out_elems[i] * MAX_BATCH))) != NULL;
    const struct rt_load_options unfused = {.unfused = true};
    ok = ok && rt_model_from_graph(&b.g, &b.cfg, ref, &unfused, &m, &err) == RT_OK &&
         rt_session_create(m, &s, &err) == RT_OK;
    if (ok) {
        ob.g = rt_model_graph(m);
        ok = rt_session_run_observed(s, MAX_BATCH, (const float *const *)d->in, out, observe_max, &ob, &err) == RT_OK;
    }
    if (!ok)
        printf("  int8 scales: %s\n", err.msg);
    rt_session_free(s);
    rt_model_free(m);
    rt_graph_free(&b.g);
    for (int i = 0; i < d->n_out; i++)
        free(out[i]);
    for (int t = 0; ok && t < nt; t++)
        ob.maxabs[t] = ob.maxabs[t] > 0 ? ob.maxabs[t] / 127.0f : 1.0f / 127.0f;
    if (ok)
        *scales = ob.maxabs;
    else
        free(ob.maxabs);
    return ok;
}

/* Largest error allowed, relative to the largest reference value: FP32
 * 1e-5; FP16 two half roundings (unit roundoff 2^-11) per step plus one for
 * the inputs; INT8 none (bit for bit). */
static double tolerance(enum rt_precision prec, int steps)
{
    if (prec == RT_PRECISION_FP32)
        return 1e-5;
    if (prec == RT_PRECISION_FP16)
        return 2.0 * ldexp(1.0, -11) * (steps + 1);
    return 0;
}

/* Largest relative error of got against want over the first `batch`
 * samples of every output; INT8 outputs (dequantised codes) must have the
 * same bits (else infinity). */
static double case_error(const struct case_data *d, enum rt_precision prec, int batch, float *const *got,
                         float *const *want)
{
    double worst = 0;
    for (int i = 0; i < d->n_out; i++) {
        int64_t n = d->out_elems[i] * batch;
        double e = prec != RT_PRECISION_INT8 ? test_rel_error(got[i], want[i], n)
                   : test_same_bits(got[i], want[i], sizeof(float) * (size_t)n) ? 0
                                                                                : INFINITY;
        worst = e > worst || e != e ? e : worst;
    }
    return worst;
}

/* FP16's rule for reading NHWC (8 channels a 16-byte piece; FP32's 4
 * follows from it). */
static bool whole_half_pieces(const struct k_conv2d *p, void *user) { return p->c / p->groups % 8 == 0; }

/* Whether the channels-last pass (runtime/backend/layout_nhwc.h) keeps some
 * tensor of a loaded case NHWC, on any machine: the "nhwc:" cases must
 * reach the NHWC kernels wherever a GPU runs them. */
static bool nhwc_planned(const struct loaded *l)
{
    const struct rt_plan *p = rt_model_plan(l->m);
    bool *nhwc = calloc((size_t)p->g->n_tensors, sizeof(bool)), any = false;
    RT_ASSERT(nhwc);
    rt_nhwc_plan(p, RT_NHWC_FLOAT_STEPS, whole_half_pieces, NULL, nhwc);
    for (int t = 0; t < p->g->n_tensors; t++)
        any = any || nhwc[t];
    free(nhwc);
    return any;
}

/* Steps of a loaded case that the backend runs channels last, as its
 * describe_step says ("nhwc"). */
static int nhwc_steps(const struct loaded *l, struct rt_backend *be)
{
    const struct rt_plan *p = rt_model_plan(l->m);
    int n = 0;
    for (int i = 0; be->iface->describe_step && i < p->n_steps; i++) {
        char what[160] = "";
        be->iface->describe_step(be, p, &p->steps[i], 1, what, sizeof(what));
        n += strstr(what, "nhwc") != NULL;
    }
    return n;
}

/* Steps of a loaded case that run a chain (core/plan.h). */
static int chained_steps(const struct loaded *l)
{
    const struct rt_plan *p = rt_model_plan(l->m);
    int n = 0;
    for (int i = 0; i < p->n_steps; i++)
        n += p->steps[i].chain != NULL;
    return n;
}

/* One case at one precision through every backend; false on a mismatch or a
 * case the CPU backend cannot run. The reference runs once at the largest
 * batch: samples are independent, so a smaller batch's outputs are the
 * first samples of that run. Every other backend runs each batch size. */
static bool check_case(const struct op_case *c, enum rt_precision prec, const struct backend_slot *be, int n_be,
                       bool *seen)
{
    enum { N_BATCHES = sizeof(BATCHES) / sizeof(BATCHES[0]) };
    struct case_data d = {0};
    struct loaded l = {0};
    struct rt_error err = {0};
    float *scales = NULL, *want[RT_MAX_IO] = {0}, *got[RT_MAX_IO] = {0};
    char line[512];
    int len = snprintf(line, sizeof(line), "  %-38s %-4s", c->name, rt_precision_name(prec));
    case_seed = test_rand_u64();
    struct gb shape;
    bool ok = build_case(c, prec, NULL, &shape) && case_data_make(c, &shape.cfg, &d);
    double tol = tolerance(prec, shape.g.n_nodes);
    rt_graph_free(&shape.g);
    if (ok && prec == RT_PRECISION_INT8)
        ok = int8_scales(c, be[0].b, &d, &scales);
    for (int i = 0; ok && i < d.n_out; i++) {
        want[i] = malloc(sizeof(float) * (size_t)(d.out_elems[i] * MAX_BATCH));
        got[i] = malloc(sizeof(float) * (size_t)(d.out_elems[i] * MAX_BATCH));
        ok = want[i] && got[i];
    }
    if (ok && (load_case(c, prec, scales, be[0].b, seen, &l, &err) != RT_OK ||
               rt_session_run(l.s, MAX_BATCH, (const float *const *)d.in, want, &err) != RT_OK)) {
        printf("%s\n  ref failed: %s\n", line, err.msg);
        ok = false;
    }
    if (ok && strncmp(c->name, "nhwc:", 5) == 0 && !nhwc_planned(&l)) {
        printf("%s\n  the layout pass keeps no tensor channels last\n", line);
        ok = false;
    }
    unload(&l);
    for (int k = 1; ok && k < n_be; k++) {
        use_slot(&be[k]);
        enum rt_status st = load_case(c, prec, scales, be[k].b, NULL, &l, &err);
        if (st == RT_ERR_UNSUPPORTED && !be[k].must_run) {
            const char *why = strrchr(err.msg, ':');
            len += snprintf(line + len, sizeof(line) - (size_t)len, "  %s lacks (%.60s)", be[k].name,
                            why ? why + 2 : err.msg);
            continue;
        }
        if (st == RT_OK && be[k].nhwc >= 0 && strncmp(c->name, "nhwc:", 5) == 0 &&
            (nhwc_steps(&l, be[k].b) > 0) != (be[k].nhwc == 1)) {
            printf("%s\n  %s runs %d steps channels last\n", line, be[k].name, nhwc_steps(&l, be[k].b));
            ok = false;
        }
        /* The CPU chains the "chain:" cases in FP32 only (INT8 runs them
         * as INT8 steps, FP16 rounds every step's output); the rest never. */
        if (st == RT_OK && strncmp(c->name, "chain:", 6) == 0 &&
            chained_steps(&l) != (be[k].isa >= 0 && prec == RT_PRECISION_FP32)) {
            printf("%s\n  %s runs %d chained steps\n", line, be[k].name, chained_steps(&l));
            ok = false;
        }
        for (int bi = 0; ok && st == RT_OK && bi < N_BATCHES; bi++) {
            int batch = BATCHES[bi];
            st = rt_session_run(l.s, batch, (const float *const *)d.in, got, &err);
            double worst = st == RT_OK ? case_error(&d, prec, batch, got, want) : 0;
            if (st == RT_OK && !(worst <= tol)) {
                printf("%s\n  %s differs from ref at batch %d: relative error %.3g > %.3g\n", line, be[k].name,
                       batch, worst, tol);
                ok = false;
                break;
            }
        }
        unload(&l);
        if (st != RT_OK) {
            printf("%s\n  %s failed: %s\n", line, be[k].name, err.msg);
            ok = false;
        } else if (ok) {
            len += snprintf(line + len, sizeof(line) - (size_t)len, "  %s %s", be[k].name,
                            prec == RT_PRECISION_INT8 ? "same bits" : "ok");
        }
    }
    if (ok)
        printf("%s\n", line);
    for (int i = 0; i < RT_MAX_IO; i++) {
        free(want[i]);
        free(got[i]);
    }
    free(scales);
    case_data_free(&d);
    return ok;
}

/* ref, the CPU backend under each ISA, and CUDA when a GPU is usable. */
static bool backends_open(struct backends *bs)
{
    struct rt_error err = {0};
    memset(bs, 0, sizeof(*bs));
    for (int i = 0; i < (int)(sizeof(bs->s) / sizeof(bs->s[0])); i++)
        bs->s[i].isa = bs->s[i].nhwc = -1;
    if (rt_backend_ref_create(&bs->s[0].b, &err) != RT_OK ||
        rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = 2}, &bs->cpu, &err) != RT_OK) {
        printf("  backends: %s\n", err.msg);
        return false;
    }
    snprintf(bs->s[0].name, sizeof(bs->s[0].name), "ref");
    bs->n = 1;
    for (int isa = KCPU_ISA_SCALAR; isa <= (int)kcpu_isa_hardware(); isa++) {
        struct backend_slot *s = &bs->s[bs->n++];
        snprintf(s->name, sizeof(s->name), "cpu-%s", kcpu_isa_name((enum kcpu_isa)isa));
        s->b = bs->cpu;
        s->isa = isa;
        s->must_run = true;
    }
#ifdef INFERD_CUDA
    if (rt_backend_create(RT_BACKEND_CUDA,
                          &(struct rt_backend_options){.device = -1, .cuda_kernels = RT_CUDA_KERNELS_NEW},
                          &bs->cuda, &err) == RT_OK) {
        struct backend_slot *s = &bs->s[bs->n++];
        snprintf(s->name, sizeof(s->name), "cuda");
        s->b = bs->cuda;
        s->nhwc = 1;
        if (rt_backend_create(RT_BACKEND_CUDA,
                              &(struct rt_backend_options){.device = -1, .cuda_kernels = RT_CUDA_KERNELS_BASELINE},
                              &bs->cuda_base, &err) == RT_OK) {
            s = &bs->s[bs->n++];
            snprintf(s->name, sizeof(s->name), "cuda-baseline");
            s->b = bs->cuda_base;
            s->nhwc = 0;
        } else {   /* a second backend on a GPU that opened one must open too */
            printf("  cuda-baseline: %s\n", err.msg);
            return false;
        }
    } else {
        snprintf(bs->cuda_why, sizeof(bs->cuda_why), "%s", err.msg);
    }
#else
    snprintf(bs->cuda_why, sizeof(bs->cuda_why), "this build has no CUDA backend");
#endif
    if (!bs->cuda)
        printf("  cuda: skipped, no usable GPU (%s)\n", bs->cuda_why);
    return true;
}

static void backends_close(struct backends *bs)
{
    if (bs->s[0].b)
        rt_backend_free(bs->s[0].b);
    if (bs->cpu)
        rt_backend_free(bs->cpu);
    if (bs->cuda)
        rt_backend_free(bs->cuda);
    if (bs->cuda_base)
        rt_backend_free(bs->cuda_base);
    kcpu_isa_set(kcpu_isa_hardware());
}

/* Runs a case at each precision it has; the number that failed. */
static int check_precisions(const struct op_case *c, const struct backends *bs, bool *seen, int *runs)
{
    int failed = 0;
    for (int prec = RT_PRECISION_FP32; prec <= RT_PRECISION_INT8; prec++) {
        if (!(c->precisions & (1u << prec)))
            continue;
        ++*runs;
        failed += !check_case(c, (enum rt_precision)prec, bs->s, bs->n, seen);
    }
    return failed;
}

TEST(backend_ops_every_op_every_backend)
{
    struct backends bs;
    bool opened = backends_open(&bs);
    if (opened && !bs.cuda && test_gpu_requested()) {
        backends_close(&bs);
        SKIP("no usable CUDA device: %s", bs.cuda_why);
    }
    bool seen[RT_OP_COUNT] = {0};
    int failed = 0, runs = 0;
    for (size_t i = 0; opened && i < sizeof(CASES) / sizeof(CASES[0]); i++)
        failed += check_precisions(&CASES[i], &bs, seen, &runs);
    backends_close(&bs);
    ASSERT_TRUE(opened);
    printf("  %d case runs, %d failed\n", runs, failed);
    for (int op = 0; op < RT_OP_COUNT; op++)
        TEST_FAIL_IF(!seen[op], "op %s has no case in tests/test_backend_ops.c", rt_op_name((enum rt_op)op));
    ASSERT_EQ_INT(failed, 0);
    return TEST_PASS;
}

/* Fresh random convolutions (the last DWS of them depthwise with channel
 * multiplier 1) and pooling windows from the generator every kernel test
 * shares (op_shapes.h), through every backend. */
TEST(backend_ops_random_shapes)
{
    enum { CONVS = 20, DWS = 4, POOLS = 12 };
    struct backends bs;
    bool opened = backends_open(&bs);
    if (opened && !bs.cuda && test_gpu_requested()) {
        backends_close(&bs);
        SKIP("no usable CUDA device: %s", bs.cuda_why);
    }
    int failed = 0, runs = 0;
    for (int i = 0; opened && i < CONVS + POOLS; i++) {
        struct op_case c = {.precisions = P_ALL, .lo = -1, .hi = 1};
        char name[40];
        if (i < CONVS) {
            random_conv = i < CONVS - DWS ? test_random_conv(i % 4 == 3) : test_random_depthwise(i % 2 == 1);
            c.build = build_conv_shape;
            c.a[0] = test_rand_int(0, 2) == 0;
            snprintf(name, sizeof(name), "random conv2d %d", i);
        } else {
            c.a[0] = i % 2;
            random_pool = test_random_pool(c.a[0]);
            c.build = build_pool_shape;
            snprintf(name, sizeof(name), "random %s %d", c.a[0] ? "max_pool2d" : "avg_pool2d", i - CONVS);
        }
        c.name = name;
        int f = check_precisions(&c, &bs, NULL, &runs);
        const struct k_conv2d *cv = &random_conv;
        const struct k_pool2d *pl = &random_pool;
        if (f && i < CONVS)
            printf("  (conv c%d %dx%d oc%d k%dx%d s%d,%d p%d,%d -> %dx%d d%d,%d g%d act %d)\n", cv->c, cv->h, cv->w,
                   cv->oc, cv->kh, cv->kw, cv->stride_h, cv->stride_w, cv->pad_t, cv->pad_l, cv->oh, cv->ow, cv->dil_h,
                   cv->dil_w, cv->groups, (int)cv->act);
        else if (f)
            printf("  (pool c%d %dx%d k%dx%d s%d,%d p%d,%d d%d,%d -> %dx%d incl %d)\n", pl->c, pl->h, pl->w, pl->kh,
                   pl->kw, pl->stride_h, pl->stride_w, pl->pad_t, pl->pad_l, pl->dil_h, pl->dil_w, pl->oh, pl->ow,
                   pl->count_include_pad);
        failed += f;
    }
    backends_close(&bs);
    ASSERT_TRUE(opened);
    printf("  %d case runs, %d failed\n", runs, failed);
    ASSERT_EQ_INT(failed, 0);
    return TEST_PASS;
}
