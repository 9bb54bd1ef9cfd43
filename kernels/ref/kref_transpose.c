/*
 * kref_transpose.c - reference axis permutation: each output element's
 * index split into its coordinates, and the input element at the same
 * coordinates read through the permutation. The oracle for kcpu_transpose.c.
 */
#include "kref.h"

void kref_transpose_f32(const struct k_transpose *p, const float *x, float *y)
{
    int64_t stride[K_BINARY_MAX_DIMS] = {0}, per_sample = 1;
    for (int d = p->rank - 1; d >= 0; d--) {   /* the input's strides */
        stride[d] = per_sample;
        per_sample *= p->dims[d];
    }
    for (int s = 0; s < p->n; s++) {
        for (int64_t i = 0; i < per_sample; i++) {
            int64_t rest = i, at = 0;
            for (int d = p->rank - 1; d >= 0; d--) {   /* output axis d is input axis perm[d] */
                int64_t len = p->dims[p->perm[d]];
                at += rest % len * stride[p->perm[d]];
                rest /= len;
            }
            y[s * per_sample + i] = x[s * per_sample + at];
        }
    }
}
