/*
 * backend.h - the backend interface (internal).
 *
 * A backend is a table of functions plus a context pointer, ggml-style. The
 * executor (rt_model.c) walks the plan and calls these; it never asks which
 * backend it holds. A backend refuses a step it cannot run at plan time
 * (supports_step), never at run time.
 *
 * Lifetimes: prepare_step/release_step bracket a model (prepared data is
 * shared read-only by the model's sessions); session_create/session_free
 * bracket one worker instance, which owns the arena and any scratch,
 * threads or streams.
 */
#ifndef RT_BACKEND_H
#define RT_BACKEND_H

#include "runtime/core/plan.h"
#include "runtime/rt_model.h"   /* the public backend handle and options it implements */

/* Pointers a step reads and writes, resolved in the session's arena. */
struct rt_step_io {
    const void *in[RT_NODE_MAX_INPUTS];
    const void *residual;         /* NULL when none */
    void *out;
};

/* binary's operands: a is input 0, or the node's constant when const_left;
 * b is input 1, the constant, or input 0 when const_left (rt_step_params
 * already swapped the strides to match). */
static inline void rt_step_binary_operands(const struct rt_step *s, const struct rt_step_io *io, const void **a,
                                           const void **b)
{
    const void *c = s->node->w[RT_W_WEIGHT].data;
    bool left = s->n_in == 1 && s->node->a.binary.const_left;
    *a = left ? c : io->in[0];
    *b = left ? io->in[0] : s->n_in > 1 ? io->in[1] : c;
}

struct rt_backend_iface {
    const char *name;
    enum rt_device_kind device_kind;
    void (*free)(struct rt_backend *b);

    /* Whether step s can run at precision prec; else writes why. */
    bool (*supports_step)(struct rt_backend *b, const struct rt_plan *p, const struct rt_step *s,
                          enum rt_precision prec, char *why, size_t why_len);
    /* Per-model weight preparation (packing, conversion, upload) into s->prep. */
    enum rt_status (*prepare_step)(struct rt_backend *b, const struct rt_plan *p, struct rt_step *s,
                                   int max_batch, struct rt_error *err);
    void (*release_step)(struct rt_backend *b, struct rt_step *s);

    /* A session owns an arena of arena_bytes and whatever scratch the plan needs. */
    enum rt_status (*session_create)(struct rt_backend *b, const struct rt_plan *p, int max_batch,
                                     size_t arena_bytes, void **ctx, struct rt_error *err);
    void (*session_free)(void *ctx);
    /* Base address of the session's arena (device memory on a GPU backend). */
    void *(*session_arena)(void *ctx);

    /* Host <-> arena copies (may be asynchronous until sync). */
    enum rt_status (*copy_in)(void *ctx, void *dst, const void *src, size_t bytes, struct rt_error *err);
    enum rt_status (*copy_out)(void *ctx, void *dst, const void *src, size_t bytes, struct rt_error *err);
    enum rt_status (*run_step)(void *ctx, const struct rt_plan *p, const struct rt_step *s, int batch,
                               const struct rt_step_io *io, struct rt_error *err);
    /* Waits for all queued work; copy_out data is valid afterwards. */
    enum rt_status (*sync)(void *ctx, struct rt_error *err);

    /* Optional (NULL: none): the conv2d chains the backend runs, a 1x1
     * and the depthwise 3x3 after it as one step (core/plan.h). Asked
     * only of FP32 and INT8 models: FP16 rounds every step's output. */
    rt_chain_rule chains;

    /* Optional: the largest batch one pass should run; the executor splits
     * bigger batches into passes of this size. NULL: the whole batch at once.
     * (The CPU keeps each pass's activations in cache this way.) */
    int (*batch_chunk)(struct rt_backend *b, const struct rt_plan *p);

    /* Optional (NULL: no devices, as on the CPU): the accelerators the
     * backend runs on, and memory and utilisation of device i. */
    int (*device_count)(const struct rt_backend *b);
    bool (*device_info)(const struct rt_backend *b, int i, struct rt_device_info *out);

    /* Optional: step timing for rt_session_profile (profile_mark NULL: the
     * backend cannot time steps). profile_set(ctx, n_steps) readies timing
     * for a plan of n_steps, 0 releasing it (NULL: nothing to ready). The
     * executor brackets each step's run_step with profile_mark(ctx, step,
     * false, slot) and profile_mark(ctx, step, true, slot); after sync,
     * profile_read(ctx, times, n_steps) fills times[step].begin_ns and
     * dur_ns of every step of the pass (NULL: the marks filled the slots). */
    enum rt_status (*profile_set)(void *ctx, int n_steps, struct rt_error *err);
    enum rt_status (*profile_mark)(void *ctx, int step, bool end, struct rt_step_timing *slot, struct rt_error *err);
    enum rt_status (*profile_read)(void *ctx, struct rt_step_timing *times, int n_steps, struct rt_error *err);
    /* Optional (NULL: no device clock): rt_session_time_device.
     * device_time_set(ctx, on) times each later sync's work on the device;
     * device_time_read(ctx, t) reads the last one's. */
    enum rt_status (*device_time_set)(void *ctx, bool on, struct rt_error *err);
    enum rt_status (*device_time_read)(void *ctx, struct rt_device_time *t, struct rt_error *err);
    /* Optional: the kernel step s runs at batch, in a few words ("" when NULL). */
    void (*describe_step)(struct rt_backend *b, const struct rt_plan *p, const struct rt_step *s, int batch, char *out,
                          size_t cap);
    /* Optional: rt_backend_measure_rates. */
    enum rt_status (*measure_rates)(struct rt_backend *b, enum rt_precision prec, struct rt_backend_rates *out,
                                    struct rt_error *err);
};

/* profile_mark of a backend whose run_step has finished its work when it
 * returns (CPU, reference): the host's monotonic clock into slot. */
enum rt_status rt_backend_host_mark(void *ctx, int step, bool end, struct rt_step_timing *slot, struct rt_error *err);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t rt_clock_ns(void);

struct rt_backend {
    const struct rt_backend_iface *iface;
    void *ctx;
    char description[160];
};

/* Constructors, one per compiled backend. opt is complete: rt_backend_create
 * has applied the environment fallbacks and checked the values. The
 * reference backend (plain loops of kernels/ref) is the oracle of
 * tests/test_backend_ops.c. */
enum rt_status rt_backend_ref_create(struct rt_backend **out, struct rt_error *err);
enum rt_status rt_backend_cpu_create(const struct rt_backend_options *opt, struct rt_backend **out,
                                     struct rt_error *err);
#ifdef INFERD_CUDA
enum rt_status rt_backend_cuda_create(const struct rt_backend_options *opt, struct rt_backend **out,
                                      struct rt_error *err);
#endif

#endif /* RT_BACKEND_H */
