/*
 * kref_pad.c - reference padding: every output element's coordinates
 * mapped back into the input one dim at a time. The oracle for kcpu_pad.c.
 */
#include "kref.h"

/* The input index along a dim of d that output position k (counted from
 * the input's first element: negative in the begin pad) reads, or -1
 * where the constant fills it. */
static int64_t source(enum k_pad_mode mode, int64_t k, int64_t d)
{
    if (k >= 0 && k < d)
        return k;
    switch (mode) {
    case K_PAD_EDGE: return k < 0 ? 0 : d - 1;
    case K_PAD_REFLECT: return d == 1 ? 0 : k < 0 ? -k : 2 * (d - 1) - k;
    case K_PAD_CONSTANT: break;
    }
    return -1;
}

void kref_pad_f32(const struct k_pad *p, const float *x, float *y)
{
    int64_t in_elems = 1, out_elems = 1;
    for (int d = 0; d < p->rank; d++) {
        in_elems *= p->dims[d];
        out_elems *= p->begin[d] + p->dims[d] + p->end[d];
    }
    for (int s = 0; s < p->n; s++)
        for (int64_t i = 0; i < out_elems; i++) {
            int64_t rest = i, at = 0, scale = 1;
            for (int d = p->rank - 1; d >= 0 && at >= 0; d--) {
                int64_t len = p->begin[d] + p->dims[d] + p->end[d];
                int64_t k = source(p->mode, rest % len - p->begin[d], p->dims[d]);
                at = k < 0 ? -1 : at + k * scale;
                scale *= p->dims[d];
                rest /= len;
            }
            y[s * out_elems + i] = at < 0 ? p->value : x[s * in_elems + at];
        }
}
