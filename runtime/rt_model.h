/*
 * rt_model.h - the runtime's public API: load a model, run batches, free.
 *
 * Usage sketch (error handling shortened):
 *
 *     struct rt_error err;
 *     struct rt_backend *be;
 *     rt_backend_create(RT_BACKEND_AUTO, &(struct rt_backend_options){.threads = 2}, &be, &err);
 *     struct rt_model *m;
 *     if (rt_model_load("model_repository/lenet5", be, &m, &err) != RT_OK)
 *         fprintf(stderr, "%s\n", err.msg);
 *     const struct rt_model_config *cfg = rt_model_config(m);
 *     struct rt_session *s;
 *     rt_session_create(m, &s, &err);          // one per worker instance
 *     const float *in[1] = {images};          // batch * cfg->inputs[0].sample_elems
 *     float *out[1] = {logits};               // batch * cfg->outputs[0].sample_elems
 *     rt_session_run(s, batch, in, out, &err);
 *     rt_session_free(s); rt_model_free(m); rt_backend_free(be);
 *
 * Ownership: a model is read-only once loaded and may be shared by any number
 * of sessions on any threads; a session (activation arena, scratch, thread
 * pool or stream) is used by one thread at a time. A model must outlive its
 * sessions, and a backend its models. Every function returning enum rt_status
 * returns RT_OK or fills err.
 */
#ifndef RT_MODEL_H
#define RT_MODEL_H

#include "runtime/rt_status.h"
#include "runtime/rt_types.h"

#define RT_MAX_IO 8
#define RT_MAX_PREFERRED 8
#define RT_MAX_BATCH 4096

struct rt_backend;
struct rt_model;
struct rt_session;

/* ------------------------------------------------------------ backends */

enum rt_backend_kind { RT_BACKEND_AUTO = 0, RT_BACKEND_CPU, RT_BACKEND_CUDA, RT_BACKEND_KIND_COUNT };

/* Whether the CUDA backend captures one CUDA graph per batch size. */
enum rt_cuda_graphs { RT_CUDA_GRAPHS_AUTO = 0, RT_CUDA_GRAPHS_ON, RT_CUDA_GRAPHS_OFF };

/* Which CUDA kernel set runs: NEW the newest the device can run (INT8
 * conv / linear on tensor cores from sm_80; FP32 / FP16 conv / linear with
 * a tile chosen from rows, columns and the SM count, split-K for few rows,
 * and channels-last (NHWC) activations around convolutions where the
 * layout pass allows), BASELINE the older kernels they replace (INT8: dp4a;
 * FP32 / FP16: the tile by output channels alone, NCHW throughout), kept
 * for comparison and as the fallback;
 * AUTO is $INFERD_CUDA_KERNELS when set, else NEW. */
enum rt_cuda_kernels { RT_CUDA_KERNELS_AUTO = 0, RT_CUDA_KERNELS_NEW, RT_CUDA_KERNELS_BASELINE, RT_CUDA_KERNELS_COUNT };

/* Zero-initialised fields take their defaults; the four tuning knobs below
 * then fall back to the environment variables that predate them
 * ($INFERD_CPU_BATCH_CHUNK, $INFERD_CPU_ISA, $INFERD_CUDA_GRAPHS=0,
 * $INFERD_CUDA_KERNELS=baseline), read in rt_backend_create only. */
struct rt_backend_options {
    int threads;      /* CPU threads per session; 0 = number of cores (CUDA: threads that copy
                       * inputs and outputs through pinned staging, at most 16; 0 = up to 8) */
    int device;       /* CUDA device index; -1 = any */
    int cpu_batch_chunk;   /* CPU: samples per pass, 1..RT_MAX_BATCH; 0 = what fits in L2 */
    /* CPU kernels' instruction set, "scalar", "avx2" or "avx512"; NULL or ""
     * = the best this CPU has. Process-wide: the kernels keep one choice, so
     * the last CPU backend created with a cpu_isa sets it for all. */
    const char *cpu_isa;
    enum rt_cuda_graphs cuda_graphs;   /* AUTO = on */
    enum rt_cuda_kernels cuda_kernels; /* AUTO = NEW unless $INFERD_CUDA_KERNELS says otherwise */
};

/* AUTO picks CUDA when it is compiled in and a device is usable, else the
 * CPU (logging one line why). Asking for CUDA where none is usable fails.
 * Options are checked whatever the kind: an unknown cpu_isa or an
 * out-of-range cpu_batch_chunk is RT_ERR_INVALID; a cpu_isa this CPU lacks
 * is RT_ERR_UNSUPPORTED when the CPU backend is made. */
enum rt_status rt_backend_create(enum rt_backend_kind kind, const struct rt_backend_options *opt,
                                 struct rt_backend **out, struct rt_error *err);
void rt_backend_free(struct rt_backend *b);
/* "cpu" or "cuda": for logs and replies, never to decide anything (ask
 * rt_backend_device_kind). */
const char *rt_backend_name(const struct rt_backend *b);
/* One line describing the device (CPU ISA and threads, or GPU name). */
const char *rt_backend_describe(const struct rt_backend *b);

/* The name --backend takes for kind ("auto", "cpu", "cuda"); NULL past
 * RT_BACKEND_KIND_COUNT. */
const char *rt_backend_kind_name(enum rt_backend_kind kind);
/* Maps a name of rt_backend_kind_name to its kind; else RT_ERR_INVALID with
 * a message that lists the valid names. The one parser of --backend. */
enum rt_status rt_backend_kind_parse(const char *text, enum rt_backend_kind *out, struct rt_error *err);

/* What a backend computes on. */
enum rt_device_kind { RT_DEVICE_CPU = 0, RT_DEVICE_GPU };
enum rt_device_kind rt_backend_device_kind(const struct rt_backend *b);

/* One accelerator device a backend runs on. */
struct rt_device_info {
    int id;                  /* the driver's ordinal (CUDA device index) */
    uint64_t used_bytes, total_bytes;
    double util_percent;     /* over the driver's last sample period; -1 when unknown */
};
/* Accelerator devices b spreads its sessions over; 0 for the CPU. */
int rt_backend_device_count(const struct rt_backend *b);
/* Fills out for device i (0 <= i < rt_backend_device_count); false when the
 * driver tells nothing about it. Thread-safe; cheap enough for /metrics. */
bool rt_backend_device_info(const struct rt_backend *b, int i, struct rt_device_info *out);

/* ------------------------------------------------------------ model config */

/* One tensor at the model's edge. dims[0] is -1 (batch); sample_elems is the
 * product of the other dims. */
struct rt_io_desc {
    char name[RT_NAME_MAX];
    enum rt_dtype dtype;
    struct rt_shape shape;
    int64_t sample_elems;
};

/* How the image endpoint turns a picture into an input (model.json). */
struct rt_preprocess {
    bool present;
    int input;               /* index into inputs[] */
    int width, height;
    int channels;            /* 1 (gray) or 3 (rgb) */
    bool invert;
    int resize_shorter;      /* 0: resize straight to width x height */
    float scale;
    float divisor;           /* > 0: v / divisor (torchvision's ToTensor) replaces v * scale */
    float mean[3], std[3];
};

struct rt_batching {
    int preferred[RT_MAX_PREFERRED];
    int n_preferred;
    int64_t max_queue_delay_us;
    int max_queue_size;
    int64_t default_timeout_us;  /* 0: none */
};

enum rt_instance_kind { RT_INSTANCE_AUTO = 0, RT_INSTANCE_CPU, RT_INSTANCE_GPU };

/* Who computes convolutions on the CUDA backend: inferd's kernels or cuDNN
 * (loaded at run time; without it the backend uses its own kernels). */
enum rt_conv_engine { RT_CONV_ENGINE_CUSTOM = 0, RT_CONV_ENGINE_CUDNN };

struct rt_model_config {
    char name[RT_NAME_MAX];
    enum rt_precision precision;
    int max_batch_size;
    struct rt_batching batching;
    int instance_count;
    enum rt_instance_kind instance_kind;
    enum rt_conv_engine conv_engine;
    int n_inputs, n_outputs;
    struct rt_io_desc inputs[RT_MAX_IO];
    struct rt_io_desc outputs[RT_MAX_IO];
    struct rt_preprocess pre;
    int n_labels;
    char **labels;           /* n_labels strings, or NULL */
};

/* ------------------------------------------------------------ models */

/* Loads model.json + model.safetensors (+ labels) from dir, validates the
 * files and the graph, folds batch norms, plans execution and prepares the
 * weights for backend b. Errors name the file and the tensor or node.
 * When dir holds model.onnx, the graph and weights come from it instead
 * (docs/onnx.md) and model.json, optional then, holds serving settings;
 * RT_ERR_UNSUPPORTED names what of a valid ONNX model inferd cannot run. */
enum rt_status rt_model_load(const char *dir, struct rt_backend *b, struct rt_model **out,
                             struct rt_error *err);

/* Where a model's files are, and settings the caller lays over the model's
 * own (the server's config.pbtxt). Zeroed fields keep rt_model_load's ways. */
struct rt_model_source {
    const char *name;        /* the model's name; NULL: dir's last path segment */
    const char *where;       /* how messages name dir ("m/2"); NULL: the name */
    const char *onnx_file;   /* the ONNX file's name inside dir; NULL: "model.onnx" */
    /* Called once the files are read and checked, before the plan is built:
     * may change cfg's serving fields (max_batch_size, batching, instances)
     * and refuse the model by returning an error. NULL: none. */
    enum rt_status (*configure)(const void *user, struct rt_model_config *cfg, struct rt_error *err);
    const void *user;
};

/* rt_model_load with a source (NULL: as rt_model_load). */
enum rt_status rt_model_load_source(const char *dir, const struct rt_model_source *src, struct rt_backend *b,
                                    struct rt_model **out, struct rt_error *err);
void rt_model_free(struct rt_model *m);
const struct rt_model_config *rt_model_config(const struct rt_model *m);
/* Number of steps in the execution plan, after fusion (for logs and tests). */
int rt_model_plan_steps(const struct rt_model *m);
/* Arena bytes a session needs per sample (activations) and in total at the
 * model's max batch size. */
size_t rt_model_arena_bytes(const struct rt_model *m, int batch);

/* ------------------------------------------------------------ sessions */

enum rt_status rt_session_create(const struct rt_model *m, struct rt_session **out,
                                 struct rt_error *err);
void rt_session_free(struct rt_session *s);

/* Runs one batch (1 <= batch <= max_batch_size). inputs[i] holds batch
 * samples of cfg->inputs[i] (FP32, row-major, contiguous); outputs[i]
 * receives batch samples of cfg->outputs[i]. Caller owns both. */
enum rt_status rt_session_run(struct rt_session *s, int batch, const float *const *inputs,
                              float *const *outputs, struct rt_error *err);

/* ------------------------------------------------------------ profiling
 *
 * Per-step timing (`inferctl profile`, `inferd --profile-steps`). A step is
 * one entry of the execution plan: a conv2d with its bias, residual add and
 * activation fused is one step. Off by default, and then free: the executor
 * tests one pointer before and after each step.
 *
 *     rt_session_profile(s, on_step, &acc, &err);   // timing on
 *     rt_session_run(s, batch, in, out, &err);      // on_step once per step of every pass
 *     rt_session_profile(s, NULL, NULL, &err);      // timing off
 *
 * The CPU backend reads CLOCK_MONOTONIC around each step's kernel call. The
 * CUDA backend records a CUDA event pair around each step's kernels on the
 * session's stream, launching the run eagerly (no CUDA graph) while timing
 * is on, and wraps each step in an NVTX range named after its node when an
 * NVTX library can be loaded (Nsight Systems then shows layer names).
 */

/* One step of one pass (rt_session_run splits a batch larger than the
 * backend's pass size into passes). */
struct rt_step_timing {
    int step;                /* plan index, 0 .. rt_model_plan_steps() - 1 */
    int batch;               /* samples in this pass */
    int64_t begin_ns;        /* CLOCK_MONOTONIC at the step's start; on a GPU, the pass's launch
                              * time plus the step's start measured on the device */
    int64_t dur_ns;          /* the step's duration */
};

/* Called on the thread running the session, after the pass's last step has
 * finished and outside any timed span. */
typedef void (*rt_step_timing_fn)(void *user, const struct rt_step_timing *t);

/* fn non-NULL: every later rt_session_run of s calls fn(user, t) for each
 * step of each pass; NULL turns timing off. RT_ERR_UNSUPPORTED when s's
 * backend cannot time steps. rt_session_run_observed (internal) never times. */
enum rt_status rt_session_profile(struct rt_session *s, rt_step_timing_fn fn, void *user, struct rt_error *err);

/* A whole run's time on the device, where the backend has a device clock
 * (CUDA):
 *
 *     rt_session_time_device(s, true, &err);   // later runs are timed
 *     rt_session_run(s, batch, in, out, &err);
 *     rt_session_device_time(s, &t, &err);     // that run, on the device
 *
 * On the device's clock: CUDA events recorded on the session's stream,
 * inside the CUDA graph when the run replays one. The host's part (staging,
 * the launch, the wait) is outside both figures. Unlike step timing it keeps
 * CUDA graphs on; turning it on or off recaptures them. Off by default.
 * RT_ERR_UNSUPPORTED when s's backend has no device clock (the CPU). */
struct rt_device_time {
    int64_t run_ns;     /* the run's first device operation to its last: input copies, steps, output copies */
    int64_t steps_ns;   /* the steps alone: after the input copies (FP16 models: and their conversion), before
                         * the output copies */
};
enum rt_status rt_session_time_device(struct rt_session *s, bool on, struct rt_error *err);
/* The device times of s's last run (about 0.5 us resolution); RT_ERR_INVALID
 * when that run was not timed (timing off, or the run failed). */
enum rt_status rt_session_device_time(struct rt_session *s, struct rt_device_time *t, struct rt_error *err);

#define RT_STEP_TEXT 64
#define RT_STEP_SHAPES 4

/* What a step is and what it costs, at a given batch. */
struct rt_step_desc {
    const char *name;                 /* the node the step comes from (valid while the model lives) */
    const char *op;                   /* its op: "conv2d", "relu", ... */
    char epilogue[RT_STEP_TEXT];      /* work fused after the op, "bias+add+relu"; "" when none */
    char kernel[RT_STEP_TEXT];        /* the backend's kernel for it, "im2col gemm, avx512"; "" when it does not say */
    int n_in;                         /* inputs (the first RT_STEP_SHAPES shapes are below) */
    struct rt_shape in[RT_STEP_SHAPES], out;   /* dims[0] is the batch */
    double flops;                     /* arithmetic; a multiply-add counts two */
    double bytes;                     /* inputs, residual and output once each, plus the weights:
                                       * the least memory traffic, caches ignored */
};

/* Describes step `step` (0 .. rt_model_plan_steps() - 1) of m at batch
 * (1 .. max_batch_size); RT_ERR_INVALID outside those ranges. */
enum rt_status rt_model_step_desc(const struct rt_model *m, int step, int batch, struct rt_step_desc *out,
                                  struct rt_error *err);

/* The rates a backend reaches on work chosen to reach them: a large FP32
 * (FP16 for prec FP16; on the CUDA backend INT8 for prec INT8, in
 * operations a second) GEMM through its own linear kernel, and a streaming
 * element-wise kernel over buffers much larger than the caches; the ceilings
 * a profile's GFLOP/s and GB/s are read against. Each is the best of a few
 * timed repetitions after a warm-up (about 0.2 s on the CPU). The CPU also
 * measures the cores' FP32 peak with a loop of FMAs alone, the ceiling no
 * kernel can pass. */
struct rt_backend_rates {
    double gemm_gflops;
    double stream_gbs;                /* bytes read plus bytes written, per second */
    double peak_gflops;               /* FP32 arithmetic peak of an FMA loop; 0 when not measured */
    char what[128];                   /* the work measured, for reports */
};

/* RT_ERR_UNSUPPORTED when the backend cannot measure them. */
enum rt_status rt_backend_measure_rates(struct rt_backend *b, enum rt_precision prec, struct rt_backend_rates *out,
                                        struct rt_error *err);

#endif /* RT_MODEL_H */
