/*
 * backend_ref.c - the reference backend: every op through the plain loops of
 * kernels/ref, behind the same interface as the CPU and CUDA backends, so
 * tests/test_backend_ops.c can run one table of op cases through every
 * backend and compare each with this one.
 *
 * FP16 models run as on the CPU backend (weights rounded by the precision
 * pass, every step's output and the model inputs it reads rounded through
 * half); INT8 steps use the integers of rt_q8_step_prepare, as every
 * backend does. Slow by design: not for serving.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels/ref/kref.h"
#include "kernels/ref/kref_q8.h"
#include "runtime/backend/backend.h"
#include "runtime/precision/quant.h"

struct ref_session {
    const struct rt_plan *plan;
    void *arena;
};

typedef void (*ref_run_fn)(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                           int batch, const struct rt_step_io *io);

static const float *bias_of(const struct rt_step *s) { return s->node->w[RT_W_BIAS].data; }
static const struct rt_q8_step *q8_of(const struct rt_step *s) { return s->prep; }

/* ---- FP32 */

static void conv2d_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    kref_conv2d_f32(&k->conv, io->in[0], s->node->w[RT_W_WEIGHT].data, bias_of(s), io->residual, io->out);
}

static void linear_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    kref_linear_f32(&k->linear, io->in[0], s->node->w[RT_W_WEIGHT].data, bias_of(s), io->residual, io->out);
}

static void batch_norm_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                           int batch, const struct rt_step_io *io)
{
    kref_channel_affine_f32(&k->affine, io->in[0], s->node->w[RT_W_WEIGHT].data, bias_of(s), io->out);
}

static void act_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                    const struct rt_step_io *io)
{
    kref_act_f32_n(s->act, k->count, io->in[0], io->out);
}

static void max_pool2d_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                           int batch, const struct rt_step_io *io)
{
    kref_max_pool2d_f32(&k->pool, io->in[0], io->out);
}

static void avg_pool2d_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                           int batch, const struct rt_step_io *io)
{
    kref_avg_pool2d_f32(&k->pool, io->in[0], io->out);
}

static void global_avg_pool_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                                int batch, const struct rt_step_io *io)
{
    kref_global_avg_pool_f32((int)k->channels.n, (int)k->channels.c, k->channels.inner, io->in[0], io->out);
}

static void add_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                    const struct rt_step_io *io)
{
    kref_add_f32(k->count, io->in[0], io->in[1], io->out);
}

static void binary_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    const void *a, *b;
    rt_step_binary_operands(s, io, &a, &b);
    kref_binary_f32(&k->binary, a, b, io->out);
}

static void unary_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                      const struct rt_step_io *io)
{
    kref_unary_f32(&k->unary, io->in[0], io->out);
}

static void transpose_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                          const struct rt_step_io *io)
{
    kref_transpose_f32(&k->transpose, io->in[0], io->out);
}

static void reduce_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    kref_reduce_f32(&k->reduce, io->in[0], io->out);
}

static void slice_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                      const struct rt_step_io *io)
{
    kref_slice_f32(&k->slice, io->in[0], io->out);
}

static void pad_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                    const struct rt_step_io *io)
{
    kref_pad_f32(&k->pad, io->in[0], io->out);
}

static void conv_transpose2d_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                                 int batch, const struct rt_step_io *io)
{
    kref_conv_transpose2d_f32(&k->conv, io->in[0], s->node->w[RT_W_WEIGHT].data, bias_of(s), io->out);
}

static void layer_norm_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                           int batch, const struct rt_step_io *io)
{
    kref_layer_norm_f32(&k->layer_norm, io->in[0], s->node->w[RT_W_WEIGHT].data, bias_of(s), io->out);
}

static void resize_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    kref_resize_f32(&k->resize, io->in[0], io->out);
}

static void matmul_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    kref_matmul_f32(&k->matmul, io->in[0], io->in[1], io->out);
}

/* One convolution per sample, with that sample's weights. */
static void conv2d_dyn_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                           int batch, const struct rt_step_io *io)
{
    const struct rt_conv_dyn_params *d = &k->conv_dyn;
    const float *x = io->in[0], *w = io->in[1], *b = s->n_in > 2 ? io->in[2] : NULL;
    float *y = io->out;
    for (int i = 0; i < batch; i++)
        kref_conv2d_f32(&d->conv, x + i * d->x_elems, w + i * d->w_elems, b ? b + i * d->b_elems : NULL, NULL,
                        y + i * d->y_elems);
}

static void batch_norm_dyn_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                               int batch, const struct rt_step_io *io)
{
    kref_batch_norm_f32(&k->bn, io->in[0], io->in[1], io->in[2], io->in[3], io->in[4], io->out);
}

static void softmax_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                        const struct rt_step_io *io)
{
    kref_softmax_f32(&k->softmax, io->in[0], io->out);
}

static void concat_f32(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    kref_concat_f32(&k->concat.k, (const float *const *)io->in, k->concat.lens, io->out);
}

/* Activations all run act_f32; views are no steps. */
static const ref_run_fn F32[RT_OP_COUNT] = {
    [RT_OP_CONV2D] = conv2d_f32,
    [RT_OP_LINEAR] = linear_f32,
    [RT_OP_BATCH_NORM] = batch_norm_f32,
    [RT_OP_MAX_POOL2D] = max_pool2d_f32,
    [RT_OP_AVG_POOL2D] = avg_pool2d_f32,
    [RT_OP_GLOBAL_AVG_POOL] = global_avg_pool_f32,
    [RT_OP_ADD] = add_f32,
    [RT_OP_CONCAT] = concat_f32,
    [RT_OP_SOFTMAX] = softmax_f32,
    [RT_OP_LOG_SOFTMAX] = softmax_f32,
    [RT_OP_BINARY] = binary_f32,
    [RT_OP_UNARY] = unary_f32,
    [RT_OP_TRANSPOSE] = transpose_f32,
    [RT_OP_REDUCE] = reduce_f32,
    [RT_OP_SLICE] = slice_f32,
    [RT_OP_PAD] = pad_f32,
    [RT_OP_RESIZE] = resize_f32,
    [RT_OP_LAYER_NORM] = layer_norm_f32,
    [RT_OP_CONV_TRANSPOSE2D] = conv_transpose2d_f32,
    [RT_OP_MATMUL] = matmul_f32,
    [RT_OP_CONV2D_DYN] = conv2d_dyn_f32,
    [RT_OP_BATCH_NORM_DYN] = batch_norm_dyn_f32,
};

/* ---- INT8 */

static void conv2d_q8(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                      const struct rt_step_io *io)
{
    kref_conv2d_q8(&k->conv, io->in[0], s->node->w[RT_W_WEIGHT].q, &q8_of(s)->epi, io->residual, io->out);
}

static void linear_q8(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                      const struct rt_step_io *io)
{
    kref_linear_q8(&k->linear, io->in[0], s->node->w[RT_W_WEIGHT].q, &q8_of(s)->epi, io->residual, io->out);
}

static void quantize_q8(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                        const struct rt_step_io *io)
{
    kref_quantize_q8(k->count, io->in[0], q8_of(s)->scale, io->out);
}

static void dequantize_q8(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                          int batch, const struct rt_step_io *io)
{
    const struct rt_channels *ch = &k->channels;
    if (!q8_of(s)->chan_scale)
        kref_dequantize_q8(ch->n * ch->c * ch->inner, io->in[0], q8_of(s)->scale, io->out);
    else
        kref_dequantize_i32((int)ch->n, (int)ch->c, ch->inner, io->in[0], q8_of(s)->chan_scale, io->out);
}

static void act_q8(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                   const struct rt_step_io *io)
{
    kref_lut_q8(k->count, q8_of(s)->lut, io->in[0], io->out);
}

static void max_pool2d_q8(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                          int batch, const struct rt_step_io *io)
{
    kref_max_pool2d_q8(&k->pool, io->in[0], io->out);
}

static void avg_pool2d_q8(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                          int batch, const struct rt_step_io *io)
{
    kref_avg_pool2d_q8(&k->pool, q8_of(s)->mult, io->in[0], io->out);
}

static void global_avg_pool_q8(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k,
                               int batch, const struct rt_step_io *io)
{
    kref_global_avg_pool_q8((int)k->channels.n, (int)k->channels.c, k->channels.inner, q8_of(s)->mult[0], io->in[0],
                            io->out);
}

static void add_q8(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                   const struct rt_step_io *io)
{
    const struct k_q8_mult *m = q8_of(s)->mult;
    kref_add_q8(k->count, io->in[0], m[0], io->in[1], m[1], io->out);
}

static void concat_q8(const struct rt_plan *p, const struct rt_step *s, const union rt_step_params *k, int batch,
                      const struct rt_step_io *io)
{
    kref_concat_q8(&k->concat.k, (const int8_t *const *)io->in, k->concat.lens, q8_of(s)->mult, io->out);
}

/* Activations all run act_q8. */
static const ref_run_fn Q8[RT_OP_COUNT] = {
    [RT_OP_CONV2D] = conv2d_q8,
    [RT_OP_LINEAR] = linear_q8,
    [RT_OP_QUANTIZE] = quantize_q8,
    [RT_OP_DEQUANTIZE] = dequantize_q8,
    [RT_OP_MAX_POOL2D] = max_pool2d_q8,
    [RT_OP_AVG_POOL2D] = avg_pool2d_q8,
    [RT_OP_GLOBAL_AVG_POOL] = global_avg_pool_q8,
    [RT_OP_ADD] = add_q8,
    [RT_OP_CONCAT] = concat_q8,
};

static ref_run_fn kernel_of(const struct rt_step *s)
{
    if (rt_op_has(s->op, RT_T_ACT))
        return s->q8 ? act_q8 : act_f32;
    return s->q8 ? Q8[s->op] : F32[s->op];
}

/* ---- the interface */

static void ref_free(struct rt_backend *b) { free(b); }

static bool ref_supports_step(struct rt_backend *b, const struct rt_plan *p, const struct rt_step *s,
                              enum rt_precision prec, char *why, size_t why_len)
{
    if (kernel_of(s))
        return true;
    snprintf(why, why_len, "no reference %s kernel", s->q8 ? "INT8" : "FP32");
    return false;
}

static enum rt_status ref_prepare_step(struct rt_backend *b, const struct rt_plan *p, struct rt_step *s,
                                       int max_batch, struct rt_error *err)
{
    if (!s->q8)
        return RT_OK;
    struct rt_q8_step *q = malloc(sizeof(*q));
    if (!q)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    enum rt_status st = rt_q8_step_prepare(p, s, q, err);
    if (st != RT_OK)
        free(q);
    else
        s->prep = q;
    return st;
}

static void ref_release_step(struct rt_backend *b, struct rt_step *s)
{
    if (s->prep)
        rt_q8_step_free(s->prep);
    free(s->prep);
    s->prep = NULL;
}

static void ref_session_free(void *ctx)
{
    struct ref_session *rs = ctx;
    if (rs)
        free(rs->arena);
    free(rs);
}

static enum rt_status ref_session_create(struct rt_backend *b, const struct rt_plan *p, int max_batch,
                                         size_t arena_bytes, void **out, struct rt_error *err)
{
    struct ref_session *rs = calloc(1, sizeof(*rs));
    if (rs)
        rs->arena = aligned_alloc(RT_ARENA_ALIGN, (arena_bytes + RT_ARENA_ALIGN) / RT_ARENA_ALIGN * RT_ARENA_ALIGN);
    if (!rs || !rs->arena) {
        ref_session_free(rs);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory allocating a %zu-byte arena", arena_bytes);
    }
    rs->plan = p;
    *out = rs;
    return RT_OK;
}

static void *ref_session_arena(void *ctx) { return ((struct ref_session *)ctx)->arena; }

static enum rt_status ref_copy(void *ctx, void *dst, const void *src, size_t bytes, struct rt_error *err)
{
    memcpy(dst, src, bytes);
    return RT_OK;
}

static enum rt_status ref_sync(void *ctx, struct rt_error *err) { return RT_OK; }

/* FP16: the model inputs a step reads are rounded in place (rounding twice
 * changes nothing), then its output. */
static enum rt_status ref_run_step(void *ctx, const struct rt_plan *p, const struct rt_step *s, int batch,
                                   const struct rt_step_io *io, struct rt_error *err)
{
    const struct rt_graph *g = p->g;
    bool fp16 = !s->q8 && p->cfg && p->cfg->precision == RT_PRECISION_FP16;
    for (int k = 0; fp16 && k <= s->n_in; k++) {
        int t = k < s->n_in ? s->in[k] : s->residual;
        float *x = (float *)(k < s->n_in ? io->in[k] : io->residual);
        if (t >= 0 && g->tensors[p->root[t]].input_index >= 0)
            kref_round_f16(g->tensors[t].sample_elems * batch, x, x);
    }
    union rt_step_params k = rt_step_params(s, batch);
    kernel_of(s)(p, s, &k, batch, io);
    if (fp16)
        kref_round_f16(g->tensors[s->out].sample_elems * batch, io->out, io->out);
    return RT_OK;
}

static const struct rt_backend_iface REF_IFACE = {
    .name = "ref",
    .device_kind = RT_DEVICE_CPU,
    .free = ref_free,
    .supports_step = ref_supports_step,
    .prepare_step = ref_prepare_step,
    .release_step = ref_release_step,
    .session_create = ref_session_create,
    .session_free = ref_session_free,
    .session_arena = ref_session_arena,
    .copy_in = ref_copy,
    .copy_out = ref_copy,
    .run_step = ref_run_step,
    .sync = ref_sync,
};

enum rt_status rt_backend_ref_create(struct rt_backend **out, struct rt_error *err)
{
    struct rt_backend *b = calloc(1, sizeof(*b));
    if (!b)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    b->iface = &REF_IFACE;
    snprintf(b->description, sizeof(b->description), "ref (kernels/ref, one thread)");
    *out = b;
    return RT_OK;
}
