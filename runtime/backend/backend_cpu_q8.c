/*
 * backend_cpu_q8.c - INT8 steps on the CPU backend: the load-time numbers
 * of rt_q8_step_prepare plus packed weights, and one kernel per op from
 * kernels/cpu/kcpu_q8.h. Where the channels-last convolution serves the
 * CPU, INT8 tensors between convolutions are NHWC (the layout pass of
 * runtime/backend/layout_nhwc.h, run at load); each step keeps whether its
 * x and y are.
 */
#include <stdlib.h>

#include "kernels/cpu/kcpu_q8.h"
#include "runtime/backend/backend_cpu_impl.h"
#include "runtime/backend/layout_nhwc.h"
#include "runtime/precision/quant.h"

struct q8_prep {
    struct rt_q8_step q;
    void *packed;              /* conv2d, linear */
    bool x_nhwc, y_nhwc;       /* the step's first input and its output are channels last */
};

typedef void (*q8_run_fn)(struct kcpu_threads *threads, void *scratch, const struct rt_step *s,
                          const union rt_step_params *k, const struct rt_step_io *io);
/* Packs the step's I8 weights (k at the model's max batch); NULL when out of memory. */
typedef void *(*q8_pack_fn)(const struct rt_step *s, const union rt_step_params *k);
typedef size_t (*q8_scratch_fn)(const struct rt_step *s, const union rt_step_params *k, int threads);

struct q8_op {
    q8_run_fn run;
    q8_pack_fn pack;
    q8_scratch_fn scratch;
};

static const struct rt_q8_step *q8_of(const struct rt_step *s) { return &((const struct q8_prep *)s->prep)->q; }
static const void *packed_of(const struct rt_step *s) { return ((const struct q8_prep *)s->prep)->packed; }
static bool x_nhwc(const struct rt_step *s) { return ((const struct q8_prep *)s->prep)->x_nhwc; }
static bool y_nhwc(const struct rt_step *s) { return ((const struct q8_prep *)s->prep)->y_nhwc; }

static void conv2d_run(struct kcpu_threads *threads, void *scratch, const struct rt_step *s, const union rt_step_params *k,
                       const struct rt_step_io *io)
{
    if (y_nhwc(s))
        kcpu_conv2d_q8_nhwc(threads, &k->conv, io->in[0], !x_nhwc(s), packed_of(s), &q8_of(s)->epi, io->residual,
                            io->out, scratch);
    else
        kcpu_conv2d_q8(threads, &k->conv, io->in[0], packed_of(s), &q8_of(s)->epi, io->residual, io->out, scratch);
}

static void *conv2d_pack(const struct rt_step *s, const union rt_step_params *k)
{
    const bool nhwc = y_nhwc(s);
    size_t bytes = nhwc ? kcpu_conv2d_q8_nhwc_packed_bytes(&k->conv) : kcpu_conv2d_q8_packed_bytes(&k->conv);
    void *packed = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (packed && nhwc)
        kcpu_conv2d_q8_nhwc_pack(&k->conv, s->node->w[RT_W_WEIGHT].q, packed);
    else if (packed)
        kcpu_conv2d_q8_pack(&k->conv, s->node->w[RT_W_WEIGHT].q, packed);
    return packed;
}

static size_t conv2d_scratch(const struct rt_step *s, const union rt_step_params *k, int threads)
{
    return y_nhwc(s) ? kcpu_conv2d_q8_nhwc_scratch_bytes(&k->conv, threads)
                     : kcpu_conv2d_q8_scratch_bytes(&k->conv, threads);
}

static void linear_run(struct kcpu_threads *threads, void *scratch, const struct rt_step *s, const union rt_step_params *k,
                       const struct rt_step_io *io)
{
    kcpu_linear_q8(threads, &k->linear, io->in[0], packed_of(s), &q8_of(s)->epi, io->residual, io->out, scratch);
}

static void *linear_pack(const struct rt_step *s, const union rt_step_params *k)
{
    void *packed = aligned_alloc(64, (kcpu_linear_q8_packed_bytes(&k->linear) + 63) / 64 * 64);
    if (packed)
        kcpu_linear_q8_pack(&k->linear, s->node->w[RT_W_WEIGHT].q, packed);
    return packed;
}

static size_t linear_scratch(const struct rt_step *s, const union rt_step_params *k, int threads)
{
    (void)s;
    return kcpu_linear_q8_scratch_bytes(&k->linear, threads);
}

static void quantize_run(struct kcpu_threads *threads, void *scratch, const struct rt_step *s,
                         const union rt_step_params *k, const struct rt_step_io *io)
{
    kcpu_quantize_q8(threads, k->count, io->in[0], q8_of(s)->scale, io->out);
}

/* I8 input: one scale; I32 accumulators: one scale per channel. */
static void dequantize_run(struct kcpu_threads *threads, void *scratch, const struct rt_step *s,
                           const union rt_step_params *k, const struct rt_step_io *io)
{
    const struct rt_channels *ch = &k->channels;
    if (!q8_of(s)->chan_scale)
        kcpu_dequantize_q8(threads, ch->n * ch->c * ch->inner, io->in[0], q8_of(s)->scale, io->out);
    else
        kcpu_dequantize_i32(threads, (int)ch->n, (int)ch->c, ch->inner, io->in[0], q8_of(s)->chan_scale, io->out);
}

static void act_run(struct kcpu_threads *threads, void *scratch, const struct rt_step *s, const union rt_step_params *k,
                    const struct rt_step_io *io)
{
    kcpu_lut_q8(threads, k->count, q8_of(s)->lut, io->in[0], io->out);
}

static void max_pool2d_run(struct kcpu_threads *threads, void *scratch, const struct rt_step *s,
                           const union rt_step_params *k, const struct rt_step_io *io)
{
    if (x_nhwc(s))
        kcpu_max_pool2d_q8_nhwc(threads, &k->pool, io->in[0], io->out);
    else
        kcpu_max_pool2d_q8(threads, &k->pool, io->in[0], io->out);
}

static void avg_pool2d_run(struct kcpu_threads *threads, void *scratch, const struct rt_step *s,
                           const union rt_step_params *k, const struct rt_step_io *io)
{
    kcpu_avg_pool2d_q8(threads, &k->pool, q8_of(s)->mult, io->in[0], io->out);
}

static void global_avg_pool_run(struct kcpu_threads *threads, void *scratch, const struct rt_step *s,
                                const union rt_step_params *k, const struct rt_step_io *io)
{
    if (x_nhwc(s))
        kcpu_global_avg_pool_q8_nhwc(threads, (int)k->channels.n, (int)k->channels.c, k->channels.inner,
                                     q8_of(s)->mult[0], io->in[0], io->out);
    else
        kcpu_global_avg_pool_q8(threads, (int)k->channels.n, (int)k->channels.c, k->channels.inner,
                                q8_of(s)->mult[0], io->in[0], io->out);
}

static void add_run(struct kcpu_threads *threads, void *scratch, const struct rt_step *s, const union rt_step_params *k,
                    const struct rt_step_io *io)
{
    const struct k_q8_mult *m = q8_of(s)->mult;
    kcpu_add_q8(threads, k->count, io->in[0], m[0], io->in[1], m[1], io->out);
}

static void concat_run(struct kcpu_threads *threads, void *scratch, const struct rt_step *s, const union rt_step_params *k,
                       const struct rt_step_io *io)
{
    kcpu_concat_q8(threads, &k->concat.k, (const int8_t *const *)io->in, k->concat.lens, q8_of(s)->mult, io->out);
}

/* Activations all run act_run (a table per step). */
static const struct q8_op Q8[RT_OP_COUNT] = {
    [RT_OP_CONV2D] = {conv2d_run, conv2d_pack, conv2d_scratch},
    [RT_OP_LINEAR] = {linear_run, linear_pack, linear_scratch},
    [RT_OP_QUANTIZE] = {quantize_run, NULL, NULL},
    [RT_OP_DEQUANTIZE] = {dequantize_run, NULL, NULL},
    [RT_OP_MAX_POOL2D] = {max_pool2d_run, NULL, NULL},
    [RT_OP_AVG_POOL2D] = {avg_pool2d_run, NULL, NULL},
    [RT_OP_GLOBAL_AVG_POOL] = {global_avg_pool_run, NULL, NULL},
    [RT_OP_ADD] = {add_run, NULL, NULL},
    [RT_OP_CONCAT] = {concat_run, NULL, NULL},
};

static const struct q8_op ACT = {act_run, NULL, NULL};

static const struct q8_op *q8_op(enum rt_op op) { return rt_op_has(op, RT_T_ACT) ? &ACT : &Q8[op]; }

bool rt_cpu_q8_supports(enum rt_op op) { return q8_op(op)->run != NULL; }

const char *rt_cpu_q8_layouts(const struct rt_step *s)
{
    const struct q8_prep *pr = s->prep;
    if (!pr || (!pr->x_nhwc && !pr->y_nhwc))
        return "";
    return pr->x_nhwc && pr->y_nhwc ? ", nhwc" : pr->x_nhwc ? ", x nhwc" : ", y nhwc";
}

static bool conv_takes_nhwc(const struct k_conv2d *p, void *user)
{
    (void)user;
    return kcpu_conv2d_q8_nhwc_takes(p);
}

/* Step s's layouts from the whole plan's pass (each INT8 step's prepare
 * runs it again: once per load, a few sweeps over the plan). */
static enum rt_status step_layouts(const struct rt_plan *p, const struct rt_step *s, struct q8_prep *pr,
                                   struct rt_error *err)
{
    bool *nhwc = malloc((size_t)p->g->n_tensors * sizeof(bool));
    if (!nhwc)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    rt_nhwc_plan(p, RT_NHWC_Q8_STEPS, conv_takes_nhwc, NULL, nhwc);
    pr->x_nhwc = s->n_in > 0 && nhwc[s->in[0]];
    pr->y_nhwc = nhwc[s->out];
    free(nhwc);
    return RT_OK;
}

enum rt_status rt_cpu_q8_prepare(const struct rt_plan *p, struct rt_step *s, int max_batch,
                                 struct rt_error *err)
{
    struct q8_prep *pr = calloc(1, sizeof(*pr));
    if (!pr)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    enum rt_status st = rt_q8_step_prepare(p, s, &pr->q, err);
    if (st != RT_OK) {
        free(pr);
        return st;
    }
    if ((st = step_layouts(p, s, pr, err)) != RT_OK) {
        rt_q8_step_free(&pr->q);
        free(pr);
        return st;
    }
    s->prep = pr;
    q8_pack_fn pack = q8_op(s->op)->pack;
    if (!pack)
        return RT_OK;
    union rt_step_params k = rt_step_params(s, max_batch);
    if (!(pr->packed = pack(s, &k)))
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory packing weights of '%s'", s->node->name);
    return RT_OK;
}

void rt_cpu_q8_release(struct rt_step *s)
{
    struct q8_prep *pr = s->prep;
    if (!pr)
        return;
    rt_q8_step_free(&pr->q);
    free(pr->packed);
    free(pr);
    s->prep = NULL;
}

size_t rt_cpu_q8_scratch_bytes(const struct rt_step *s, const union rt_step_params *k, int threads)
{
    q8_scratch_fn need = q8_op(s->op)->scratch;
    return need ? need(s, k, threads) : 0;
}

void rt_cpu_q8_run(struct kcpu_threads *threads, void *scratch, const struct rt_step *s, int batch,
                   const struct rt_step_io *io)
{
    union rt_step_params k = rt_step_params(s, batch);
    q8_op(s->op)->run(threads, scratch, s, &k, io);
}
