/*
 * kcpu_pad.c - padding on the CPU (k_pad: ONNX Pad). The output is walked
 * in rows of its last dim, parallel over rows: a row either lies in the
 * constant pad of an outer dim (all value) or reads one input row, whose
 * elements are copied into the middle and whose pads are filled per mode.
 */
#include <string.h>

#include "kcpu_impl.h"

struct pad_job {
    const struct k_pad *p;
    const float *x;
    float *y;
    int64_t in_elems, out_rows, out_len, rows_per_task;
};

/* Where output position k of a dim of d (k < 0: in the begin pad) reads
 * under mode; -1: the constant. */
static int64_t mirror(enum k_pad_mode mode, int64_t k, int64_t d)
{
    if (k < 0)
        return mode == K_PAD_EDGE ? 0 : mode == K_PAD_REFLECT ? (d > 1 ? -k : 0) : -1;
    if (k >= d)
        return mode == K_PAD_EDGE ? d - 1 : mode == K_PAD_REFLECT ? (d > 1 ? 2 * d - 2 - k : 0) : -1;
    return k;
}

/* One output row: the input row src (NULL: all constant) padded. */
static void row(const struct k_pad *p, const float *src, float *dst, int64_t len)
{
    const int last = p->rank - 1;
    const int64_t d = p->dims[last], b = p->begin[last];
    if (!src) {
        for (int64_t i = 0; i < len; i++)
            dst[i] = p->value;
        return;
    }
    memcpy(dst + b, src, sizeof(float) * (size_t)d);
    for (int64_t i = 0; i < b; i++) {
        int64_t k = mirror(p->mode, i - b, d);
        dst[i] = k < 0 ? p->value : src[k];
    }
    for (int64_t i = b + d; i < len; i++) {
        int64_t k = mirror(p->mode, i - b, d);
        dst[i] = k < 0 ? p->value : src[k];
    }
}

static void pad_task(void *arg, int64_t task, int thread)
{
    const struct pad_job *j = arg;
    const struct k_pad *p = j->p;
    const int last = p->rank - 1;
    int64_t end = kcpu_min64((int64_t)p->n * j->out_rows, (task + 1) * j->rows_per_task);
    for (int64_t r = task * j->rows_per_task; r < end; r++) {
        int64_t s = r / j->out_rows, rest = r % j->out_rows, at = 0, scale = p->dims[last];
        for (int d = last - 1; d >= 0 && at >= 0; d--) {   /* the input row this output row reads */
            int64_t len = p->begin[d] + p->dims[d] + p->end[d];
            int64_t k = mirror(p->mode, rest % len - p->begin[d], p->dims[d]);
            at = k < 0 ? -1 : at + k * scale;
            scale *= p->dims[d];
            rest /= len;
        }
        row(p, at < 0 ? NULL : j->x + s * j->in_elems + at, j->y + r * j->out_len, j->out_len);
    }
}

void kcpu_pad_f32(struct kcpu_threads *th, const struct k_pad *p, const float *x, float *y)
{
    struct pad_job j = {.p = p, .x = x, .y = y, .in_elems = 1, .out_rows = 1, .out_len = 1};
    if (p->rank == 0) {   /* a scalar per sample: nothing to pad */
        memcpy(y, x, sizeof(float) * (size_t)p->n);
        return;
    }
    for (int d = 0; d < p->rank; d++) {
        j.in_elems *= p->dims[d];
        if (d < p->rank - 1)
            j.out_rows *= p->begin[d] + p->dims[d] + p->end[d];
    }
    j.out_len = p->begin[p->rank - 1] + p->dims[p->rank - 1] + p->end[p->rank - 1];
    int64_t rows = (int64_t)p->n * j.out_rows;
    if (rows <= 0 || j.out_len <= 0)
        return;
    j.rows_per_task = kcpu_max64(1, KCPU_CHUNK / j.out_len);
    kcpu_threads_run(th, kcpu_ceil_div(rows, j.rows_per_task), pad_task, &j);
}
