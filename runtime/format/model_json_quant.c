/*
 * model_json_quant.c - what precision changes in a model's files: which
 * weight dtypes each precision accepts (I8 weights with their scales, F16
 * weights) and the "quantization" section of an int8 model.json. Errors
 * name the file and the tensor, like the rest of the loader.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "kernels/kernel_quant.h"
#include "runtime/format/model_json.h"

static enum rt_status dtype_error(const char *name, enum rt_dtype got, const char *expected, enum rt_precision prec,
                                  struct rt_error *err)
{
    return rt_error_set(err, RT_ERR_BAD_MODEL, "model.safetensors: tensor '%s': dtype %s, expected %s (precision %s)",
                        name, rt_dtype_safetensors_name(got), expected, rt_precision_name(prec));
}

/* Finds and checks "<weight>_scale": F32 [OC], positive finite values. */
static enum rt_status bind_scales(const struct rt_safetensors *st, struct rt_weight *w, struct rt_error *err)
{
    char name[sizeof(w->name) + 8];
    snprintf(name, sizeof(name), "%s_scale", w->name);
    const struct rt_st_tensor *t = rt_safetensors_find(st, name);
    if (w->shape.rank < 1 || w->shape.dims[0] < 1)
        return rt_error_set(err, RT_ERR_BAD_MODEL, "model.safetensors: tensor '%s': an I8 weight needs an output-channel dimension",
                            w->name);
    if (!t)
        return rt_error_set(err, RT_ERR_BAD_MODEL,
                            "model.safetensors: tensor '%s' is missing: I8 weight '%s' needs its per-output-channel F32 scales",
                            name, w->name);
    if (t->dtype != RT_DTYPE_F32)
        return dtype_error(name, t->dtype, "F32", RT_PRECISION_INT8, err);
    if (t->shape.rank != 1 || t->shape.dims[0] != w->shape.dims[0])
        return rt_error_set(err, RT_ERR_BAD_MODEL,
                            "model.safetensors: tensor '%s': shape must be [%lld], one scale per output channel of '%s'",
                            name, (long long)w->shape.dims[0], w->name);
    const float *s = t->data;
    for (int64_t i = 0; i < t->elems; i++) {
        if (!(s[i] > 0) || !isfinite(s[i]))
            return rt_error_set(err, RT_ERR_BAD_MODEL,
                                "model.safetensors: tensor '%s': scale %lld is %g; scales must be positive and finite",
                                name, (long long)i, (double)s[i]);
    }
    w->scale = s;
    return RT_OK;
}

enum rt_status rt_model_json_bind_tensor(const struct rt_safetensors *st, enum rt_precision prec,
                                         struct rt_graph *g, struct rt_node *n, enum rt_wrole role,
                                         const struct rt_st_tensor *t, struct rt_error *err)
{
    struct rt_weight *w = &n->w[role];
    w->shape = t->shape;
    bool quantised = prec == RT_PRECISION_INT8 && role == RT_W_WEIGHT &&
                     rt_op_has(n->op, RT_T_GEMM);
    if (quantised) {
        if (t->dtype != RT_DTYPE_I8)
            return dtype_error(w->name, t->dtype, "I8", prec, err);
        w->q = t->data;
        return bind_scales(st, w, err);
    }
    if (t->dtype == RT_DTYPE_F32) {
        w->data = t->data;
        return RT_OK;
    }
    if (t->dtype != RT_DTYPE_F16 || prec != RT_PRECISION_FP16)
        return dtype_error(w->name, t->dtype, prec == RT_PRECISION_FP16 ? "F32 or F16" : "F32", prec, err);
    float *f = rt_graph_alloc(g, (size_t)t->elems);
    if (!f)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory converting '%s'", w->name);
    const uint8_t *h = t->data;
    for (int64_t i = 0; i < t->elems; i++)
        f[i] = k_f32_from_f16((uint16_t)(h[2 * i] | h[2 * i + 1] << 8));   /* little endian */
    w->data = f;
    return RT_OK;
}

enum rt_status rt_model_json_quantization(const struct cJSON *q, const char *label, struct rt_graph *g,
                                          struct rt_error *err)
{
    if (!q)
        return rt_error_set(err, RT_ERR_BAD_MODEL,
                            "%s: quantization: required for precision \"int8\" (the calibrated activation scales)", label);
    const cJSON *scales = cJSON_GetObjectItemCaseSensitive(q, "activation_scales");
    const cJSON *calib = cJSON_GetObjectItemCaseSensitive(q, "calibration_images");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(q, "method");
    if (!cJSON_IsObject(q) || !cJSON_IsObject(scales))
        return rt_error_set(err, RT_ERR_BAD_MODEL,
                            "%s: quantization: must be an object with \"activation_scales\": {tensor: scale, ...}", label);
    if ((method && !cJSON_IsString(method)) || (calib && !cJSON_IsNumber(calib)))
        return rt_error_set(err, RT_ERR_BAD_MODEL,
                            "%s: quantization: 'method' must be a string and 'calibration_images' a number", label);
    const cJSON *v;
    cJSON_ArrayForEach(v, scales) {
        int t = rt_graph_tensor(g, v->string, false);
        if (t < 0)
            return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: quantization: activation_scales: '%.64s' names no tensor of the graph",
                                label, v->string);
        float s = cJSON_IsNumber(v) ? (float)v->valuedouble : NAN;
        if (!(s > 0) || !isfinite(s))
            return rt_error_set(err, RT_ERR_BAD_MODEL,
                                "%s: quantization: activation scale of tensor '%s' must be a positive finite number",
                                label, v->string);
        g->tensors[t].scale = s;
    }
    return RT_OK;
}
