/*
 * kcpu_binary.c - element-wise binary ops with numpy broadcasting on the CPU.
 *
 * The output is walked as rows of its last dimension, parallel over rows,
 * after merging adjacent dimensions that each operand walks as one (a
 * per-channel scale of [C, H, W] is C rows of H * W, not C * H rows of W:
 * EfficientNet-B0's squeeze-excitation products on 14x14 and 7x7 maps
 * spent more on finding rows than on multiplying). A row's operand
 * offsets are found once; inside the row each operand moves by its
 * last-dim stride (1, or 0 when broadcast): add, sub, mul and div in
 * vectors where both strides are 0 or 1 (binary_avx2.c, binary_avx512.c;
 * the compiler vectorises none of these loops for the baseline), the rest
 * one element at a time. Same results as kref_binary.c: each element is
 * one correctly rounded float operation (pow: libm's pow in double, rounded
 * once, as there).
 */
#include <math.h>

#include "kcpu_impl.h"

#define ROW_WORK 16384   /* output elements per task */

struct bin_job {
    const struct k_binary *p;
    const float *a, *b;
    float *y;
    int64_t rows_per_sample, len, rows_per_task;
    enum kcpu_isa isa;   /* read once a call */
};

/* One row: y[i] = a[i * sa] op b[i * sb]. */
#define ROW_LOOP(expr)                                   \
    for (int64_t i = 0; i < len; i++) {                  \
        float x = a[i * sa], z = b[i * sb];              \
        y[i] = (expr);                                   \
    }

static void row_scalar(enum k_binop op, int64_t len, const float *a, int64_t sa, const float *b, int64_t sb, float *y)
{
    switch (op) {
    case K_BIN_ADD: ROW_LOOP(x + z) return;
    case K_BIN_SUB: ROW_LOOP(x - z) return;
    case K_BIN_MUL: ROW_LOOP(x * z) return;
    case K_BIN_DIV: ROW_LOOP(x / z) return;
    case K_BIN_MAX: ROW_LOOP(isnan(x) || isnan(z) ? x + z : x > z ? x : z) return;
    case K_BIN_MIN: ROW_LOOP(isnan(x) || isnan(z) ? x + z : x < z ? x : z) return;
    case K_BIN_PRELU: ROW_LOOP(x < 0 ? x * z : x) return;
    case K_BIN_POW: ROW_LOOP((float)pow(x, z)) return;   /* as the reference: powf can differ by an ulp */
    case K_BIN_COUNT: break;
    }
}

/* The vector rows where the ISA has them (kcpu_binary_row_vectors), else
 * the scalar loop. */
static void row(enum kcpu_isa isa, enum k_binop op, int64_t len, const float *a, int64_t sa, const float *b,
                int64_t sb, float *y)
{
    if (isa == KCPU_ISA_AVX512 && kcpu_binary_row_avx512(op, len, a, sa, b, sb, y) == 0)
        return;
    if (isa == KCPU_ISA_AVX2 && kcpu_binary_row_avx2(op, len, a, sa, b, sb, y) == 0)
        return;
    row_scalar(op, len, a, sa, b, sb, y);
}

/* p with its dimensions of size 1 dropped and adjacent ones merged where
 * both operands step over them as over one (the output is contiguous). */
static struct k_binary merged(const struct k_binary *p)
{
    struct k_binary q = *p;
    q.rank = 0;
    for (int d = 0; d < p->rank; d++) {
        if (p->dims[d] == 1)
            continue;
        int r = q.rank - 1;
        if (r >= 0 && q.a_stride[r] == p->a_stride[d] * p->dims[d] && q.b_stride[r] == p->b_stride[d] * p->dims[d]) {
            q.dims[r] *= p->dims[d];
            q.a_stride[r] = p->a_stride[d];
            q.b_stride[r] = p->b_stride[d];
            continue;
        }
        q.dims[q.rank] = p->dims[d];
        q.a_stride[q.rank] = p->a_stride[d];
        q.b_stride[q.rank] = p->b_stride[d];
        q.rank++;
    }
    return q;
}

static void bin_task(void *arg, int64_t task, int thread)
{
    const struct bin_job *j = arg;
    const struct k_binary *p = j->p;
    int last = p->rank - 1;
    int64_t sa = last >= 0 ? p->a_stride[last] : 0, sb = last >= 0 ? p->b_stride[last] : 0;
    int64_t total = (int64_t)p->n * j->rows_per_sample;
    int64_t end = kcpu_min64(total, (task + 1) * j->rows_per_task);
    for (int64_t r = task * j->rows_per_task; r < end; r++) {
        int64_t s = r / j->rows_per_sample, rest = r % j->rows_per_sample;
        int64_t ao = s * p->a_sample, bo = s * p->b_sample;
        for (int d = last - 1; d >= 0; d--) {
            int64_t idx = rest % p->dims[d];
            rest /= p->dims[d];
            ao += idx * p->a_stride[d];
            bo += idx * p->b_stride[d];
        }
        row(j->isa, p->op, j->len, j->a + ao, sa, j->b + bo, sb, j->y + r * j->len);
    }
}

void kcpu_binary_f32(struct kcpu_threads *th, const struct k_binary *given,
                     const float *a, const float *b, float *y)
{
    const struct k_binary m = merged(given), *p = &m;
    struct bin_job j = {.p = p, .a = a, .b = b, .y = y, .rows_per_sample = 1, .len = 1, .isa = kcpu_isa()};
    if (p->rank > 0) {
        j.len = p->dims[p->rank - 1];
        for (int d = 0; d < p->rank - 1; d++)
            j.rows_per_sample *= p->dims[d];
    }
    int64_t rows = (int64_t)p->n * j.rows_per_sample;
    if (rows == 0 || j.len == 0)
        return;
    j.rows_per_task = kcpu_max64(1, ROW_WORK / j.len);
    kcpu_threads_run(th, kcpu_ceil_div(rows, j.rows_per_task), bin_task, &j);
}
