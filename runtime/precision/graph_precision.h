/*
 * graph_precision.h - the graph pass that turns a loaded FP32 graph into its
 * FP16 or INT8 form (internal to the runtime; docs/quantization.md).
 */
#ifndef RT_GRAPH_PRECISION_H
#define RT_GRAPH_PRECISION_H

#include "runtime/core/graph.h"

/* FP16: rounds every weight through binary16 (after folding, as a GPU
 * converting the folded FP32 weights would). INT8: gives every tensor its
 * dtype and scale and inserts the float edges:
 *  - conv2d, linear, activations, pooling, add, concat, flatten, reshape run
 *    on I8 tensors; batch_norm (unfolded) and softmax run in FP32 between a
 *    dequantize and a quantize;
 *  - a quantize node turns each model input (F32) into I8, a dequantize
 *    node turns I8 back into F32 for each model output;
 *  - a conv2d / linear none of whose readers is an INT8 op (the classifier)
 *    writes its I32 accumulators, dequantised per channel;
 *  - max pooling, flatten and reshape keep their input's scale (a scale
 *    given for their output must equal it); every other I8 tensor needs a
 *    scale in model.json, else RT_ERR_BAD_MODEL naming the tensor.
 * FP32: nothing. `label` names model.json in errors. */
enum rt_status rt_graph_apply_precision(struct rt_graph *g, const struct rt_model_config *cfg,
                                        const char *label, struct rt_error *err);

#endif /* RT_GRAPH_PRECISION_H */
