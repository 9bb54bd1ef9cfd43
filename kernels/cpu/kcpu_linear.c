/*
 * kcpu_linear.c - fully connected layer y[n, m] = act(x[n, k] . W[m, k]^T +
 * bias (+ residual)) as a GEMM whose B side is the weights.
 *
 * W^T is packed once into KCPU_NR-column strips ([strip][k][KCPU_NR], zero
 * padded), so each output feature is a column and the bias is a column
 * bias. The KCPU_MR-row panels of x are transposed into scratch first, once
 * each, then every task multiplies one panel with a run of strips; tasks
 * cover (strip run, panel) pairs so that batch 1 still splits over the
 * output features. (Each task transposing its own panel did it once per
 * strip run: MobileNetV2's 1280 -> 1000 classifier at batch 16 took 2.5 ms
 * on two threads, onnxruntime 0.27.)
 */
#include "kcpu_impl.h"

/* Bytes of packed W one task streams; sized to sit in L2 beside the panel. */
#define STRIP_BUDGET ((int64_t)256 * 1024)

size_t kcpu_linear_packed_floats(const struct k_linear *p)
{
    return (size_t)kcpu_ceil_div(p->m, KCPU_NR) * KCPU_NR * (size_t)p->k;
}

void kcpu_linear_pack(const struct k_linear *p, const float *w, float *packed)
{
    int64_t strips = kcpu_ceil_div(p->m, KCPU_NR);
    for (int64_t s = 0; s < strips; s++)
        for (int64_t kk = 0; kk < p->k; kk++) {
            float *d = packed + (s * p->k + kk) * KCPU_NR;
            for (int t = 0; t < KCPU_NR; t++) {
                int64_t row = s * KCPU_NR + t;
                d[t] = row < p->m ? w[row * p->k + kk] : 0.0f;
            }
        }
}

static int64_t panel_floats(const struct k_linear *p)
{
    return (int64_t)KCPU_MR * p->k;
}

/* Floats of one transposed panel, a 64-byte multiple. */
static int64_t panel_stride(const struct k_linear *p) { return (panel_floats(p) + 15) / 16 * 16; }

size_t kcpu_linear_scratch_bytes(const struct k_linear *p, int threads)
{
    (void)threads;   /* the panels are shared */
    return (size_t)(kcpu_ceil_div(p->n, KCPU_MR) * panel_stride(p)) * sizeof(float) + 64;
}

struct linear_job {
    const struct k_linear *p;
    const float *x, *packed_w, *bias, *residual;
    float *y;
    float *panels_at;          /* the transposed panels, panel_stride apart */
    int64_t panels, strips, strips_per_task;
};

/* Panel `panel` of x: its rows in [k][KCPU_MR] order. */
static void transpose_task(void *arg, int64_t panel, int thread)
{
    const struct linear_job *j = arg;
    const struct k_linear *p = j->p;
    int64_t r0 = panel * KCPU_MR;
    int rows = (int)kcpu_min64(KCPU_MR, p->n - r0);
    float *a = j->panels_at + panel * panel_stride(p);
    for (int64_t kk = 0; kk < p->k; kk++)
        for (int i = 0; i < rows; i++)
            a[kk * KCPU_MR + i] = j->x[(r0 + i) * p->k + kk];
}

static void linear_task(void *arg, int64_t task, int thread)
{
    const struct linear_job *j = arg;
    const struct k_linear *p = j->p;
    int64_t panel = task % j->panels, run = task / j->panels;
    int64_t r0 = panel * KCPU_MR;
    int rows = (int)kcpu_min64(KCPU_MR, p->n - r0);
    const float *a = j->panels_at + panel * panel_stride(p);

    int64_t s0 = run * j->strips_per_task;
    int64_t col0 = s0 * KCPU_NR;
    struct kcpu_gemm g = {
        .m = rows, .k = p->k, .a = a, .a_step = KCPU_MR,
        .b = j->packed_w + s0 * p->k * KCPU_NR, .ldb = KCPU_NR, .b_strip = (int64_t)p->k * KCPU_NR,
        .j0 = col0, .n = kcpu_min64(j->strips_per_task * KCPU_NR, p->m - col0),
        .seg_len = INT64_MAX, .row_len = INT64_MAX, .row_valid = INT64_MAX, .rows_valid = 1,
        .ldc = p->m,
        .c = j->y + r0 * p->m,
        .res = j->residual ? j->residual + r0 * p->m : NULL,
        .bias_col = j->bias, .act = p->act,
    };
    kcpu_gemm_run(&g);
}

void kcpu_linear_f32(struct kcpu_threads *th, const struct k_linear *p,
                     const float *x, const float *packed_w, const float *bias,
                     const float *residual, float *y, void *scratch)
{
    if (p->n <= 0 || p->m <= 0)
        return;
    int threads = kcpu_threads_count(th);
    struct linear_job j = {
        .p = p, .x = x, .packed_w = packed_w, .bias = bias, .residual = residual, .y = y,
        .panels_at = kcpu_align64(scratch),
        .panels = kcpu_ceil_div(p->n, KCPU_MR),
        .strips = kcpu_ceil_div(p->m, KCPU_NR),
    };
    int64_t spt = kcpu_max64(1, STRIP_BUDGET / kcpu_max64(1, (int64_t)p->k * KCPU_NR * 4));
    spt = kcpu_min64(spt, j.strips);
    /* Enough tasks to keep every thread busy when the batch is small. */
    int64_t want_runs = kcpu_ceil_div(2 * (int64_t)threads, j.panels);
    if (kcpu_ceil_div(j.strips, spt) < want_runs)
        spt = kcpu_max64(1, kcpu_ceil_div(j.strips, want_runs));
    int64_t strip_macs = kcpu_min64(p->n, KCPU_MR) * kcpu_max64(1, p->k) * KCPU_NR;
    spt = kcpu_max64(spt, kcpu_min64(j.strips, kcpu_ceil_div(KCPU_MIN_TASK_MACS, strip_macs)));
    j.strips_per_task = spt;
    kcpu_threads_run(th, j.panels, transpose_task, &j);
    kcpu_threads_run(th, j.panels * kcpu_ceil_div(j.strips, spt), linear_task, &j);
}
