/*
 * backend_cuda_impl.h - internals shared by the CUDA backend's files.
 *
 *   backend_cuda.c        devices, weights (per model), sessions, the iface
 *   backend_cuda_exec.c   recording a run, executing steps
 *   backend_cuda_graph.c  CUDA graphs per batch size: warm-up, capture, replay
 *   backend_cuda_cudnn.c  cuDNN, loaded with dlopen, for convolutions
 *   backend_cuda_q8.c     INT8 steps: upload and dispatch to kernels/cuda/q8.cu
 *   backend_cuda_profile.c step timing (CUDA events), kernel names, measured rates
 *   backend_cuda_nvtx.c   NVTX ranges, loaded with dlopen
 *
 * A session (one worker instance) owns, on one device: a non-blocking
 * stream, the activation arena (cudaMalloc), pinned host staging for the
 * model's inputs and outputs, device staging for the FP32 <-> FP16 edges,
 * and CUDA graphs captured per batch size. rt_session_run's calls
 * (copy_in, run_step, copy_out) are recorded, not executed; sync replays the
 * batch size's graph, or captures it on first use, then waits and copies the
 * outputs out of pinned memory:
 *
 *   copy_in:   user input -> pinned (host memcpy)      record H2D
 *   run_step:                                          record step
 *   copy_out:                                          record D2H
 *   sync:      [graph: H2D (+ to FP16), steps, (to FP32 +) D2H] -> wait -> pinned -> user output
 *
 * While rt_session_profile is on, the executor's profile marks are recorded
 * too (an event, and an NVTX range, around each step) and sync launches the
 * run eagerly, never through a graph. While rt_session_time_device is on,
 * four events are recorded in the run (first, after the input copies,
 * before the output copies, last), captured into its graph.
 */
#ifndef BACKEND_CUDA_IMPL_H
#define BACKEND_CUDA_IMPL_H

#include <pthread.h>

#include <cuda_runtime_api.h>

#include "kernels/cpu/kcpu.h"
#include "kernels/cuda/kcuda.h"
#include "runtime/backend/backend_cuda_graph.h"
#include "runtime/backend/backend.h"
#include "runtime/precision/quant.h"

#define CUDA_MAX_DEVICES 16
#define CUDA_STAGE_ALIGN 256

struct cuda_dnn;                    /* cuDNN entry points (backend_cuda_cudnn.c) */
struct cuda_dnn_session;            /* a session's cuDNN handle and workspace */

struct cuda_backend {
    int n_dev;
    int dev[CUDA_MAX_DEVICES];      /* CUDA ordinals; weights live on each */
    unsigned next_slot;             /* round-robin of sessions over dev[] (atomic) */
    int poisoned;                   /* a sticky CUDA error was seen (atomic) */
    bool graphs;                    /* rt_backend_options.cuda_graphs: OFF turns capture off */
    bool baseline;                  /* rt_backend_options.cuda_kernels: BASELINE (see cuda_q8_mma,
                                     * cuda_gemm_sms) */
    int copy_threads;               /* per session, for kcpu_copy to and from pinned staging */
    int sm[CUDA_MAX_DEVICES];       /* compute capability of dev[i], major * 10 + minor */
    int sms[CUDA_MAX_DEVICES];      /* streaming multiprocessors of dev[i] */
    pthread_mutex_t dnn_lock;       /* guards the three below */
    bool dnn_tried;                 /* cuDNN is loaded on first use, once */
    struct cuda_dnn *dnn;           /* NULL until then, or when it could not be loaded */
    char dnn_why[160];              /* ... and why */
};

/* An INT8 step: the numbers of rt_q8_step_prepare (the CPU backend's
 * too), and where the ones kernels read on the device sit in dev[i].w. */
struct cuda_q8_prep {
    struct rt_q8_step q;            /* host */
    size_t off_bias, off_mult, off_scale;   /* bytes into dev[i].w */
};

/* A step's weights on one device. */
struct cuda_dev_weights {
    void *w;                        /* conv/linear: packed weights (cuDNN: plain OIHW); bn: scale;
                                     * INT8: one buffer of packed weights, bias, mults, scales */
    void *table;                    /* conv (ours): gather table */
    float *bias;                    /* conv/linear: bias or NULL; bn: shift */
};

/* Per plan step, per device slot: what prepare_step uploaded. Steps
 * without weights have one only when a tensor of theirs is NHWC. */
struct cuda_step_prep {
    bool cudnn;                     /* convolution runs through cuDNN */
    bool x_nhwc, y_nhwc;            /* input 0, and output (and residual), channels last
                                     * (runtime/backend/layout_nhwc.h; cuda_nhwc_wanted) */
    struct cuda_q8_prep *q8;        /* INT8 steps, else NULL */
    struct cuda_dev_weights dev[CUDA_MAX_DEVICES];
};

enum cuda_op_kind { CUDA_OP_IN, CUDA_OP_STEP, CUDA_OP_OUT, CUDA_OP_MARK };

/* One recorded call of rt_session_run. */
struct cuda_op {
    enum cuda_op_kind kind;
    const struct rt_step *step;     /* STEP */
    struct rt_step_io io;           /* STEP */
    void *dev;                      /* IN: destination, OUT: source (arena) */
    void *host;                     /* OUT: the caller's buffer */
    size_t stage;                   /* IN, OUT: offset in the staging buffers */
    size_t bytes;                   /* IN, OUT: FP32 bytes at the model's edge */
    int mark_step;                  /* MARK: the plan step it brackets */
    bool mark_end;                  /* MARK: after the step (else before) */
};

/* A session's step timing (rt_session_profile): an event pair per step. */
struct cuda_profile {
    int n_steps;
    cudaEvent_t *events;            /* [2 * n_steps]: each step's begin and end */
    int64_t launch_ns;              /* host clock when the timed run was launched */
};

/* A session's device time of whole runs (rt_session_time_device). The
 * events, made when first turned on, live as long as the session: graphs
 * captured with them refer to them. */
enum cuda_span_event { CUDA_SPAN_BEGIN, CUDA_SPAN_STEPS_BEGIN, CUDA_SPAN_STEPS_END, CUDA_SPAN_END, CUDA_SPAN_EVENTS };
struct cuda_span {
    bool on;
    bool timed;                     /* the last run was timed, and succeeded */
    cudaEvent_t ev[CUDA_SPAN_EVENTS];
};

struct cuda_session {
    struct cuda_backend *cb;
    const struct rt_plan *plan;
    int slot, device;               /* index into cb->dev, and the ordinal */
    enum kcuda_dtype dt;            /* activations in the arena */
    cudaStream_t stream;
    char *arena;                    /* device, arena_bytes */
    char *pinned;                   /* host, stage_bytes */
    struct kcpu_threads *copiers;   /* NULL: copies on the caller alone */
    char *dstage;                   /* device, stage_bytes; FP16 models only */
    size_t stage_bytes, stage_used;
    struct cuda_op *ops;
    int n_ops, cap_ops;
    int batch;                      /* of the recorded run; 0 before its first step */
    struct cuda_graph_cache graphs;
    struct cuda_dnn_session *dnn;
    struct cuda_profile *prof;      /* NULL unless timing steps */
    struct cuda_span span;
};

/* Turns a CUDA error into RT_ERR_DEVICE (RT_ERR_NO_MEMORY for allocation
 * failures) with a message naming `what`; a sticky error also poisons the
 * backend so that every later call fails fast. */
enum rt_status cuda_fail(struct cuda_backend *cb, cudaError_t e, const char *what, struct rt_error *err);

/* The one checking macro: every CUDA runtime call goes through it. */
#define CUDA_CHECK(cb, call, err)                                    \
    do {                                                             \
        cudaError_t e_ = (call);                                     \
        if (e_ != cudaSuccess)                                       \
            return cuda_fail((cb), e_, #call, (err));                \
    } while (0)

/* backend_cuda_exec.c */
enum rt_status cuda_exec_copy_in(void *ctx, void *dst, const void *src, size_t bytes, struct rt_error *err);
enum rt_status cuda_exec_copy_out(void *ctx, void *dst, const void *src, size_t bytes, struct rt_error *err);
enum rt_status cuda_exec_run_step(void *ctx, const struct rt_plan *p, const struct rt_step *s, int batch,
                                  const struct rt_step_io *io, struct rt_error *err);
enum rt_status cuda_exec_sync(void *ctx, struct rt_error *err);
/* profile_mark: records a mark (an event and an NVTX range at launch). */
enum rt_status cuda_exec_profile_mark(void *ctx, int step, bool end, struct rt_step_timing *slot,
                                      struct rt_error *err);
/* Whether an FP32 / FP16 step has a kernel and fits its limits; else why not. */
bool cuda_f32_supports(const struct rt_step *s, char *why, size_t why_len);
/* The limits of the kernels beyond having one (sizes, input counts). */
bool cuda_step_fits(const struct rt_step *s, char *why, size_t why_len);
/* The one place that picks the FP32 / FP16 conv / linear kernel set: the SM
 * count of device slot `slot` that kcuda_gemm_plan weighs (rows, columns
 * and SMs: smaller tiles or split-K when a GEMM would leave SMs idle), or 0
 * with the baseline set (the tile by columns alone). */
int cuda_gemm_sms(const struct cuda_backend *cb, int slot);
/* The one place that turns channels-last activations on for a plan: FP32
 * and FP16 models on our convolution kernels; not with the baseline set,
 * not for INT8 models, not with conv_engine "cudnn" (NCHW throughout). */
bool cuda_nhwc_wanted(const struct cuda_backend *cb, const struct rt_plan *p);
/* Step s's layouts under the plan's layout pass (false, false when not
 * wanted); RT_ERR_NO_MEMORY when the pass's host buffer cannot be had. */
enum rt_status cuda_step_layouts(const struct cuda_backend *cb, const struct rt_plan *p, const struct rt_step *s,
                                 bool *x_nhwc, bool *y_nhwc, struct rt_error *err);

/* backend_cuda_q8.c */
/* Whether an INT8 step (s->q8) has a kernel; else why not. */
bool cuda_q8_supports(const struct rt_step *s, char *why, size_t why_len);
/* Fills pr->q8 and uploads to every device (pr->dev[i].w). */
enum rt_status cuda_q8_prepare(struct cuda_backend *cb, const struct rt_plan *p, const struct rt_step *s,
                               struct cuda_step_prep *pr, struct rt_error *err);
void cuda_q8_release_host(struct cuda_step_prep *pr);
/* The one place that picks the INT8 conv / linear kernels: true for the
 * tensor-core ones (kernels/cuda/q8_mma.cu) on device slot `slot`, false for
 * q8.cu's dp4a ones. k: the step's parameters (any batch). */
bool cuda_q8_mma(const struct cuda_backend *cb, int slot, const struct rt_step *s, const union rt_step_params *k);
enum rt_status cuda_q8_enqueue(struct cuda_session *cs, const struct rt_step *s, const struct rt_step_io *io,
                               struct rt_error *err);

/* backend_cuda_profile.c: the backend's profile_set, profile_read,
 * device_time_set, device_time_read, describe_step and measure_rates
 * (backend.h), and what the recorded run does with a mark and the span. */
enum rt_status cuda_profile_set(void *ctx, int n_steps, struct rt_error *err);
enum rt_status cuda_profile_read(void *ctx, struct rt_step_timing *times, int n_steps, struct rt_error *err);
void cuda_describe_step(struct rt_backend *b, const struct rt_plan *p, const struct rt_step *s, int batch, char *out,
                        size_t cap);
enum rt_status cuda_measure_rates(struct rt_backend *b, enum rt_precision prec, struct rt_backend_rates *out,
                                  struct rt_error *err);
/* Enqueues a recorded mark: the step's begin event and NVTX range push, or
 * its end event and the pop. */
enum rt_status cuda_profile_enqueue_mark(struct cuda_session *cs, const struct cuda_op *op, struct rt_error *err);
/* The backend's device_time_set and device_time_read (backend.h). */
enum rt_status cuda_span_set(void *ctx, bool on, struct rt_error *err);
enum rt_status cuda_span_read(void *ctx, struct rt_device_time *t, struct rt_error *err);
/* Records one of the span's events on the session's stream: an event node
 * of the graph when the stream is capturing. */
enum rt_status cuda_span_enqueue(struct cuda_session *cs, enum cuda_span_event which, struct rt_error *err);
/* Destroys the span's events (after the graphs that record them). */
void cuda_span_release(struct cuda_session *cs);

/* backend_cuda_nvtx.c: NVTX ranges when libnvtx3interop or libnvToolsExt
 * loads (Nsight Systems injects into either); otherwise nothing. */
void cuda_nvtx_push(const char *name);
void cuda_nvtx_pop(void);

/* backend_cuda_cudnn.c */
/* Loads libcudnn; NULL with the reason in why when it is absent or unusable. */
struct cuda_dnn *cuda_dnn_load(char *why, size_t why_len);
void cuda_dnn_unload(struct cuda_dnn *dnn);
/* "cuDNN 9.19.0" */
void cuda_dnn_describe(const struct cuda_dnn *dnn, char *out, size_t cap);
/* Whether a cuDNN forward algorithm (cudnnConvolutionFwdAlgo_t) with this
 * math type (cudnnMathType_t) keeps the precision contract of dt: the GEMM
 * family and direct convolution only (no Winograd, no FFT), and no tensor
 * cores (TF32) for FP32. */
bool cuda_dnn_algo_allowed(enum kcuda_dtype dt, int algo, int math_type);
/* One algorithm of cuDNN's heuristics list, best first. */
struct cuda_dnn_candidate {
    int algo, math_type;     /* cudnnConvolutionFwdAlgo_t, cudnnMathType_t */
    bool usable;             /* the heuristics' status for it was success */
    size_t memory;           /* workspace bytes */
};
/* The first of c[0..n) that is usable, allowed for dt, fits in `limit`
 * workspace bytes and is not in `refused` (bit 1 << algo: failed on this
 * step at this batch); -1 when none is. */
int cuda_dnn_pick(const struct cuda_dnn_candidate *c, int n, enum kcuda_dtype dt, size_t limit, unsigned refused);
/* Whether cuDNN computes this convolution exactly as the plan wants
 * (cuDNN pads symmetrically). */
bool cuda_dnn_conv_ok(const struct rt_step *s);
/* A handle on the session's stream and a workspace for the plan's cuDNN
 * convolutions at max_batch. */
enum rt_status cuda_dnn_session_create(struct cuda_session *cs, int max_batch, struct rt_error *err);
void cuda_dnn_session_free(struct cuda_session *cs);
/* Picks the algorithms of every cuDNN step for `batch` (host only), so a
 * graph capture that follows makes no heuristics calls. */
enum rt_status cuda_dnn_choose(struct cuda_session *cs, int batch, struct rt_error *err);
/* y = conv(x, w) on cs->stream; the epilogue runs separately. */
enum rt_status cuda_dnn_conv(struct cuda_session *cs, const struct rt_step *s, const struct k_conv2d *k,
                             const void *x, const void *w, void *y, struct rt_error *err);

#endif /* BACKEND_CUDA_IMPL_H */
