/*
 * backend_cpu.c - the CPU backend: FP32 kernels from kernels/cpu, one set of
 * worker threads, arena and scratch buffer per session, weights packed once per model.
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

#include "kernels/cpu/kcpu.h"
#include "kernels/cpu/kcpu_q8.h"
#include "runtime/backend/backend_cpu_impl.h"

struct cpu_backend {
    int threads;
    int batch_chunk;   /* rt_backend_options.cpu_batch_chunk; 0: sized to L2 */
};

struct cpu_session {
    struct kcpu_threads *threads;
    void *arena;
    void *scratch;
};

static void cpu_free(struct rt_backend *b)
{
    free(b->ctx);
    free(b);
}

/* ---- FP32 kernels, one per op: the step, its parameters at this batch and
 * its tensors. */

typedef void (*cpu_run_fn)(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                           const struct rt_step_io *io);
/* Packs a step's constant weights at load (k at the model's max batch). */
typedef void *(*cpu_pack_fn)(const struct rt_step *s, const union rt_step_params *k);
/* Scratch bytes a step needs at the model's max batch. */
typedef size_t (*cpu_scratch_fn)(const union rt_step_params *k, int threads);

struct cpu_op {
    cpu_run_fn run;
    cpu_pack_fn pack;          /* NULL: nothing to pack */
    cpu_scratch_fn scratch;    /* NULL: no scratch */
};

static void *alloc_aligned(size_t bytes)
{
    size_t rounded = (bytes + 63) & ~(size_t)63;
    return aligned_alloc(64, rounded ? rounded : 64);
}

static const float *bias_of(const struct rt_step *s) { return s->node->w[RT_W_BIAS].data; }

/* A chain (a 1x1 and the depthwise after it, core/plan.h) runs as one
 * kernel; k->chain.dw has n 0 without one. */
static void conv2d_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    if (s->chain)
        kcpu_expand_dw_f32(cs->threads, &k->chain.conv, &k->chain.dw, io->in[0], s->prep, bias_of(s),
                           s->chain->w[RT_W_WEIGHT].data, s->chain->w[RT_W_BIAS].data, io->out,
                           cs->scratch);
    else
        kcpu_conv2d_f32(cs->threads, &k->conv, io->in[0], s->prep, bias_of(s), io->residual, io->out, cs->scratch);
}

static void *conv2d_pack(const struct rt_step *s, const union rt_step_params *k)
{
    const float *w = s->node->w[RT_W_WEIGHT].data;
    if (s->chain) {
        float *packed = alloc_aligned(kcpu_expand_dw_packed_floats(&k->conv) * sizeof(float));
        if (packed)
            kcpu_expand_dw_pack(&k->conv, w, packed);
        return packed;
    }
    float *packed = alloc_aligned(kcpu_conv2d_packed_floats(&k->conv) * sizeof(float));
    if (packed)
        kcpu_conv2d_pack(&k->conv, w, packed);
    return packed;
}

static size_t conv2d_scratch(const union rt_step_params *k, int threads)
{
    if (k->chain.dw.n > 0)
        return kcpu_expand_dw_scratch_bytes(&k->chain.conv, threads);
    return kcpu_conv2d_scratch_bytes(&k->conv, threads);
}

static void linear_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    kcpu_linear_f32(cs->threads, &k->linear, io->in[0], s->prep, bias_of(s), io->residual, io->out, cs->scratch);
}

static void *linear_pack(const struct rt_step *s, const union rt_step_params *k)
{
    float *packed = alloc_aligned(kcpu_linear_packed_floats(&k->linear) * sizeof(float));
    if (packed)
        kcpu_linear_pack(&k->linear, s->node->w[RT_W_WEIGHT].data, packed);
    return packed;
}

static size_t linear_scratch(const union rt_step_params *k, int threads)
{
    return kcpu_linear_scratch_bytes(&k->linear, threads);
}

static void batch_norm_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k,
                           int batch, const struct rt_step_io *io)
{
    kcpu_channel_affine_f32(cs->threads, &k->affine, io->in[0], s->node->w[RT_W_WEIGHT].data, bias_of(s), io->out);
}

static void act_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                    const struct rt_step_io *io)
{
    kcpu_act_f32(cs->threads, s->act, k->count, io->in[0], io->out);
}

static void max_pool2d_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k,
                           int batch, const struct rt_step_io *io)
{
    kcpu_max_pool2d_f32(cs->threads, &k->pool, io->in[0], io->out);
}

static void avg_pool2d_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k,
                           int batch, const struct rt_step_io *io)
{
    kcpu_avg_pool2d_f32(cs->threads, &k->pool, io->in[0], io->out);
}

static void global_avg_pool_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k,
                                int batch, const struct rt_step_io *io)
{
    kcpu_global_avg_pool_f32(cs->threads, (int)k->channels.n, (int)k->channels.c, k->channels.inner, io->in[0],
                             io->out);
}

static void add_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                    const struct rt_step_io *io)
{
    kcpu_add_f32(cs->threads, k->count, io->in[0], io->in[1], io->out);
}

static void binary_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    const void *a, *b;
    rt_step_binary_operands(s, io, &a, &b);
    kcpu_binary_f32(cs->threads, &k->binary, a, b, io->out);
}

static void unary_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                      const struct rt_step_io *io)
{
    kcpu_unary_f32(cs->threads, &k->unary, io->in[0], io->out);
}

static void transpose_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k,
                          int batch, const struct rt_step_io *io)
{
    kcpu_transpose_f32(cs->threads, &k->transpose, io->in[0], io->out);
}

static void reduce_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    kcpu_reduce_f32(cs->threads, &k->reduce, io->in[0], io->out);
}

static void slice_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                      const struct rt_step_io *io)
{
    kcpu_slice_f32(cs->threads, &k->slice, io->in[0], io->out);
}

static void pad_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                    const struct rt_step_io *io)
{
    kcpu_pad_f32(cs->threads, &k->pad, io->in[0], io->out);
}

static void conv_transpose2d_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k,
                                 int batch, const struct rt_step_io *io)
{
    kcpu_conv_transpose2d_f32(cs->threads, &k->conv, io->in[0], s->node->w[RT_W_WEIGHT].data, bias_of(s), io->out);
}

static void layer_norm_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                           const struct rt_step_io *io)
{
    kcpu_layer_norm_f32(cs->threads, &k->layer_norm, io->in[0], s->node->w[RT_W_WEIGHT].data, bias_of(s), io->out);
}

static void resize_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    kcpu_resize_f32(cs->threads, &k->resize, io->in[0], io->out, cs->scratch);
}

static size_t resize_scratch(const union rt_step_params *k, int threads)
{
    return kcpu_resize_scratch_bytes(&k->resize, threads);
}

static void matmul_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    kcpu_matmul_f32(cs->threads, &k->matmul, io->in[0], io->in[1], io->out, cs->scratch);
}

static size_t matmul_scratch(const union rt_step_params *k, int threads)
{
    return kcpu_matmul_scratch_bytes(&k->matmul, threads);
}

/* Scratch: one sample's weights packed, then the kernel's own scratch. */
static size_t conv2d_dyn_packed_bytes(const struct k_conv2d *k)
{
    return (kcpu_conv2d_packed_floats(k) * sizeof(float) + 63) & ~(size_t)63;
}

static size_t conv2d_dyn_scratch(const union rt_step_params *k, int threads)
{
    return conv2d_dyn_packed_bytes(&k->conv_dyn.conv) + kcpu_conv2d_scratch_bytes(&k->conv_dyn.conv, threads);
}

/* Each sample packs its own weights, then convolves its images. */
static void conv2d_dyn_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k,
                           int batch, const struct rt_step_io *io)
{
    const struct rt_conv_dyn_params *d = &k->conv_dyn;
    float *packed = cs->scratch;
    void *rest = (char *)cs->scratch + conv2d_dyn_packed_bytes(&d->conv);
    const float *x = io->in[0], *w = io->in[1], *b = s->n_in > 2 ? io->in[2] : NULL;
    float *y = io->out;
    for (int i = 0; i < batch; i++) {
        kcpu_conv2d_pack(&d->conv, w + i * d->w_elems, packed);
        kcpu_conv2d_f32(cs->threads, &d->conv, x + i * d->x_elems, packed, b ? b + i * d->b_elems : NULL, NULL,
                        y + i * d->y_elems, rest);
    }
}

static void batch_norm_dyn_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k,
                               int batch, const struct rt_step_io *io)
{
    kcpu_batch_norm_f32(cs->threads, &k->bn, io->in[0], io->in[1], io->in[2], io->in[3], io->in[4], io->out);
}

static void softmax_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                        const struct rt_step_io *io)
{
    kcpu_softmax_f32(cs->threads, &k->softmax, io->in[0], io->out);
}

static void concat_run(struct cpu_session *cs, const struct rt_step *s, const union rt_step_params *k, int batch,
                       const struct rt_step_io *io)
{
    kcpu_concat_f32(cs->threads, &k->concat.k, (const float *const *)io->in, k->concat.lens, io->out);
}

/* Activations all run act_run (the step's act says which); views are no
 * steps; quantize and dequantize are INT8 steps (backend_cpu_q8.c). */
static const struct cpu_op F32[RT_OP_COUNT] = {
    [RT_OP_CONV2D] = {conv2d_run, conv2d_pack, conv2d_scratch},
    [RT_OP_LINEAR] = {linear_run, linear_pack, linear_scratch},
    [RT_OP_BATCH_NORM] = {batch_norm_run, NULL, NULL},
    [RT_OP_MAX_POOL2D] = {max_pool2d_run, NULL, NULL},
    [RT_OP_AVG_POOL2D] = {avg_pool2d_run, NULL, NULL},
    [RT_OP_GLOBAL_AVG_POOL] = {global_avg_pool_run, NULL, NULL},
    [RT_OP_ADD] = {add_run, NULL, NULL},
    [RT_OP_CONCAT] = {concat_run, NULL, NULL},
    [RT_OP_SOFTMAX] = {softmax_run, NULL, NULL},
    [RT_OP_LOG_SOFTMAX] = {softmax_run, NULL, NULL},
    [RT_OP_BINARY] = {binary_run, NULL, NULL},
    [RT_OP_UNARY] = {unary_run, NULL, NULL},
    [RT_OP_TRANSPOSE] = {transpose_run, NULL, NULL},
    [RT_OP_REDUCE] = {reduce_run, NULL, NULL},
    [RT_OP_SLICE] = {slice_run, NULL, NULL},
    [RT_OP_PAD] = {pad_run, NULL, NULL},
    [RT_OP_RESIZE] = {resize_run, NULL, resize_scratch},
    [RT_OP_LAYER_NORM] = {layer_norm_run, NULL, NULL},
    [RT_OP_CONV_TRANSPOSE2D] = {conv_transpose2d_run, NULL, NULL},
    [RT_OP_MATMUL] = {matmul_run, NULL, matmul_scratch},
    [RT_OP_CONV2D_DYN] = {conv2d_dyn_run, NULL, conv2d_dyn_scratch},
    [RT_OP_BATCH_NORM_DYN] = {batch_norm_dyn_run, NULL, NULL},
};

static const struct cpu_op ACT = {act_run, NULL, NULL};

static const struct cpu_op *f32_op(enum rt_op op) { return rt_op_has(op, RT_T_ACT) ? &ACT : &F32[op]; }

static bool cpu_supports_step(struct rt_backend *b, const struct rt_plan *p, const struct rt_step *s,
                              enum rt_precision prec, char *why, size_t why_len)
{
    if (s->q8 ? rt_cpu_q8_supports(s->op) : f32_op(s->op)->run != NULL)
        return true;
    snprintf(why, why_len, "no CPU %s kernel", s->q8 ? "INT8" : "FP32");
    return false;
}

static enum rt_status cpu_prepare_step(struct rt_backend *b, const struct rt_plan *p, struct rt_step *s,
                                       int max_batch, struct rt_error *err)
{
    if (s->q8)
        return rt_cpu_q8_prepare(p, s, max_batch, err);
    cpu_pack_fn pack = f32_op(s->op)->pack;
    if (!pack)
        return RT_OK;
    union rt_step_params k = rt_step_params(s, max_batch);
    if (!(s->prep = pack(s, &k)))
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory packing weights of '%s'", s->node->name);
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
    kcpu_threads_free(cs->threads);
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
        union rt_step_params k = rt_step_params(s, max_batch);
        cpu_scratch_fn need = s->q8 ? NULL : f32_op(s->op)->scratch;
        size_t bytes = s->q8 ? rt_cpu_q8_scratch_bytes(s, &k, cb->threads) : need ? need(&k, cb->threads) : 0;
        if (bytes > scratch)
            scratch = bytes;
    }
    cs->threads = cb->threads > 1 ? kcpu_threads_create(cb->threads) : NULL;
    cs->arena = alloc_aligned(arena_bytes);
    cs->scratch = alloc_aligned(scratch);
    if ((cb->threads > 1 && !cs->threads) || !cs->arena || !cs->scratch) {
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

/* FP16: the model inputs this step reads are rounded in place (repeated
 * rounding is a no-op, so any number of readers may do it). */
static void round_edge_inputs(struct kcpu_threads *threads, const struct rt_plan *p, const struct rt_step *s, int batch,
                              const struct rt_step_io *io)
{
    const struct rt_graph *g = p->g;
    for (int k = 0; k <= s->n_in; k++) {
        int t = k < s->n_in ? s->in[k] : s->residual;
        float *x = (float *)(k < s->n_in ? io->in[k] : io->residual);
        if (t >= 0 && g->tensors[p->root[t]].input_index >= 0)
            kcpu_round_f16(threads, g->tensors[t].sample_elems * batch, x, x);
    }
}

static enum rt_status cpu_run_step(void *ctx, const struct rt_plan *p, const struct rt_step *s, int batch,
                                   const struct rt_step_io *io, struct rt_error *err)
{
    struct cpu_session *cs = ctx;
    if (s->q8) {
        rt_cpu_q8_run(cs->threads, cs->scratch, s, batch, io);
        return RT_OK;
    }
    bool fp16 = p->cfg && p->cfg->precision == RT_PRECISION_FP16;
    if (fp16)
        round_edge_inputs(cs->threads, p, s, batch, io);
    union rt_step_params k = rt_step_params(s, batch);
    f32_op(s->op)->run(cs, s, &k, batch, io);
    if (fp16)
        kcpu_round_f16(cs->threads, p->g->tensors[s->out].sample_elems * batch, io->out, io->out);
    return RT_OK;
}

/* Samples per pass such that the busiest step's activations (inputs,
 * residual, output) stay within about half of a 2 MiB L2: running a batch
 * of 64 as passes of a few samples is faster than one pass whose tensors
 * spill to L3 and memory. But every pass streams all the weights again:
 * a model with more than WEIGHTS_L2 bytes of them runs at least
 * WEIGHTS_PASS samples a pass. Measured at batch 16 on an Intel Xeon with
 * 2 MiB of L2 a core (docs/performance.md, 2026-12-01): passes of 1 (the
 * L2 rule alone) against 8, µs an image, ResNet-50 44,033 -> 36,379, INT8
 * 6,110 -> 4,765, MobileNetV2 4,823 -> 4,329, INT8 1,902 -> 1,454; 8 was
 * the best or within 1 % of it for all four. The cpu_batch_chunk option
 * overrides it (tuning). */
#define WEIGHTS_L2 ((int64_t)1 << 20)
#define WEIGHTS_PASS 8
static int cpu_batch_chunk(struct rt_backend *b, const struct rt_plan *p)
{
    const struct cpu_backend *cb = b->ctx;
    if (cb->batch_chunk > 0)
        return cb->batch_chunk;
    const struct rt_graph *g = p->g;
    int64_t most = 1;   /* bytes: INT8 tensors take a quarter of FP32's */
    double weights = 0;
    for (int i = 0; i < p->n_steps; i++) {
        const struct rt_step *s = &p->steps[i];
        weights += rt_step_weight_bytes(p, s);
        int64_t bytes = g->tensors[s->out].sample_elems * (int64_t)rt_dtype_size(g->tensors[s->out].dtype);
        for (int k = 0; k < s->n_in; k++)
            bytes += g->tensors[s->in[k]].sample_elems * (int64_t)rt_dtype_size(g->tensors[s->in[k]].dtype);
        if (s->residual >= 0)
            bytes += g->tensors[s->residual].sample_elems * (int64_t)rt_dtype_size(g->tensors[s->residual].dtype);
        if (bytes > most)
            most = bytes;
    }
    int64_t chunk = (1 << 20) / most;
    if (weights > (double)WEIGHTS_L2 && chunk < WEIGHTS_PASS)
        chunk = WEIGHTS_PASS;
    return chunk < 1 ? 1 : chunk > RT_MAX_BATCH ? RT_MAX_BATCH : (int)chunk;
}

static enum rt_status cpu_measure_rates(struct rt_backend *b, enum rt_precision prec, struct rt_backend_rates *out,
                                        struct rt_error *err)
{
    return rt_cpu_measure_rates(((const struct cpu_backend *)b->ctx)->threads, out, err);
}

static const struct rt_backend_iface CPU_IFACE = {
    .batch_chunk = cpu_batch_chunk,
    .chains = kcpu_expand_dw_applies,
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
    .profile_mark = rt_backend_host_mark,
    .describe_step = rt_cpu_describe_step,
    .measure_rates = cpu_measure_rates,
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
