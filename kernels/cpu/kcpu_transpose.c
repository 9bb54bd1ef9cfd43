/*
 * kcpu_transpose.c - axis permutation on the CPU (kcpu.h).
 *
 * Axes of 1 are dropped and input axes that stay adjacent and in order are
 * merged first, so NCHW <-> NHWC (ConvNeXt's permutes around its blocks)
 * and ViT's (0, 2, 1) become a matrix transpose [a, b] -> [b, a] per
 * sample (and per leading axis that stays): done in tiles of TILE_A input
 * rows by TILE_B columns, so each input line read serves a tile's width
 * of outputs. Any other permutation goes out in rows of its last axis,
 * parallel over rows; a row's first input element is found once, and the
 * row then reads the input at the stride of the axis it came from (1 where
 * the last axis stays last: a plain copy).
 */
#include <string.h>

#include "kcpu_impl.h"

struct transpose_job {
    const struct k_transpose *p;
    const float *x;
    float *y;
    int64_t stride[K_BINARY_MAX_DIMS];   /* the input's, per input axis */
    int64_t per_sample, rows_per_sample, len, rows_per_task;
};

static void transpose_task(void *arg, int64_t task, int thread)
{
    const struct transpose_job *j = arg;
    const struct k_transpose *p = j->p;
    const int last = p->rank - 1;
    const int64_t step = j->stride[p->perm[last]];
    int64_t end = kcpu_min64((int64_t)p->n * j->rows_per_sample, (task + 1) * j->rows_per_task);
    for (int64_t r = task * j->rows_per_task; r < end; r++) {
        int64_t s = r / j->rows_per_sample, rest = r % j->rows_per_sample, at = s * j->per_sample;
        for (int d = last - 1; d >= 0; d--) {
            int64_t len = p->dims[p->perm[d]];
            at += rest % len * j->stride[p->perm[d]];
            rest /= len;
        }
        const float *src = j->x + at;
        float *dst = j->y + r * j->len;
        if (step == 1) {
            memcpy(dst, src, sizeof(float) * (size_t)j->len);
        } else {
            for (int64_t i = 0; i < j->len; i++)
                dst[i] = src[i * step];
        }
    }
}

#define TILE_A 16
#define TILE_B 64
#define TASK_A 256   /* input rows a task takes */

/* p with axes of 1 dropped and runs of input axes that stay adjacent and
 * in order merged (n unchanged); the rank may become 0. */
static struct k_transpose merged(const struct k_transpose *p)
{
    struct k_transpose q = {.n = p->n};
    int keep[K_BINARY_MAX_DIMS] = {0}, renum[K_BINARY_MAX_DIMS] = {0}, kept = 0;
    for (int d = 0; d < p->rank; d++)   /* input axes left, renumbered */
        renum[d] = p->dims[d] == 1 ? -1 : kept++;
    for (int k = 0, m = 0; k < p->rank; k++)
        if (renum[p->perm[k]] >= 0)
            keep[m++] = renum[p->perm[k]];
    int64_t dims[K_BINARY_MAX_DIMS] = {0};
    for (int d = 0, m = 0; d < p->rank; d++)
        if (p->dims[d] != 1)
            dims[m++] = p->dims[d];
    /* output axis k joins k - 1 where its input axis follows k - 1's */
    int group[K_BINARY_MAX_DIMS] = {0}, first_in[K_BINARY_MAX_DIMS] = {0}, groups = 0;
    int64_t gdims[K_BINARY_MAX_DIMS] = {0};
    for (int k = 0; k < kept; k++) {
        if (k > 0 && keep[k] == keep[k - 1] + 1) {
            gdims[groups - 1] *= dims[keep[k]];
            continue;
        }
        first_in[groups] = keep[k];
        gdims[groups++] = dims[keep[k]];
    }
    /* a group's input position: how many groups start before it in the input */
    for (int g = 0; g < groups; g++) {
        group[g] = 0;
        for (int h = 0; h < groups; h++)
            group[g] += first_in[h] < first_in[g];
    }
    q.rank = groups;
    for (int g = 0; g < groups; g++) {
        q.perm[g] = group[g];
        q.dims[group[g]] = gdims[g];
    }
    return q;
}

struct tile_job {
    const float *x;
    float *y;
    int64_t a, b;                 /* [a, b] -> [b, a] per matrix */
    int64_t blocks_a, blocks_b;   /* a matrix's tasks: TASK_A rows by TILE_B columns */
};

static void tile_task(void *arg, int64_t task, int thread)
{
    const struct tile_job *j = arg;
    int64_t per = j->blocks_a * j->blocks_b, mat = task / per, ab = task % per / j->blocks_b;
    int64_t b0 = task % j->blocks_b * TILE_B, b1 = kcpu_min64(j->b, b0 + TILE_B);
    int64_t a_end = kcpu_min64(j->a, (ab + 1) * TASK_A);
    const float *x = j->x + mat * j->a * j->b;
    float *y = j->y + mat * j->a * j->b;
    for (int64_t a0 = ab * TASK_A; a0 < a_end; a0 += TILE_A) {
        int64_t a1 = kcpu_min64(a_end, a0 + TILE_A);
        for (int64_t bb = b0; bb < b1; bb++)
            for (int64_t aa = a0; aa < a1; aa++)
                y[bb * j->a + aa] = x[aa * j->b + bb];
    }
}

void kcpu_transpose_f32(struct kcpu_threads *th, const struct k_transpose *p, const float *x, float *y)
{
    struct k_transpose q = merged(p);
    bool swap_last = q.rank >= 2 && q.perm[q.rank - 1] == q.rank - 2 && q.perm[q.rank - 2] == q.rank - 1;
    for (int d = 0; swap_last && d < q.rank - 2; d++)
        swap_last = q.perm[d] == d;
    if (swap_last) {   /* matrices [a, b] -> [b, a] */
        struct tile_job t = {.x = x, .y = y, .a = q.dims[q.rank - 2], .b = q.dims[q.rank - 1]};
        int64_t mats = q.n;
        for (int d = 0; d < q.rank - 2; d++)
            mats *= q.dims[d];
        t.blocks_a = kcpu_ceil_div(t.a, TASK_A);
        t.blocks_b = kcpu_ceil_div(t.b, TILE_B);
        if (mats > 0 && t.a > 0 && t.b > 0)
            kcpu_threads_run(th, mats * t.blocks_a * t.blocks_b, tile_task, &t);
        return;
    }
    struct transpose_job j = {.p = p, .x = x, .y = y, .per_sample = 1, .rows_per_sample = 1, .len = 1};
    for (int d = p->rank - 1; d >= 0; d--) {
        j.stride[d] = j.per_sample;
        j.per_sample *= p->dims[d];
    }
    if (p->rank > 0) {
        j.len = p->dims[p->perm[p->rank - 1]];
        j.rows_per_sample = j.len > 0 ? j.per_sample / j.len : 0;
    }
    int64_t rows = (int64_t)p->n * j.rows_per_sample;
    if (rows == 0 || j.len == 0)
        return;
    j.rows_per_task = kcpu_max64(1, KCPU_CHUNK / j.len);
    kcpu_threads_run(th, kcpu_ceil_div(rows, j.rows_per_task), transpose_task, &j);
}
