/*
 * kref_concat.c - reference concatenation along one axis.
 */
#include "kref.h"

void kref_concat_f32(const struct k_concat *p, const float *const *inputs,
                     const int64_t *lens, float *y)
{
    int64_t total = 0;
    for (int i = 0; i < p->count; i++)
        total += lens[i];
    for (int64_t o = 0; o < p->outer; o++) {
        int64_t at = 0;
        for (int i = 0; i < p->count; i++) {
            int64_t run = lens[i] * p->inner;
            const float *src = inputs[i] + o * run;
            float *dst = y + (o * total + at) * p->inner;
            for (int64_t e = 0; e < run; e++)
                dst[e] = src[e];
            at += lens[i];
        }
    }
}
