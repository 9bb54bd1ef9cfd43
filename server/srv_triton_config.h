/*
 * srv_triton_config.h - a model's config.pbtxt, Triton's model
 * configuration, read for the fields that mean something to inferd:
 * name, platform / backend, max_batch_size, input / output (name,
 * data_type, dims), dynamic_batching (preferred_batch_size,
 * max_queue_delay_microseconds, default_queue_policy's max_queue_size and
 * default_timeout_microseconds), instance_group (count, kind, name),
 * version_policy and default_model_filename. Any other field is refused by
 * its name, never ignored (docs/model-format.md lists the subset).
 *
 *     struct srv_triton_config c;
 *     srv_triton_config_parse(text, len, "m", &c, &err);   // at load
 *     ... pick version folders with c.policy ...
 *     rt source .configure = srv_triton_config_apply, .user = &c
 */
#ifndef SRV_TRITON_CONFIG_H
#define SRV_TRITON_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "runtime/rt_model.h"

#define SRV_MAX_VERSIONS 16

enum srv_version_policy { SRV_VERSIONS_LATEST = 0, SRV_VERSIONS_ALL, SRV_VERSIONS_SPECIFIC };

/* One input or output as config.pbtxt declares it, checked against the model's. */
struct srv_triton_io {
    char name[RT_NAME_MAX];
    char data_type[32];          /* "TYPE_FP32"...; "" when not given */
    bool has_dims;
    struct rt_shape dims;        /* without the batch dimension; -1: any size */
    int line, col;
};

struct srv_triton_config {
    char model[RT_NAME_MAX];     /* the folder's name, for messages */
    bool onnx;                   /* platform onnxruntime_onnx or backend onnxruntime */
    bool has_max_batch;
    int max_batch_size;
    int n_inputs, n_outputs;
    struct srv_triton_io inputs[RT_MAX_IO], outputs[RT_MAX_IO];
    bool has_preferred, has_delay, has_queue_size, has_timeout;
    int preferred[RT_MAX_PREFERRED], n_preferred;
    int64_t max_queue_delay_us, default_timeout_us;
    int max_queue_size;
    bool has_instances;
    int instance_count;
    enum rt_instance_kind instance_kind;
    enum srv_version_policy policy;
    int latest;                  /* num_versions of the latest policy */
    int64_t versions[SRV_MAX_VERSIONS];   /* the specific policy's, ascending */
    int n_versions;
    char model_filename[RT_NAME_MAX];     /* default_model_filename; "" when not given */
    bool from_load_request;      /* the load API's parameters.config, not config.pbtxt (for messages) */
};

/* The defaults when a model has no config.pbtxt: the latest version only. */
void srv_triton_config_default(const char *model, struct srv_triton_config *out);

/* Parses a config.pbtxt of model folder `model`. RT_ERR_BAD_MODEL for text
 * that is malformed, a field of the wrong kind or out of range, a name that
 * is not the folder's, or an unsupported field or platform (named);
 * messages read "model/config.pbtxt:line:col: ...". */
enum rt_status srv_triton_config_parse(const char *text, size_t len, const char *model,
                                       struct srv_triton_config *out, struct rt_error *err);

/* The same from the JSON model configuration of the load API's
 * parameters.config (protobuf's JSON mapping: enum values and 64-bit
 * integers may be strings, field names lowerCamelCase). Errors read
 * "model: parameters.config: ...". */
enum rt_status srv_triton_config_from_json(const cJSON *root, const char *model, struct srv_triton_config *out,
                                           struct rt_error *err);

/* The rt_model_source configure hook (user: a struct srv_triton_config):
 * lays the settings over cfg and checks the declared inputs and outputs
 * against the model's (names, data types, dims). */
enum rt_status srv_triton_config_apply(const void *user, struct rt_model_config *cfg, struct rt_error *err);

#endif /* SRV_TRITON_CONFIG_H */
