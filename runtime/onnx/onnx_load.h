/*
 * onnx_load.h - ONNX models and tensors, read natively (internal to the
 * runtime; rt_model_load uses it when a model folder holds model.onnx).
 *
 *     struct rt_model_config cfg = {0};
 *     struct rt_graph g = {0};
 *     if (rt_onnx_load("m/model.onnx", "m/model.onnx", &cfg, &g, &err) != RT_OK)
 *         ...   // err: RT_ERR_UNSUPPORTED (valid ONNX inferd cannot run, naming
 *               // the node, its op type and what is missing) or
 *               // RT_ERR_BAD_MODEL (malformed), RT_ERR_IO, RT_ERR_NO_MEMORY
 *     rt_graph_finish(&g, &cfg, ...);        // as for model.json
 *
 * The file is parsed with protobuf-c (code generated at build time from the
 * onnx.proto of Debian's libonnx-dev), its nodes mapped onto runtime ops with
 * ONNX semantics (docs/onnx.md lists ops, opsets and limits), constants
 * copied into buffers the graph owns. The protobuf is freed before return.
 *
 * Batch: the runtime's tensors are [batch, ...]. When every graph input has
 * the same first dimension (symbolic, or one fixed size) and no node mixes
 * values along it, that dimension becomes the batch ("batch mode": input
 * [N, 3, 32, 32] serves as [-1, 3, 32, 32]). Otherwise each whole ONNX input
 * is one sample ("whole mode": [3, 4, 5] serves as [-1, 3, 4, 5]; a batch of
 * b runs the graph b times); this needs fully fixed input shapes.
 */
#ifndef RT_ONNX_LOAD_H
#define RT_ONNX_LOAD_H

#include "runtime/core/graph.h"

#define RT_ONNX_MAX_BYTES (1u << 30)   /* largest model.onnx accepted */

/* Fills cfg's inputs and outputs (names, FP32, runtime shapes) and graph g
 * (zeroed by the caller; on error it may hold partial contents: free it
 * with rt_graph_free). label names the file in errors. */
enum rt_status rt_onnx_parse(const uint8_t *data, size_t len, const char *label, struct rt_model_config *cfg,
                             struct rt_graph *g, struct rt_error *err);
/* rt_onnx_parse over the file at path (at most RT_ONNX_MAX_BYTES). */
enum rt_status rt_onnx_load(const char *path, const char *label, struct rt_model_config *cfg, struct rt_graph *g,
                            struct rt_error *err);

/* A serialised TensorProto (the ONNX test suite's input_N.pb files). */
struct rt_onnx_tensor {
    char name[RT_NAME_MAX];     /* "" when unnamed or too long */
    int elem_type;              /* ONNX TensorProto.DataType */
    struct rt_shape shape;      /* the ONNX dims (rank 0 for a scalar) */
    int64_t elems;
    float *data;                /* elems values, owned; FP32 tensors only */
};

/* Only float tensors (FLOAT, FLOAT16, DOUBLE, BFLOAT16) decode; other types
 * are RT_ERR_UNSUPPORTED. Free with rt_onnx_tensor_free. */
enum rt_status rt_onnx_tensor_parse(const uint8_t *data, size_t len, const char *label, struct rt_onnx_tensor *out,
                                    struct rt_error *err);
void rt_onnx_tensor_free(struct rt_onnx_tensor *t);

#endif /* RT_ONNX_LOAD_H */
