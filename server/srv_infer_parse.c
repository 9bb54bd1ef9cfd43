/*
 * srv_infer_parse.c - a KServe v2 inference request (JSON, optionally with
 * Triton's binary tensor data after it) into struct srv_infer_req.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_checked.h"
#include "srv_infer.h"
#include "srv_json.h"
#include "srv_json_numbers.h"

void srv_infer_req_free(struct srv_infer_req *q)
{
    for (int i = 0; i < RT_MAX_IO; i++) {
        free(q->inputs[i]);
        free(q->outputs[i]);
    }
    memset(q, 0, sizeof(*q));
}

/* JSON values a request may hold besides its tensor data: names, shapes,
 * parameters, requested outputs. */
#define SRV_INFER_JSON_VALUES 4096

/* ------------------------------------------------------------ datatypes */

/* Datatypes whose every value is exactly an FP32 value. */
static bool lossless_to_f32(enum rt_dtype t)
{
    switch (t) {
    case RT_DTYPE_F32: case RT_DTYPE_F16: case RT_DTYPE_BF16: case RT_DTYPE_I8:
    case RT_DTYPE_U8: case RT_DTYPE_I16: case RT_DTYPE_U16: case RT_DTYPE_BOOL:
        return true;
    default:
        return false;
    }
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float mag;
    if (exp == 0)
        mag = ldexpf((float)man, -24);                       /* zero and subnormals */
    else if (exp == 31)
        mag = man ? NAN : INFINITY;
    else
        mag = ldexpf((float)(man | 0x400), (int)exp - 25);
    return sign ? -mag : mag;
}

/* Integer range of an integer datatype. */
static void int_range(enum rt_dtype t, double *lo, double *hi)
{
    switch (t) {
    case RT_DTYPE_I8: *lo = -128; *hi = 127; break;
    case RT_DTYPE_U8: *lo = 0; *hi = 255; break;
    case RT_DTYPE_I16: *lo = -32768; *hi = 32767; break;
    case RT_DTYPE_U16: *lo = 0; *hi = 65535; break;
    default: *lo = -INFINITY; *hi = INFINITY; break;
    }
}

/* Whether d, rounded to nearest, is a finite value of float type t: below
 * the midpoint between the largest finite value and the next power of two
 * (FP16: 65504 and 65536; FP32 and BF16, whose range is FP32's: FLT_MAX). */
static bool float_in_range(double d, enum rt_dtype t)
{
    if (t == RT_DTYPE_F16)
        return fabs(d) < 65520.0;
    return isfinite((float)d);
}

/* One number as datatype t: integer types must hold an integer in range,
 * float types a value they can hold (1e39 is no FP32, 70000 no FP16).
 * nonfinite: NaN and infinities were spelled as such (the fast path's
 * tokens) and are values of every float type; from cJSON an infinity is a
 * literal too large (1e400) and refused. */
static bool number_value(double d, enum rt_dtype t, bool nonfinite, float *out,
                         struct rt_error *err)
{
    if (nonfinite && !isfinite(d) && (t == RT_DTYPE_F32 || t == RT_DTYPE_F16 || t == RT_DTYPE_BF16)) {
        *out = (float)d;
        return true;
    }
    if (t == RT_DTYPE_BOOL) {
        rt_error_set(err, RT_ERR_INVALID, "BOOL data must be true or false");
        return false;
    }
    if ((t == RT_DTYPE_F32 || t == RT_DTYPE_F16 || t == RT_DTYPE_BF16) && !float_in_range(d, t)) {
        rt_error_set(err, RT_ERR_INVALID, "%g is out of the range of %s", d, rt_dtype_kserve_name(t));
        return false;
    }
    if (t != RT_DTYPE_F32 && t != RT_DTYPE_F16 && t != RT_DTYPE_BF16) {
        double lo, hi;
        int_range(t, &lo, &hi);
        if (d != floor(d) || d < lo || d > hi) {
            rt_error_set(err, RT_ERR_INVALID, "%g is not a valid %s value", d,
                         rt_dtype_kserve_name(t));
            return false;
        }
    }
    *out = (float)d;
    return true;
}

static bool json_value(const cJSON *v, enum rt_dtype t, float *out, struct rt_error *err)
{
    if (t == RT_DTYPE_BOOL && cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v) ? 1.0f : 0.0f;
        return true;
    }
    if (!cJSON_IsNumber(v)) {
        rt_error_set(err, RT_ERR_INVALID, "tensor data must hold %s",
                     t == RT_DTYPE_BOOL ? "true or false" : "numbers");
        return false;
    }
    return number_value(v->valuedouble, t, false, out, err);
}

static bool binary_values(const uint8_t *src, int64_t n, enum rt_dtype t, float *dst,
                          struct rt_error *err)
{
    switch (t) {
    case RT_DTYPE_F32:
        memcpy(dst, src, (size_t)n * 4);
        return true;
    case RT_DTYPE_F16:
    case RT_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = (uint16_t)(src[2 * i] | (src[2 * i + 1] << 8));
            if (t == RT_DTYPE_F16) {
                dst[i] = half_to_float(h);
            } else {
                uint32_t bits = (uint32_t)h << 16;
                memcpy(&dst[i], &bits, 4);
            }
        }
        return true;
    case RT_DTYPE_I8: for (int64_t i = 0; i < n; i++) dst[i] = (float)(int8_t)src[i]; return true;
    case RT_DTYPE_U8: for (int64_t i = 0; i < n; i++) dst[i] = (float)src[i]; return true;
    case RT_DTYPE_I16:
    case RT_DTYPE_U16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t u = (uint16_t)(src[2 * i] | (src[2 * i + 1] << 8));
            dst[i] = t == RT_DTYPE_I16 ? (float)(int16_t)u : (float)u;
        }
        return true;
    case RT_DTYPE_BOOL:
        for (int64_t i = 0; i < n; i++) {
            if (src[i] > 1) {
                rt_error_set(err, RT_ERR_INVALID, "BOOL data must be bytes 0 or 1");
                return false;
            }
            dst[i] = src[i];
        }
        return true;
    default:
        break;
    }
    rt_error_set(err, RT_ERR_INVALID, "unsupported datatype");
    return false;
}

/* Flattens nested arrays row-major into dst (the depth was bounded before
 * parsing). */
static bool flatten(const cJSON *arr, enum rt_dtype t, float *dst, int64_t cap, int64_t *n,
                    struct rt_error *err)
{
    for (const cJSON *v = arr->child; v; v = v->next) {
        if (cJSON_IsArray(v)) {
            if (!flatten(v, t, dst, cap, n, err))
                return false;
            continue;
        }
        if (*n >= cap) {
            rt_error_set(err, RT_ERR_INVALID, "data holds more elements than the shape");
            return false;
        }
        if (!json_value(v, t, &dst[*n], err))
            return false;
        (*n)++;
    }
    return true;
}

/* ------------------------------------------------------------ request parts */

struct binary_cursor {
    const uint8_t *p;
    size_t left;
};

static int find_io(const struct rt_io_desc *io, int n, const char *name)
{
    for (int i = 0; i < n; i++) {
        if (strcmp(io[i].name, name) == 0)
            return i;
    }
    return -1;
}

static bool parse_shape(const cJSON *shape, const struct rt_io_desc *io, int max_batch, int *rows,
                        struct rt_error *err)
{
    int rank = cJSON_GetArraySize(shape);
    if (rank != io->shape.rank) {
        rt_error_set(err, RT_ERR_INVALID, "input '%s': shape has %d dimensions, the model's has %d",
                     io->name, rank, io->shape.rank);
        return false;
    }
    int d = 0;
    for (const cJSON *v = shape->child; v; v = v->next, d++) {
        int64_t dim;
        if (!srv_json_int(v, 0, INT32_MAX, "shape dimensions", &dim, err))
            return false;
        if (d == 0) {
            if (dim < 1 || dim > max_batch) {
                rt_error_set(err, RT_ERR_INVALID,
                             "input '%s': batch size %lld is outside 1..%d (max_batch_size)",
                             io->name, (long long)dim, max_batch);
                return false;
            }
            *rows = (int)dim;
        } else if (io->shape.dims[d] >= 0 && dim != io->shape.dims[d]) {
            rt_error_set(err, RT_ERR_INVALID,
                         "input '%s': dimension %d is %lld, the model expects %lld", io->name, d,
                         (long long)dim, (long long)io->shape.dims[d]);
            return false;
        }
    }
    return true;
}

/* The FP32 buffer of an input of elems elements. */
static bool alloc_input(const struct rt_io_desc *io, int64_t elems, float **out, struct rt_error *err)
{
    size_t bytes;
    if (!rt_mul_size((size_t)elems, sizeof(float), &bytes) || !(*out = malloc(bytes)))
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for input '%s'", io->name), false;
    return true;
}

/* Where tensor data comes from besides the JSON tree. */
struct data_sources {
    struct binary_cursor bin;          /* the binary tensor extension */
    struct srv_json_numbers nums;      /* arrays taken out before cJSON */
};

static bool parse_input(const cJSON *in, int position, const struct rt_model_config *cfg,
                        const struct srv_infer_limits *lim, struct data_sources *src,
                        int64_t *total_elems, bool *seen, struct srv_infer_req *q,
                        struct rt_error *err)
{
    const cJSON *name, *dtype, *shape, *data, *params, *bsize = NULL, *shm = NULL;
    if (!cJSON_IsObject(in))
        return rt_error_set(err, RT_ERR_INVALID, "each input must be an object"), false;
    if (!srv_json_get(in, "name", cJSON_String, "input", &name, err) ||
        !srv_json_get(in, "datatype", cJSON_String, "input", &dtype, err) ||
        !srv_json_get(in, "shape", cJSON_Array, "input", &shape, err) ||
        !srv_json_get(in, "data", cJSON_Array, "input", &data, err) ||
        !srv_json_get(in, "parameters", cJSON_Object, "input", &params, err))
        return false;
    if (!name || !dtype || !shape)
        return rt_error_set(err, RT_ERR_INVALID, "each input needs name, datatype and shape"),
               false;
    int idx = find_io(cfg->inputs, cfg->n_inputs, name->valuestring);
    if (idx < 0)
        return rt_error_set(err, RT_ERR_INVALID, "the model has no input named '%s'",
                            name->valuestring), false;
    if (seen[idx])
        return rt_error_set(err, RT_ERR_INVALID, "input '%s' is given twice", name->valuestring),
               false;
    seen[idx] = true;
    const struct rt_io_desc *io = &cfg->inputs[idx];
    enum rt_dtype t;
    if (!rt_dtype_from_kserve(dtype->valuestring, &t) || !lossless_to_f32(t))
        return rt_error_set(err, RT_ERR_INVALID,
                            "input '%s': datatype %s cannot be converted to %s without loss",
                            io->name, dtype->valuestring, rt_dtype_kserve_name(io->dtype)), false;
    int rows = 0;
    if (!parse_shape(shape, io, cfg->max_batch_size, &rows, err))
        return false;
    if (q->rows && rows != q->rows)
        return rt_error_set(err, RT_ERR_INVALID, "inputs disagree on the batch size (%d vs %d)",
                            q->rows, rows), false;
    q->rows = rows;
    int64_t elems = (int64_t)rows * io->sample_elems;
    *total_elems += elems;
    if (*total_elems > lim->max_tensor_elements)
        return rt_error_set(err, RT_ERR_TOO_LARGE, "the request holds more than %lld elements",
                            (long long)lim->max_tensor_elements), false;
    if (params && (!srv_json_get(params, "binary_data_size", cJSON_Number, "input parameters",
                                 &bsize, err) ||
                   !srv_json_get(params, "shared_memory_region", cJSON_String | cJSON_Number,
                                 "input parameters", &shm, err)))
        return false;
    if (shm)
        return rt_error_set(err, RT_ERR_INVALID, "shared memory inputs are not supported"), false;
    if (bsize) {
        int64_t size;
        if (!srv_json_int(bsize, 0, INT64_MAX / 2, "binary_data_size", &size, err))
            return false;
        if (data)
            return rt_error_set(err, RT_ERR_INVALID,
                                "input '%s' has both data and binary_data_size", io->name), false;
        if ((uint64_t)size != (uint64_t)elems * rt_dtype_size(t))
            return rt_error_set(err, RT_ERR_INVALID,
                                "input '%s': binary_data_size %lld does not match the shape "
                                "(%lld elements of %s)",
                                io->name, (long long)size, (long long)elems,
                                rt_dtype_kserve_name(t)), false;
        struct binary_cursor *bin = &src->bin;
        if ((uint64_t)size > bin->left)
            return rt_error_set(err, RT_ERR_INVALID,
                                "input '%s': the binary data is shorter than binary_data_size",
                                io->name), false;
        if (!alloc_input(io, elems, &q->inputs[idx], err) ||
            !binary_values(bin->p, elems, t, q->inputs[idx], err))
            return false;
        bin->p += size;
        bin->left -= (size_t)size;
        return true;
    }
    if (!data)
        return rt_error_set(err, RT_ERR_INVALID, "input '%s' has no data", io->name), false;
    /* The numbers were read before cJSON (srv_json_numbers.h) when the
     * array cJSON sees is empty and the scanner holds them. */
    struct srv_json_numbers *nums = &src->nums;
    bool taken = position < SRV_JSON_NUMBERS_MAX_INPUTS && !data->child;
    int64_t n = 0;
    if (taken && nums->floats[position] && (t == RT_DTYPE_F32 || t == RT_DTYPE_BF16)) {
        /* Already FP32 values, range-checked: the buffer is the tensor. */
        q->inputs[idx] = nums->floats[position];
        nums->floats[position] = NULL;
        n = nums->count[position];
    } else if (!alloc_input(io, elems, &q->inputs[idx], err)) {
        return false;
    } else if (taken && nums->doubles[position]) {
        n = nums->count[position];
        for (int64_t k = 0; k < n && k < elems; k++) {
            if (!number_value(nums->doubles[position][k], t, true, &q->inputs[idx][k], err))
                return rt_error_prefix(err, "input '%s'", io->name), false;
        }
    } else if (!flatten(data, t, q->inputs[idx], elems, &n, err)) {
        return rt_error_prefix(err, "input '%s'", io->name), false;
    }
    if (n != elems)
        return rt_error_set(err, RT_ERR_INVALID,
                            "input '%s': data has %lld elements, the shape needs %lld", io->name,
                            (long long)n, (long long)elems), false;
    return true;
}

static bool parse_outputs(const cJSON *outs, const struct rt_model_config *cfg,
                          bool binary_default, struct srv_infer_req *q, struct rt_error *err)
{
    if (!outs || cJSON_GetArraySize(outs) == 0) {
        q->n_outputs = cfg->n_outputs;
        for (int i = 0; i < cfg->n_outputs; i++)
            q->outputs_req[i] = (struct srv_infer_output){i, binary_default, 0};
        return true;
    }
    bool seen[RT_MAX_IO] = {false};
    for (const cJSON *o = outs->child; o; o = o->next) {
        const cJSON *name, *params, *bin = NULL, *cls = NULL;
        if (!cJSON_IsObject(o))
            return rt_error_set(err, RT_ERR_INVALID, "each requested output must be an object"),
                   false;
        if (!srv_json_get(o, "name", cJSON_String, "output", &name, err) ||
            !srv_json_get(o, "parameters", cJSON_Object, "output", &params, err))
            return false;
        int idx = name ? find_io(cfg->outputs, cfg->n_outputs, name->valuestring) : -1;
        if (idx < 0)
            return rt_error_set(err, RT_ERR_INVALID, "the model has no output named '%s'",
                                name ? name->valuestring : ""), false;
        if (seen[idx])
            return rt_error_set(err, RT_ERR_INVALID, "output '%s' is requested twice",
                                name->valuestring), false;
        seen[idx] = true;
        if (params && (!srv_json_get(params, "binary_data", cJSON_True | cJSON_False,
                                     "output parameters", &bin, err) ||
                       !srv_json_get(params, "classification", cJSON_Number, "output parameters",
                                     &cls, err)))
            return false;
        struct srv_infer_output *r = &q->outputs_req[q->n_outputs++];
        r->index = idx;
        r->binary = bin ? cJSON_IsTrue(bin) : binary_default;
        r->classification = 0;
        if (cls) {
            int64_t k;
            if (!srv_json_int(cls, 1, INT32_MAX, "classification", &k, err))
                return false;
            int64_t classes = cfg->outputs[idx].sample_elems;
            r->classification = (int)(k < classes ? k : classes);
        }
    }
    return true;
}

static bool parse_root(const cJSON *root, const struct rt_model_config *cfg,
                       const struct srv_infer_limits *lim, struct data_sources *src,
                       struct srv_infer_req *q, struct rt_error *err)
{
    const cJSON *id, *params, *inputs, *outputs, *timeout = NULL, *bin_out = NULL;
    if (!cJSON_IsObject(root))
        return rt_error_set(err, RT_ERR_INVALID, "the request must be a JSON object"), false;
    if (!srv_json_get(root, "id", cJSON_String, "request", &id, err) ||
        !srv_json_get(root, "parameters", cJSON_Object, "request", &params, err) ||
        !srv_json_get(root, "inputs", cJSON_Array, "request", &inputs, err) ||
        !srv_json_get(root, "outputs", cJSON_Array, "request", &outputs, err))
        return false;
    if (id) {
        if (strlen(id->valuestring) >= sizeof(q->id))
            return rt_error_set(err, RT_ERR_INVALID, "id is longer than %d bytes",
                                SRV_INFER_ID_MAX - 1), false;
        snprintf(q->id, sizeof(q->id), "%s", id->valuestring);
        q->has_id = true;
    }
    if (params && (!srv_json_get(params, "timeout", cJSON_Number, "parameters", &timeout, err) ||
                   !srv_json_get(params, "binary_data_output", cJSON_True | cJSON_False,
                                 "parameters", &bin_out, err)))
        return false;
    if (timeout && !srv_json_int(timeout, 0, INT64_C(1) << 50, "parameters.timeout (µs)",
                                 &q->timeout_us, err))
        return false;
    if (!inputs || cJSON_GetArraySize(inputs) == 0)
        return rt_error_set(err, RT_ERR_INVALID, "the request has no inputs"), false;
    bool seen[RT_MAX_IO] = {false};
    int64_t total = 0;
    int position = 0;
    for (const cJSON *in = inputs->child; in; in = in->next, position++) {
        if (!parse_input(in, position, cfg, lim, src, &total, seen, q, err))
            return false;
    }
    for (int i = 0; i < cfg->n_inputs; i++) {
        if (!seen[i])
            return rt_error_set(err, RT_ERR_INVALID, "input '%s' is missing", cfg->inputs[i].name),
                   false;
    }
    if (src->bin.left)
        return rt_error_set(err, RT_ERR_INVALID,
                            "%zu bytes of binary data are not claimed by any input", src->bin.left),
               false;
    return parse_outputs(outputs, cfg, bin_out && cJSON_IsTrue(bin_out), q, err);
}

enum rt_status srv_infer_parse(const struct rt_model_config *cfg, uint8_t *body, size_t len,
                               size_t json_len, const struct srv_infer_limits *lim,
                               struct srv_infer_req *q, struct rt_error *err)
{
    memset(q, 0, sizeof(*q));
    if (json_len == 0)
        return rt_error_set(err, RT_ERR_INVALID, "empty request body");
    struct data_sources src = {.bin = {body + json_len, len - json_len}};
    /* The most elements the model could take in one request: the fast path
     * takes no more, and cJSON is not let near a body of many more values
     * (one ~80-byte node each) than that. */
    int64_t need = 0;
    for (int i = 0; i < cfg->n_inputs; i++)
        need += cfg->inputs[i].sample_elems;
    need = need > lim->max_tensor_elements / cfg->max_batch_size ? lim->max_tensor_elements
                                                                 : need * cfg->max_batch_size;
    /* The tensor data taken out first (its scanner is iterative and bounded),
     * so the checks below and cJSON read only what is left. */
    json_len = srv_json_numbers_take((char *)body, json_len, need, &src.nums);
    if (src.nums.depth > lim->max_json_depth ||
        !srv_json_depth_ok((const char *)body, json_len, lim->max_json_depth)) {
        srv_json_numbers_free(&src.nums);
        return rt_error_set(err, RT_ERR_INVALID, "JSON nested deeper than %d levels",
                            lim->max_json_depth);
    }
    /* When every tensor's data was taken, what is left for cJSON is the
     * request's small change; else the data is in it too. */
    int64_t allowed = SRV_INFER_JSON_VALUES + (src.nums.complete ? 0 : need);
    if (srv_json_value_bound((const char *)body, json_len) > allowed) {
        srv_json_numbers_free(&src.nums);
        return rt_error_set(err, RT_ERR_TOO_LARGE,
                            "the request holds more JSON values than the model's inputs can take "
                            "(%lld elements)", (long long)need);
    }
    cJSON *root = srv_json_parse_checked((const char *)body, json_len, &src.nums.cuts, err);
    bool ok = root && parse_root(root, cfg, lim, &src, q, err);
    cJSON_Delete(root);
    srv_json_numbers_free(&src.nums);
    for (int i = 0; ok && i < cfg->n_outputs; i++) {
        size_t elems, bytes;
        if (!rt_mul_size((size_t)q->rows, (size_t)cfg->outputs[i].sample_elems, &elems) ||
            !rt_mul_size(elems, sizeof(float), &bytes) ||
            !(q->outputs[i] = malloc(bytes))) {
            rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for the outputs");
            ok = false;
        }
    }
    if (!ok) {
        srv_infer_req_free(q);
        return err->status;
    }
    return RT_OK;
}
