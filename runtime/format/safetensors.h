/*
 * safetensors.h - a validated, memory-mapped safetensors file.
 *
 * The file is mapped read-only; tensor data pointers point into the mapping
 * and stay valid until rt_safetensors_close(). rt_safetensors_open checks
 * the whole header before returning: header length inside the file, a JSON
 * object, known dtypes, non-negative dims whose byte size matches the
 * data_offsets range without overflow, every range inside the data, aligned
 * to its element size, and no two ranges overlapping. Errors are
 * RT_ERR_BAD_MODEL naming `label` (the file as the user should see it) and
 * the tensor.
 */
#ifndef RT_SAFETENSORS_H
#define RT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/rt_status.h"
#include "runtime/rt_types.h"

#define RT_SAFETENSORS_MAX_HEADER ((uint64_t)100 * 1024 * 1024)

struct rt_st_tensor {
    char *name;
    enum rt_dtype dtype;
    struct rt_shape shape;
    int64_t elems;
    size_t nbytes;
    const void *data;
};

struct rt_st_meta {
    char *key;
    char *value;
};

struct rt_safetensors {
    void *map;
    size_t map_len;
    int n_tensors;
    struct rt_st_tensor *tensors;
    int n_meta;
    struct rt_st_meta *meta;
};

enum rt_status rt_safetensors_open(const char *path, const char *label, struct rt_safetensors *out,
                                   struct rt_error *err);
/* Same checks on a buffer in memory (fuzzing, tests). Data points into buf. */
enum rt_status rt_safetensors_parse(const void *buf, size_t len, const char *label,
                                    struct rt_safetensors *out, struct rt_error *err);
void rt_safetensors_close(struct rt_safetensors *st);

/* NULL when absent. */
const struct rt_st_tensor *rt_safetensors_find(const struct rt_safetensors *st, const char *name);
const char *rt_safetensors_meta(const struct rt_safetensors *st, const char *key);

/* Writing (quantisation tool, tests): tensors in the given order, each data
 * offset aligned to 8 bytes. meta may be NULL. */
struct rt_st_write {
    const char *name;
    enum rt_dtype dtype;
    struct rt_shape shape;
    const void *data;
};

enum rt_status rt_safetensors_write(const char *path, const struct rt_st_write *tensors, int n,
                                    const struct rt_st_meta *meta, int n_meta, struct rt_error *err);

#endif /* RT_SAFETENSORS_H */
