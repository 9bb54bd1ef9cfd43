/*
 * model_write.h - writes a loaded graph back out as a model folder
 * (internal; inferctl quantize and convert).
 *
 * The graph is written as loaded: batch norms that follow a convolution
 * are folded into it, so the output holds conv2d / linear with biases and
 * no such batch_norm nodes. The weights are stored per precision: F32
 * (fp32), F16 (fp16), or for int8 symmetric per-output-channel I8 conv2d /
 * linear weights with "<name>_scale" F32 [OC] beside them and F32 biases.
 */
#ifndef RT_MODEL_WRITE_H
#define RT_MODEL_WRITE_H

#include "runtime/core/graph.h"

struct rt_write_options {
    const char *name;               /* model name: the output folder's */
    enum rt_precision precision;
    /* int8: the "quantization" section */
    const float *act_scales;        /* per graph tensor id; 0 = not written */
    const char *method;
    int calibration_images;
};

/* Writes dir/model.json, dir/model.safetensors and, when cfg has labels,
 * dir/labels.txt; dir must exist. model.json keeps every serving setting of
 * source_json (the source model.json) and replaces name, precision, nodes
 * and quantization; format_version, inputs and outputs it lacks (an ONNX
 * folder's model.json, or "{}" for none) come from cfg. The graph must be
 * an FP32 one (no quantize nodes); a
 * graph with ops model.json cannot name (an ONNX graph's binary, unary,
 * reduce, ...) is refused with RT_ERR_UNSUPPORTED, nothing written. */
enum rt_status rt_model_write(const char *dir, const char *source_json, size_t source_len,
                              const struct rt_model_config *cfg, const struct rt_graph *g,
                              const struct rt_write_options *opt, struct rt_error *err);

#endif /* RT_MODEL_WRITE_H */
