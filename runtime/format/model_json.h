/*
 * model_json.h - parse model.json (format_version 1, docs/model-format.md)
 * into the serving config and the raw graph, binding weights by name to the
 * already validated safetensors file.
 */
#ifndef RT_MODEL_JSON_H
#define RT_MODEL_JSON_H

#include "runtime/core/graph.h"
#include "runtime/format/safetensors.h"

/* text need not be NUL-terminated. cfg and g must be zeroed by the caller;
 * on error g may hold partial contents (free it with rt_graph_free).
 * labels_file (RT_NAME_MAX bytes) receives the label file name or "". */
enum rt_status rt_model_json_parse(const char *text, size_t len, const char *label,
                                   const struct rt_safetensors *st, struct rt_model_config *cfg,
                                   struct rt_graph *g, char *labels_file, struct rt_error *err);

/* model.json beside a model.onnx: serving settings only (format_version,
 * name, precision, batching, instances, preprocessing, labels, and the
 * quantization section of an int8 model). cfg's inputs and outputs and the
 * graph g come from the ONNX file, already parsed; "inputs", "outputs" and
 * "nodes" are refused. */
enum rt_status rt_model_json_parse_serving(const char *text, size_t len, const char *label,
                                           struct rt_model_config *cfg, struct rt_graph *g, char *labels_file,
                                           struct rt_error *err);

/* Precision rules for weights (model_json_quant.c). Binds safetensors
 * tensor t as weight `role` of node n (w->name already set): F32 always;
 * F16 in fp16 models (converted to float, owned by g); I8 only as the
 * weight of a conv2d or linear in an int8 model, which must be I8, with
 * its per-output-channel scales in the F32 tensor "<name>_scale" [OC],
 * every one positive and finite. */
enum rt_status rt_model_json_bind_tensor(const struct rt_safetensors *st, enum rt_precision prec,
                                         struct rt_graph *g, struct rt_node *n, enum rt_wrole role,
                                         const struct rt_st_tensor *t, struct rt_error *err);

/* The "quantization" section of an int8 model: activation_scales maps
 * tensor names of the graph to positive finite scales, stored in
 * g->tensors[].scale. q is a cJSON object (NULL when absent: an error). */
struct cJSON;
enum rt_status rt_model_json_quantization(const struct cJSON *q, const char *label, struct rt_graph *g,
                                          struct rt_error *err);

#endif /* RT_MODEL_JSON_H */
