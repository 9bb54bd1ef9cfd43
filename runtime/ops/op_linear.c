/* op_linear.c - linear (constant weights) and matmul (two run-time operands). */
#include <stdlib.h>

#include "runtime/ops/ops_impl.h"

const struct rt_weight_key rt_op_gemm_weights[] = {
    {"weight", RT_W_WEIGHT, true},
    {"bias", RT_W_BIAS, false},
    {NULL, 0, false},
};

enum rt_status rt_op_q8_prepare_gemm(const struct rt_graph *g, const struct rt_step *s, struct rt_q8_step *q,
                                     struct rt_error *err)
{
    const struct rt_weight *w = &s->node->w[RT_W_WEIGHT], *b = &s->node->w[RT_W_BIAS];
    int64_t oc = w->shape.dims[0];
    double s_in = g->tensors[s->in[0]].scale, s_out = g->tensors[s->out].scale;
    q->bias = malloc(sizeof(int32_t) * (size_t)oc);
    q->mult = malloc(sizeof(struct k_q8_mult) * (size_t)oc);
    if (!q->bias || !q->mult)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    bool i32 = g->tensors[s->out].dtype == RT_DTYPE_I32;
    for (int64_t c = 0; c < oc; c++) {
        double acc_scale = s_in * (double)w->scale[c];
        q->bias[c] = b->data ? rt_q8_bias(b->data[c], acc_scale) : 0;
        q->mult[c] = i32 ? rt_q8_mult(1) : rt_q8_mult(acc_scale / s_out);
    }
    q->epi = (struct k_q8_epilogue){.bias = q->bias, .mult = q->mult, .lo = K_Q8_MIN, .hi = K_Q8_MAX,
                                    .out_i32 = i32};
    if (s->residual >= 0)
        q->epi.res_mult = rt_q8_mult(g->tensors[s->residual].scale / s_out);
    if (s->act == K_ACT_RELU || s->act == K_ACT_RELU6)
        q->epi.lo = 0;
    if (s->act == K_ACT_RELU6)
        q->epi.hi = rt_q8_round(6.0, s_out);
    return RT_OK;
}

/* ---- linear: [N, ..., K] -> [N, ..., M], as torch.nn.Linear and ONNX MatMul
 * with a constant right operand: each row of K is one product */

static enum rt_status linear_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                   struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape;
    const struct rt_weight *w = &n->w[RT_W_WEIGHT];
    if (x->rank < 2)
        return rt_op_node_error(err, n, "input must be [N, ..., K]");
    if (w->shape.rank != 2 || w->shape.dims[1] != x->dims[x->rank - 1] || w->shape.dims[0] < 1)
        return rt_op_node_error(err, n, "weight must be [M, K] with K the input features");
    if (n->w[RT_W_BIAS].data && !rt_op_weight_is(&n->w[RT_W_BIAS], 1, &w->shape.dims[0]))
        return rt_op_node_error(err, n, "bias must be [M]");
    *out = *x;
    out->dims[x->rank - 1] = w->shape.dims[0];
    return RT_OK;
}

/* A rank > 2 input [N, ..., K] is N * ... rows of K. */
static void linear_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *k)
{
    const struct rt_tensor *x = &g->tensors[s->in[0]], *y = &g->tensors[s->out];
    int64_t kk = x->shape.dims[x->shape.rank - 1];
    k->linear = (struct k_linear){.n = (int)(x->sample_elems / kk), .k = (int)kk,
                                  .m = (int)y->shape.dims[y->shape.rank - 1], .act = s->act};
}

static void linear_at_batch(union rt_step_params *k, int batch) { k->linear.n *= batch; }

static double linear_flops(const struct rt_step *s, const union rt_step_params *k, int batch)
{
    return 2.0 * k->linear.n * k->linear.k * (double)k->linear.m;
}

const struct rt_op_family rt_family_linear = {
    .infer = linear_infer,
    .params = linear_params,
    .at_batch = linear_at_batch,
    .weights = rt_op_gemm_weights,
    .q8_prepare = rt_op_q8_prepare_gemm,
    .flops = linear_flops,
};

/* ---- matmul: per-sample [..., M, K] . [..., K, N] (either transposed), the
 * leading dims broadcast as numpy does */

static enum rt_status matmul_infer(const struct rt_graph *g, const struct rt_node *n, struct rt_shape *out,
                                   struct rt_error *err)
{
    const struct rt_shape *x = &g->tensors[n->inputs[0]].shape, *y = &g->tensors[n->inputs[1]].shape;
    const struct rt_matmul_attrs *a = &n->a.matmul;
    int rx = x->rank - 1, ry = y->rank - 1;
    if (rx < 2 || ry < 2)
        return rt_op_node_error(err, n, "operands must be per-sample [..., M, K] and [..., K, N]");
    int64_t m = x->dims[a->trans_a ? rx : rx - 1], k = x->dims[a->trans_a ? rx - 1 : rx];
    int64_t k2 = y->dims[a->trans_b ? ry : ry - 1], nn = y->dims[a->trans_b ? ry - 1 : ry];
    if (k != k2)
        return rt_op_node_error(err, n, "inner dimensions differ");
    int bx = rx - 2, by = ry - 2, r = bx > by ? bx : by;
    if (r + 3 > RT_MAX_DIMS || r > K_BINARY_MAX_DIMS)
        return rt_op_node_error(err, n, "too many dimensions");
    out->rank = r + 3;
    out->dims[0] = -1;
    for (int i = 0; i < r; i++) {
        int64_t da = i - (r - bx) >= 0 ? x->dims[1 + i - (r - bx)] : 1;
        int64_t db = i - (r - by) >= 0 ? y->dims[1 + i - (r - by)] : 1;
        if (da != db && da != 1 && db != 1)
            return rt_op_node_error(err, n, "batch dimensions do not broadcast");
        out->dims[1 + i] = da == 1 ? db : da;
    }
    out->dims[r + 1] = m;
    out->dims[r + 2] = nn;
    return RT_OK;
}

static void matmul_params(const struct rt_graph *g, const struct rt_step *s, union rt_step_params *kp)
{
    const struct rt_matmul_attrs *at = &s->node->a.matmul;
    const struct rt_tensor *a = &g->tensors[s->in[0]], *b = &g->tensors[s->in[1]], *y = &g->tensors[s->out];
    int ra = a->shape.rank - 1, rb = b->shape.rank - 1, ry = y->shape.rank - 1;
    struct k_matmul k = {.n = 1, .rank = ry - 2, .a_sample = a->sample_elems, .b_sample = b->sample_elems,
                         .m = y->shape.dims[ry - 1], .cols = y->shape.dims[ry],
                         .k = a->shape.dims[at->trans_a ? ra - 1 : ra],
                         .trans_a = at->trans_a, .trans_b = at->trans_b, .alpha = at->alpha};
    const int64_t *dims[2] = {a->shape.dims + 1, b->shape.dims + 1};
    int bat[2] = {ra - 2, rb - 2};
    int64_t *stride[2] = {k.a_stride, k.b_stride};
    int64_t mat[2] = {a->shape.dims[ra - 1] * a->shape.dims[ra], b->shape.dims[rb - 1] * b->shape.dims[rb]};
    for (int o = 0; o < 2; o++) {
        int64_t step = mat[o];
        for (int d = k.rank - 1; d >= 0; d--) {
            int src = d - (k.rank - bat[o]);
            int64_t len = src >= 0 ? dims[o][src] : 1;
            stride[o][d] = len == 1 ? 0 : step;
            step *= len;
        }
    }
    for (int d = 0; d < k.rank; d++)
        k.dims[d] = y->shape.dims[d + 1];
    kp->matmul = k;
}

static void matmul_at_batch(union rt_step_params *k, int batch) { k->matmul.n *= batch; }

/* Two per multiply-add of each [m, k] . [k, cols] product, one product per
 * batch position of every sample. */
static double matmul_flops(const struct rt_step *s, const union rt_step_params *kp, int batch)
{
    const struct k_matmul *k = &kp->matmul;
    double products = k->n;
    for (int d = 0; d < k->rank; d++)
        products *= (double)k->dims[d];
    return 2.0 * products * (double)k->m * (double)k->k * (double)k->cols;
}

const struct rt_op_family rt_family_matmul = {
    .infer = matmul_infer,
    .params = matmul_params,
    .at_batch = matmul_at_batch,
    .flops = matmul_flops,
};
