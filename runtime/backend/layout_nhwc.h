/*
 * layout_nhwc.h - which activation tensors of a plan a GPU backend keeps
 * channels last (NHWC), so that its convolutions read 16-byte pieces of
 * consecutive channels instead of one element at a time. Plain host code
 * (no CUDA), so the rules are tested on any machine.
 *
 * The layout is a property of a tensor: its arena bytes hold [n, c, h, w]
 * or [n, h, w, c], never both, so no step converts and no extra buffer is
 * needed. The edges convert as they go: a convolution reads either layout
 * and writes either, and global average pooling reads either and writes
 * [n, c]. Every other rank-4 tensor takes the layout its steps allow:
 *
 *   - convolution: x NHWC only where conv_takes_nhwc says its gather can
 *     read it; y and its fused residual share one layout;
 *   - activations, add, batch norm, max / average pooling and concat along
 *     channels: all their tensors share one layout;
 *   - global average pooling: x either, y NCHW;
 *   - every other step (and INT8 steps): NCHW.
 *
 * Model inputs and outputs, tensors seen through a view (flatten,
 * reshape: they read NCHW order) and tensors of other ranks are NCHW.
 * Starting from "NHWC wherever a step writes a rank-4 tensor", the pass
 * turns tensors back to NCHW until every step's rule holds (a fixed point:
 * it only ever turns tensors to NCHW, so it ends). A model whose first
 * convolution reads the NCHW input then runs NHWC up to the convolution or
 * pooling that leaves it: ResNet's blocks, residuals included, stay NHWC
 * from the stem's output to the global pool.
 *
 * The CPU keeps its INT8 steps channels last (RT_NHWC_Q8_STEPS), where its
 * channels-last convolution (kcpu_conv2d_q8_nhwc) serves the shape; its
 * float steps stay NCHW:
 *
 *   - convolution: y NHWC only where conv_takes_nhwc holds, the residual
 *     alike; x NHWC only into NHWC y (the kernel's padded copy of x turns
 *     NCHW round, nothing turns y round);
 *   - activations (tables), add and max pooling: one layout;
 *   - global average pooling: x either, y [n, c];
 *   - every other step NCHW.
 */
#ifndef RT_LAYOUT_NHWC_H
#define RT_LAYOUT_NHWC_H

#include <stdbool.h>

#include "runtime/core/plan.h"

/* Whether the backend's convolution can read NHWC x for this shape. */
typedef bool (*rt_nhwc_conv_rule)(const struct k_conv2d *p, void *user);

/* Which steps a backend keeps channels last where it can; the others keep
 * every tensor NCHW. */
enum rt_nhwc_steps {
    RT_NHWC_FLOAT_STEPS,   /* the GPU's: the rules above */
    RT_NHWC_Q8_STEPS,      /* the CPU's INT8 steps, below */
};

/* Fills nhwc[t] for every tensor t of p->g (p->g->n_tensors entries, the
 * caller's): true where t is stored NHWC. */
void rt_nhwc_plan(const struct rt_plan *p, enum rt_nhwc_steps which, rt_nhwc_conv_rule conv_takes_nhwc, void *user,
                  bool *nhwc);

#endif /* RT_LAYOUT_NHWC_H */
