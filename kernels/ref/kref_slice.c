/*
 * kref_slice.c - reference slice along one axis: every output element read
 * from its input coordinates. The oracle for kcpu_slice.c.
 */
#include "kref.h"

void kref_slice_f32(const struct k_slice *p, const float *x, float *y)
{
    for (int64_t o = 0; o < p->outer; o++)
        for (int64_t i = 0; i < p->len; i++)
            for (int64_t j = 0; j < p->inner; j++)
                y[(o * p->len + i) * p->inner + j] = x[(o * p->in_len + p->start + i * p->step) * p->inner + j];
}
