/*
 * builder.h - small ONNX models built in memory for tests (protobuf-c
 * structs packed into the wire format), so each test states its graph in a
 * few lines and can then break the bytes.
 *
 *     struct ob *m = ob_new(13);
 *     ob_input(m, "x", 2, (int64_t[]){-1, 4});      // -1: symbolic "N"
 *     ob_init(m, "w", 2, (int64_t[]){4, 3}, data);  // float initializer
 *     struct ob_node *n = ob_node(m, "MatMul", "mm", "x,w", "y");
 *     ob_output(m, "y");
 *     size_t len; uint8_t *bytes = ob_pack(m, &len); // malloc'd
 *     ob_free(m);
 */
#ifndef ONNX_BUILDER_H
#define ONNX_BUILDER_H

#include <stddef.h>
#include <stdint.h>

struct ob;
struct ob_node;

/* opset 0: no ai.onnx import. */
struct ob *ob_new(int opset);
void ob_free(struct ob *m);
/* A float graph input; dims[i] == -1 is the symbol "N" (other negative
 * values are written as they are, for tests of bad files). */
void ob_input(struct ob *m, const char *name, int rank, const int64_t *dims);
/* A graph output, without a declared shape. */
void ob_output(struct ob *m, const char *name);
/* A float initializer (data: product(dims) values, as raw_data; NULL
 * writes the dims with no data, for tests of bad files). */
void ob_init(struct ob *m, const char *name, int rank, const int64_t *dims, const float *data);
/* An INT64 initializer (as int64_data). */
void ob_init_i64(struct ob *m, const char *name, int rank, const int64_t *dims, const int64_t *data);
/* A node; inputs and outputs are comma-separated names ("" for none). */
struct ob_node *ob_node(struct ob *m, const char *op, const char *name, const char *inputs, const char *outputs);
void ob_attr_int(struct ob *m, struct ob_node *n, const char *name, int64_t v);
void ob_attr_float(struct ob *m, struct ob_node *n, const char *name, float v);
void ob_attr_ints(struct ob *m, struct ob_node *n, const char *name, int count, const int64_t *v);
void ob_attr_string(struct ob *m, struct ob_node *n, const char *name, const char *v);
/* Marks initializer `name` as stored in an external file. */
void ob_init_external(struct ob *m, const char *name);
/* The serialised ModelProto (malloc'd). */
uint8_t *ob_pack(struct ob *m, size_t *len);

#endif /* ONNX_BUILDER_H */
