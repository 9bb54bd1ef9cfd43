/* rt_types.c - dtype tables. */
#include "runtime/rt_types.h"

#include <string.h>

struct dtype_info {
    const char *st_name;
    const char *kserve_name;
    size_t size;
};

static const struct dtype_info DTYPES[] = {
#define RT_DTYPE_INFO(e, st, ks, size) {st, ks, size},
    RT_DTYPE_LIST(RT_DTYPE_INFO)
#undef RT_DTYPE_INFO
};
_Static_assert(sizeof(DTYPES) / sizeof(DTYPES[0]) == RT_DTYPE_COUNT, "one entry per dtype");

size_t rt_dtype_size(enum rt_dtype t) { return (unsigned)t < RT_DTYPE_COUNT ? DTYPES[t].size : 0; }

const char *rt_dtype_safetensors_name(enum rt_dtype t)
{
    return (unsigned)t < RT_DTYPE_COUNT ? DTYPES[t].st_name : "?";
}

const char *rt_dtype_kserve_name(enum rt_dtype t)
{
    return (unsigned)t < RT_DTYPE_COUNT ? DTYPES[t].kserve_name : "?";
}

bool rt_dtype_from_safetensors(const char *name, enum rt_dtype *out)
{
    for (int i = 0; i < RT_DTYPE_COUNT; i++) {
        if (strcmp(name, DTYPES[i].st_name) == 0) {
            *out = (enum rt_dtype)i;
            return true;
        }
    }
    return false;
}

bool rt_dtype_from_kserve(const char *name, enum rt_dtype *out)
{
    for (int i = 0; i < RT_DTYPE_COUNT; i++) {
        if (strcmp(name, DTYPES[i].kserve_name) == 0) {
            *out = (enum rt_dtype)i;
            return true;
        }
    }
    return false;
}

const char *rt_precision_name(enum rt_precision p)
{
    switch (p) {
    case RT_PRECISION_FP32: return "fp32";
    case RT_PRECISION_FP16: return "fp16";
    case RT_PRECISION_INT8: return "int8";
    }
    return "?";
}
