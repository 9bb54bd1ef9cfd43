/*
 * backend_cpu.c - the CPU backend: FP32 kernels from kernels/cpu, one thread
 * pool, arena and scratch buffer per session, weights packed once per model.
 *
 * INT8 steps (step->q8) go to backend_cpu_q8.c. FP16 models run the FP32
 * kernels on weights already rounded through half (rt_graph_apply_precision)
 * and round every step's output, and the model inputs a step reads, through
 * half too (F16C): FP32 accumulation with FP16 storage, the CPU reference
 * for a GPU's FP16.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kernels/cpu/kcpu.h"
#include "../kernels/cpu/kcpu_q8.h"
#include "backend_cpu_impl.h"

struct cpu_backend {
    int threads;
    int batch_chunk;   /* rt_backend_options.cpu_batch_chunk; 0: sized to L2 */
};

struct cpu_session {
    struct kcpu_pool *pool;
    void *arena;
    void *scratch;
};

static void cpu_free(struct rt_backend *b)
{
    free(b->ctx);
    free(b);
}

static bool cpu_supports_step(struct rt_backend *b, const struct rt_plan *p, const struct rt_step *s,
                              enum rt_precision prec, char *why, size_t why_len)
{
    return s->op < RT_OP_COUNT && s->op != RT_OP_FLATTEN && s->op != RT_OP_RESHAPE;
}

/* ---- ops whose weights are run-time tensors (ONNX weights as graph inputs) */

static struct k_matmul step_matmul(const struct rt_plan *p, const struct rt_step *s, int batch)
{
    const struct rt_graph *g = p->g;
    const struct rt_matmul_attrs *at = &s->node->a.matmul;
    const struct rt_tensor *a = &g->tensors[s->in[0]], *b = &g->tensors[s->in[1]], *y = &g->tensors[s->out];
    int ra = a->shape.rank - 1, rb = b->shape.rank - 1, ry = y->shape.rank - 1;
    struct k_matmul k = {.n = batch, .rank = ry - 2, .a_sample = a->sample_elems, .b_sample = b->sample_elems,
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
    return k;
}

/* One sample's convolution: n = the sample's images. */
static struct k_conv2d step_conv2d_dyn(const struct rt_plan *p, const struct rt_step *s)
{
    const struct rt_graph *g = p->g;
    const struct rt_shape *x = &g->tensors[s->in[0]].shape, *y = &g->tensors[s->out].shape;
    const struct rt_shape *w = &g->tensors[s->in[1]].shape;
    const struct rt_conv_attrs *a = &s->node->a.conv;
    return (struct k_conv2d){
        .n = (int)x->dims[1], .c = (int)x->dims[2], .h = (int)x->dims[3], .w = (int)x->dims[4],
        .oc = (int)y->dims[2], .oh = (int)y->dims[3], .ow = (int)y->dims[4],
        .kh = (int)w->dims[3], .kw = (int)w->dims[4],
        .stride_h = a->stride[0], .stride_w = a->stride[1], .pad_t = a->pad[0], .pad_l = a->pad[1],
        .dil_h = a->dilation[0], .dil_w = a->dilation[1], .groups = a->groups, .act = K_ACT_NONE,
    };
}

/* Scratch: the sample's weights packed, then the kernel's own scratch. */
static size_t conv2d_dyn_packed_bytes(const struct k_conv2d *k)
{
    return (kcpu_conv2d_packed_floats(k) * sizeof(float) + 63) & ~(size_t)63;
}

static void run_conv2d_dyn(struct cpu_session *cs, const struct rt_plan *p, const struct rt_step *s, int batch,
                           const struct rt_step_io *io)
{
    const struct rt_graph *g = p->g;
    struct k_conv2d k = step_conv2d_dyn(p, s);
    float *packed = cs->scratch;
    void *rest = (char *)cs->scratch + conv2d_dyn_packed_bytes(&k);
    int64_t xs = g->tensors[s->in[0]].sample_elems, ws = g->tensors[s->in[1]].sample_elems;
    int64_t ys = g->tensors[s->out].sample_elems, bs = s->n_in > 2 ? g->tensors[s->in[2]].sample_elems : 0;
    const float *x = io->in[0], *w = io->in[1], *b = s->n_in > 2 ? io->in[2] : NULL;
    float *y = io->out;
    for (int i = 0; i < batch; i++) {
        kcpu_conv2d_pack(&k, w + i * ws, packed);
        kcpu_conv2d_f32(cs->pool, &k, x + i * xs, packed, b ? b + i * bs : NULL, NULL, y + i * ys, rest);
    }
}

static struct k_batch_norm step_batch_norm_dyn(const struct rt_plan *p, const struct rt_step *s, int batch)
{
    const struct rt_tensor *x = &p->g->tensors[s->in[0]];
    int64_t in_n = x->shape.dims[1], c = x->shape.dims[2];
    return (struct k_batch_norm){.n = batch, .in_n = in_n, .c = c, .inner = x->sample_elems / (in_n * c),
                                 .eps = s->node->a.eps};
}

static void *alloc_aligned(size_t bytes)
{
    size_t rounded = (bytes + 63) & ~(size_t)63;
    return aligned_alloc(64, rounded ? rounded : 64);
}

static enum rt_status cpu_prepare_step(struct rt_backend *b, const struct rt_plan *p, struct rt_step *s,
                                       int max_batch, struct rt_error *err)
{
    if (s->q8)
        return rt_cpu_q8_prepare(p, s, max_batch, err);
    const float *w = s->node->w[RT_W_WEIGHT].data;
    float *packed = NULL;
    if (s->op == RT_OP_CONV2D) {
        struct k_conv2d k = rt_step_conv2d(p, s, max_batch);
        packed = alloc_aligned(kcpu_conv2d_packed_floats(&k) * sizeof(float));
        if (packed)
            kcpu_conv2d_pack(&k, w, packed);
    } else if (s->op == RT_OP_LINEAR) {
        struct k_linear k = rt_step_linear(p, s, max_batch);
        packed = alloc_aligned(kcpu_linear_packed_floats(&k) * sizeof(float));
        if (packed)
            kcpu_linear_pack(&k, w, packed);
    } else {
        return RT_OK;
    }
    if (!packed)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory packing weights of '%s'", s->node->name);
    s->prep = packed;
    return RT_OK;
}

static void cpu_release_step(struct rt_backend *b, struct rt_step *s)
{
    if (s->q8) {
        rt_cpu_q8_release(s);
        return;
    }
    free(s->prep);
    s->prep = NULL;
}

static void cpu_session_free(void *ctx)
{
    struct cpu_session *cs = ctx;
    if (!cs)
        return;
    kcpu_pool_free(cs->pool);
    free(cs->arena);
    free(cs->scratch);
    free(cs);
}

static enum rt_status cpu_session_create(struct rt_backend *b, const struct rt_plan *p, int max_batch,
                                         size_t arena_bytes, void **out, struct rt_error *err)
{
    struct cpu_backend *cb = b->ctx;
    struct cpu_session *cs = calloc(1, sizeof(*cs));
    if (!cs)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    size_t scratch = 0;
    for (int i = 0; i < p->n_steps; i++) {
        const struct rt_step *s = &p->steps[i];
        size_t need = 0;
        if (s->q8) {
            need = rt_cpu_q8_scratch_bytes(p, s, max_batch, cb->threads);
        } else if (s->op == RT_OP_CONV2D) {
            struct k_conv2d k = rt_step_conv2d(p, s, max_batch);
            need = kcpu_conv2d_scratch_bytes(&k, cb->threads);
        } else if (s->op == RT_OP_LINEAR) {
            struct k_linear k = rt_step_linear(p, s, max_batch);
            need = kcpu_linear_scratch_bytes(&k, cb->threads);
        } else if (s->op == RT_OP_CONV2D_DYN) {
            struct k_conv2d k = step_conv2d_dyn(p, s);
            need = conv2d_dyn_packed_bytes(&k) + kcpu_conv2d_scratch_bytes(&k, cb->threads);
        }
        if (need > scratch)
            scratch = need;
    }
    cs->pool = cb->threads > 1 ? kcpu_pool_create(cb->threads) : NULL;
    cs->arena = alloc_aligned(arena_bytes);
    cs->scratch = alloc_aligned(scratch);
    if ((cb->threads > 1 && !cs->pool) || !cs->arena || !cs->scratch) {
        cpu_session_free(cs);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory allocating a %zu-byte arena", arena_bytes);
    }
    *out = cs;
    return RT_OK;
}

static void *cpu_session_arena(void *ctx) { return ((struct cpu_session *)ctx)->arena; }

static enum rt_status cpu_copy(void *ctx, void *dst, const void *src, size_t bytes, struct rt_error *err)
{
    memcpy(dst, src, bytes);
    return RT_OK;
}

static enum rt_status cpu_sync(void *ctx, struct rt_error *err) { return RT_OK; }

static enum rt_status run_f32(void *ctx, const struct rt_plan *p, const struct rt_step *s, int batch,
                              const struct rt_step_io *io, struct rt_error *err)
{
    struct cpu_session *cs = ctx;
    const struct rt_graph *g = p->g;
    const float *x = io->in[0];
    float *y = io->out;
    const float *bias = s->node->w[RT_W_BIAS].data;
    int64_t count = g->tensors[s->out].sample_elems * batch;
    switch (s->op) {
    case RT_OP_CONV2D: {
        struct k_conv2d k = rt_step_conv2d(p, s, batch);
        kcpu_conv2d_f32(cs->pool, &k, x, s->prep, bias, io->residual, y, cs->scratch);
        return RT_OK;
    }
    case RT_OP_LINEAR: {
        struct k_linear k = rt_step_linear(p, s, batch);
        kcpu_linear_f32(cs->pool, &k, x, s->prep, bias, io->residual, y, cs->scratch);
        return RT_OK;
    }
    case RT_OP_BATCH_NORM: {
        const struct rt_shape *sh = &g->tensors[s->in[0]].shape;
        struct k_channel_affine k = {.n = batch, .c = (int)sh->dims[1],
                                     .inner = g->tensors[s->in[0]].sample_elems / sh->dims[1]};
        kcpu_channel_affine_f32(cs->pool, &k, x, s->node->w[RT_W_WEIGHT].data, bias, y);
        return RT_OK;
    }
    case RT_OP_RELU:
    case RT_OP_RELU6:
    case RT_OP_SIGMOID:
    case RT_OP_TANH:
    case RT_OP_GELU:
        kcpu_act_f32(cs->pool, s->act, count, x, y);
        return RT_OK;
    case RT_OP_MAX_POOL2D: {
        struct k_pool2d k = rt_step_pool2d(p, s, batch);
        kcpu_max_pool2d_f32(cs->pool, &k, x, y);
        return RT_OK;
    }
    case RT_OP_AVG_POOL2D: {
        struct k_pool2d k = rt_step_pool2d(p, s, batch);
        kcpu_avg_pool2d_f32(cs->pool, &k, x, y);
        return RT_OK;
    }
    case RT_OP_GLOBAL_AVG_POOL: {
        const struct rt_shape *sh = &g->tensors[s->in[0]].shape;
        kcpu_global_avg_pool_f32(cs->pool, batch, (int)sh->dims[1], sh->dims[2] * sh->dims[3], x, y);
        return RT_OK;
    }
    case RT_OP_ADD:
        kcpu_add_f32(cs->pool, count, x, io->in[1], y);
        return RT_OK;
    case RT_OP_BINARY: {
        struct k_binary k = rt_step_binary(p, s, batch);
        const float *c = s->node->w[RT_W_WEIGHT].data;
        const float *a = x, *b = s->n_in > 1 ? io->in[1] : c;
        if (s->n_in == 1 && s->node->a.binary.const_left) {
            b = x;
            a = c;
        }
        kcpu_binary_f32(cs->pool, &k, a, b, y);
        return RT_OK;
    }
    case RT_OP_MATMUL: {
        struct k_matmul k = step_matmul(p, s, batch);
        kcpu_matmul_f32(cs->pool, &k, x, io->in[1], y);
        return RT_OK;
    }
    case RT_OP_CONV2D_DYN:
        run_conv2d_dyn(cs, p, s, batch, io);
        return RT_OK;
    case RT_OP_BATCH_NORM_DYN: {
        struct k_batch_norm k = step_batch_norm_dyn(p, s, batch);
        kcpu_batch_norm_f32(cs->pool, &k, x, io->in[1], io->in[2], io->in[3], io->in[4], y);
        return RT_OK;
    }
    case RT_OP_SOFTMAX:
    case RT_OP_CONCAT: {
        const struct rt_shape *sh = &g->tensors[s->out].shape;
        int axis = s->node->a.axis < 0 ? s->node->a.axis + sh->rank : s->node->a.axis;
        int64_t outer = batch, inner = 1;
        for (int d = 1; d < axis; d++)
            outer *= sh->dims[d];
        for (int d = axis + 1; d < sh->rank; d++)
            inner *= sh->dims[d];
        if (s->op == RT_OP_SOFTMAX) {
            struct k_softmax k = {outer, sh->dims[axis], inner};
            kcpu_softmax_f32(cs->pool, &k, x, y);
        } else {
            int64_t lens[RT_NODE_MAX_INPUTS];
            for (int i = 0; i < s->n_in; i++)
                lens[i] = g->tensors[s->in[i]].shape.dims[axis];
            struct k_concat k = {outer, inner, s->n_in};
            kcpu_concat_f32(cs->pool, &k, (const float *const *)io->in, lens, y);
        }
        return RT_OK;
    }
    default:
        return rt_error_set(err, RT_ERR_INTERNAL, "CPU backend: op %s has no kernel", rt_op_name(s->op));
    }
}

/* FP16: the model inputs this step reads are rounded in place (repeated
 * rounding is a no-op, so any number of readers may do it). */
static void round_edge_inputs(struct kcpu_pool *pool, const struct rt_plan *p, const struct rt_step *s, int batch,
                              const struct rt_step_io *io)
{
    const struct rt_graph *g = p->g;
    for (int k = 0; k <= s->n_in; k++) {
        int t = k < s->n_in ? s->in[k] : s->residual;
        float *x = (float *)(k < s->n_in ? io->in[k] : io->residual);
        if (t >= 0 && g->tensors[p->root[t]].input_index >= 0)
            kcpu_round_f16(pool, g->tensors[t].sample_elems * batch, x, x);
    }
}

static enum rt_status cpu_run_step(void *ctx, const struct rt_plan *p, const struct rt_step *s, int batch,
                                   const struct rt_step_io *io, struct rt_error *err)
{
    struct cpu_session *cs = ctx;
    if (s->q8)
        return rt_cpu_q8_run(cs->pool, cs->scratch, p, s, batch, io, err);
    bool fp16 = p->cfg && p->cfg->precision == RT_PRECISION_FP16;
    if (fp16)
        round_edge_inputs(cs->pool, p, s, batch, io);
    enum rt_status st = run_f32(ctx, p, s, batch, io, err);
    if (st == RT_OK && fp16)
        kcpu_round_f16(cs->pool, p->g->tensors[s->out].sample_elems * batch, io->out, io->out);
    return st;
}

/* Samples per pass such that the busiest step's activations (inputs,
 * residual, output) stay within about half of a 2 MiB L2: running a batch
 * of 64 as passes of a few samples is faster than one pass whose tensors
 * spill to L3 and memory. The cpu_batch_chunk option overrides it (tuning). */
static int cpu_batch_chunk(struct rt_backend *b, const struct rt_plan *p)
{
    const struct cpu_backend *cb = b->ctx;
    if (cb->batch_chunk > 0)
        return cb->batch_chunk;
    const struct rt_graph *g = p->g;
    int64_t most = 1;   /* bytes: INT8 tensors take a quarter of FP32's */
    for (int i = 0; i < p->n_steps; i++) {
        const struct rt_step *s = &p->steps[i];
        int64_t bytes = g->tensors[s->out].sample_elems * (int64_t)rt_dtype_size(g->tensors[s->out].dtype);
        for (int k = 0; k < s->n_in; k++)
            bytes += g->tensors[s->in[k]].sample_elems * (int64_t)rt_dtype_size(g->tensors[s->in[k]].dtype);
        if (s->residual >= 0)
            bytes += g->tensors[s->residual].sample_elems * (int64_t)rt_dtype_size(g->tensors[s->residual].dtype);
        if (bytes > most)
            most = bytes;
    }
    int64_t chunk = (1 << 20) / most;
    return chunk < 1 ? 1 : chunk > RT_MAX_BATCH ? RT_MAX_BATCH : (int)chunk;
}

static const struct rt_backend_iface CPU_IFACE = {
    .batch_chunk = cpu_batch_chunk,
    .name = "cpu",
    .device_kind = RT_DEVICE_CPU,
    .free = cpu_free,
    .supports_step = cpu_supports_step,
    .prepare_step = cpu_prepare_step,
    .release_step = cpu_release_step,
    .session_create = cpu_session_create,
    .session_free = cpu_session_free,
    .session_arena = cpu_session_arena,
    .copy_in = cpu_copy,
    .copy_out = cpu_copy,
    .run_step = cpu_run_step,
    .sync = cpu_sync,
};

/* The cpu_isa option (already a known name) becomes the kernels' choice;
 * that choice is process-wide (kcpu_isa.c), so it outlives this backend. */
static enum rt_status apply_isa(const char *name, struct rt_error *err)
{
    enum kcpu_isa isa;
    if (!name || !*name)
        return RT_OK;
    bool known = kcpu_isa_from_name(name, &isa);
    RT_ASSERT(known);   /* rt_backend_create checked the name */
    if (kcpu_isa_set(isa) != 0)
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "this CPU lacks the %s instruction set (the best it has is %s)",
                            kcpu_isa_name(isa), kcpu_isa_name(kcpu_isa_hardware()));
    return RT_OK;
}

enum rt_status rt_backend_cpu_create(const struct rt_backend_options *opt, struct rt_backend **out,
                                     struct rt_error *err)
{
    enum rt_status s = apply_isa(opt->cpu_isa, err);
    if (s != RT_OK)
        return s;
    struct rt_backend *b = calloc(1, sizeof(*b));
    struct cpu_backend *cb = calloc(1, sizeof(*cb));
    if (!b || !cb) {
        free(b);
        free(cb);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    cb->threads = opt->threads > 0 ? opt->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cb->threads < 1)
        cb->threads = 1;
    if (cb->threads > 256)
        cb->threads = 256;
    cb->batch_chunk = opt->cpu_batch_chunk;
    b->iface = &CPU_IFACE;
    b->ctx = cb;
    char chunk[40] = "";
    if (cb->batch_chunk > 0)
        snprintf(chunk, sizeof(chunk), ", %d samples per pass", cb->batch_chunk);
    snprintf(b->description, sizeof(b->description), "cpu (%s, %d threads per instance%s)",
             kcpu_isa_name(kcpu_isa()), cb->threads, chunk);
    *out = b;
    return RT_OK;
}
