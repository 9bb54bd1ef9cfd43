/*
 * srv_infer.h - the KServe v2 inference request and response, as native
 * structs, and their conversion from and to the wire.
 *
 * Parsing checks everything against the model before any work is queued:
 * input names (each exactly once), datatypes (converted to FP32 only where
 * that is lossless), shapes, element counts, the binary tensor extension's
 * sizes, the limits. The parsed request owns one FP32 buffer per model input
 * ([rows, sample...], row-major) and one per model output for the results.
 */
#ifndef SRV_INFER_H
#define SRV_INFER_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/rt_model.h"
#include "srv_buf.h"

#define SRV_INFER_ID_MAX 256

/* One output the client asked for (or every output when it named none). */
struct srv_infer_output {
    int index;                 /* into cfg->outputs */
    bool binary;               /* binary tensor extension */
    int classification;        /* > 0: top-k classes as BYTES "score:index:label" */
};

struct srv_infer_req {
    char id[SRV_INFER_ID_MAX]; /* echoed when has_id */
    bool has_id;
    int rows;                  /* the batch dimension shared by every input */
    float *inputs[RT_MAX_IO];  /* [rows * cfg->inputs[i].sample_elems] */
    float *outputs[RT_MAX_IO]; /* [rows * cfg->outputs[i].sample_elems] */
    int n_outputs;
    struct srv_infer_output outputs_req[RT_MAX_IO];
    int64_t timeout_us;        /* parameters.timeout; 0: none */
};

struct srv_infer_limits {
    int max_json_depth;
    int64_t max_tensor_elements;
};

/* body[0..json_len) is the JSON header; body[json_len..len) the binary data
 * (json_len == len when there is none). The JSON is edited in place (see
 * srv_json_numbers.h). On failure, err says why (RT_ERR_INVALID,
 * RT_ERR_TOO_LARGE, RT_ERR_NO_MEMORY) and *q holds nothing. */
enum rt_status srv_infer_parse(const struct rt_model_config *cfg, uint8_t *body, size_t len,
                               size_t json_len, const struct srv_infer_limits *lim,
                               struct srv_infer_req *q, struct rt_error *err);
void srv_infer_req_free(struct srv_infer_req *q);

/* Writes the response for a completed request. When any output is binary
 * the JSON header is followed by the binary data, *json_len is the header's
 * length and *binary is true. */
void srv_infer_write_response(const struct rt_model_config *cfg, const char *model_name,
                              const char *model_version, const struct srv_infer_req *q, struct srv_buf *out,
                              size_t *json_len, bool *binary);

#endif /* SRV_INFER_H */
