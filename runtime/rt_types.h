/*
 * rt_types.h - data types and small shared descriptions used across the
 * runtime's public API (model config, tensors at the model's edges).
 */
#ifndef RT_TYPES_H
#define RT_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_MAX_DIMS 8
#define RT_NAME_MAX 64

/* Element types. Names follow safetensors (F32, I8, ...); rt_dtype_kserve()
 * gives the KServe v2 name (FP32, INT8, ...). */
#define RT_DTYPE_LIST(X)                   \
    X(RT_DTYPE_F32, "F32", "FP32", 4)      \
    X(RT_DTYPE_F16, "F16", "FP16", 2)      \
    X(RT_DTYPE_BF16, "BF16", "BF16", 2)    \
    X(RT_DTYPE_F64, "F64", "FP64", 8)      \
    X(RT_DTYPE_I8, "I8", "INT8", 1)        \
    X(RT_DTYPE_U8, "U8", "UINT8", 1)       \
    X(RT_DTYPE_I16, "I16", "INT16", 2)     \
    X(RT_DTYPE_U16, "U16", "UINT16", 2)    \
    X(RT_DTYPE_I32, "I32", "INT32", 4)     \
    X(RT_DTYPE_U32, "U32", "UINT32", 4)    \
    X(RT_DTYPE_I64, "I64", "INT64", 8)     \
    X(RT_DTYPE_U64, "U64", "UINT64", 8)    \
    X(RT_DTYPE_BOOL, "BOOL", "BOOL", 1)

enum rt_dtype {
#define RT_DTYPE_ENUM(e, st, ks, size) e,
    RT_DTYPE_LIST(RT_DTYPE_ENUM)
#undef RT_DTYPE_ENUM
    RT_DTYPE_COUNT
};

size_t rt_dtype_size(enum rt_dtype t);
const char *rt_dtype_safetensors_name(enum rt_dtype t);
const char *rt_dtype_kserve_name(enum rt_dtype t);
/* Parse a safetensors / KServe name; false when unknown. */
bool rt_dtype_from_safetensors(const char *name, enum rt_dtype *out);
bool rt_dtype_from_kserve(const char *name, enum rt_dtype *out);

enum rt_precision { RT_PRECISION_FP32 = 0, RT_PRECISION_FP16, RT_PRECISION_INT8 };
const char *rt_precision_name(enum rt_precision p);

/* A tensor shape. At a model's edges dims[0] is -1, the batch dimension. */
struct rt_shape {
    int rank;
    int64_t dims[RT_MAX_DIMS];
};

#endif /* RT_TYPES_H */
