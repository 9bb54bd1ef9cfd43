/*
 * rt_model_json.h - parse model.json (format_version 1, docs/model-format.md)
 * into the serving config and the raw graph, binding weights by name to the
 * already validated safetensors file.
 */
#ifndef RT_MODEL_JSON_H
#define RT_MODEL_JSON_H

#include "rt_graph.h"

/* text need not be NUL-terminated. cfg and g must be zeroed by the caller;
 * on error g may hold partial contents (free it with rt_graph_free).
 * labels_file (RT_NAME_MAX bytes) receives the label file name or "". */
enum rt_status rt_model_json_parse(const char *text, size_t len, const char *label,
                                   const struct rt_safetensors *st, struct rt_model_config *cfg,
                                   struct rt_graph *g, char *labels_file, struct rt_error *err);

#endif /* RT_MODEL_JSON_H */
