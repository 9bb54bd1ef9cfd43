/*
 * icl_infer.c - KServe v2 inference: encoding a request as JSON (tensor
 * data inline) or with Triton's binary tensor extension (JSON header, then
 * raw data), and decoding either kind of answer into icl_tensors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "icl_impl.h"

/* Tensor data travels little-endian; the library copies it as is. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "icl_infer.c assumes a little-endian host"
#endif

static uint16_t load_u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }

static float half_to_float(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float mag = e == 0 ? ldexpf((float)m, -24)
              : e == 31 ? (m ? NAN : INFINITY)
                        : ldexpf((float)(m | 0x400), e - 25);
    return (h & 0x8000) ? -mag : mag;
}

static uint16_t float_to_half(float f)
{
    /* Only for decoding JSON numbers into FP16 outputs; round to nearest. */
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    float a = fabsf(f);
    if (isnan(a))
        return sign | 0x7e00;
    if (a >= 65520.0f)
        return sign | 0x7c00;
    if (a < ldexpf(1, -14))
        return sign | (uint16_t)lrintf(a * ldexpf(1, 24));
    int e;
    float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    long mant = lrintf((m * 2 - 1) * 1024);
    if (mant == 1024) {
        mant = 0;
        e++;
    }
    return sign | (uint16_t)((e + 14) << 10) | (uint16_t)mant;
}

/* Element i of data (datatype dt) as a JSON number or boolean. False for
 * values JSON cannot carry (NaN, infinities). */
static bool put_value(struct icl_buf *b, const char *dt, const uint8_t *p)
{
    double d;
    if (strcmp(dt, "FP32") == 0) {
        float f;
        memcpy(&f, p, 4);
        d = f;
    } else if (strcmp(dt, "FP64") == 0) {
        memcpy(&d, p, 8);
    } else if (strcmp(dt, "FP16") == 0) {
        d = half_to_float(load_u16(p));
    } else if (strcmp(dt, "BF16") == 0) {
        uint32_t bits = (uint32_t)load_u16(p) << 16;
        float f;
        memcpy(&f, &bits, 4);
        d = f;
    } else if (strcmp(dt, "BOOL") == 0) {
        icl_buf_puts(b, *p ? "true" : "false");
        return true;
    } else {
        /* integers: print exactly, never through a double */
        size_t size = icl_datatype_size(dt);
        bool is_signed = dt[0] == 'I';
        uint64_t u = 0;
        memcpy(&u, p, size);
        if (is_signed && size < 8 && (u >> (size * 8 - 1)) & 1)
            u |= ~(uint64_t)0 << (size * 8);
        if (is_signed)
            icl_buf_printf(b, "%lld", (long long)(int64_t)u);
        else
            icl_buf_printf(b, "%llu", (unsigned long long)u);
        return true;
    }
    if (!isfinite(d))
        return false;
    icl_buf_printf(b, strcmp(dt, "FP64") == 0 ? "%.17g" : "%.9g", d);
    return true;
}

static enum icl_status put_data(struct icl_buf *b, const struct icl_tensor *t, int64_t elems,
                                struct icl_error *err)
{
    icl_buf_puts(b, ",\"data\":[");
    if (strcmp(t->datatype, "BYTES") == 0) {
        for (int64_t i = 0; i < elems; i++) {
            const char *s;
            size_t len;
            icl_tensor_string(t, i, &s, &len); /* validated by the caller */
            if (i)
                icl_buf_puts(b, ",");
            icl_buf_json_str(b, s, len);
        }
    } else {
        size_t size = icl_datatype_size(t->datatype);
        for (int64_t i = 0; i < elems; i++) {
            if (i)
                icl_buf_puts(b, ",");
            if (!put_value(b, t->datatype, (const uint8_t *)t->data + (size_t)i * size))
                return icl_fail(err, ICL_ERR_INVALID,
                                "input '%s' holds NaN or infinity, which JSON cannot carry "
                                "(send it binary)", t->name);
        }
    }
    icl_buf_puts(b, "]");
    return ICL_OK;
}

/* Checks one input's description against its data; *elems gets its count. */
static enum icl_status check_input(const struct icl_tensor *t, int64_t *elems,
                                   struct icl_error *err)
{
    size_t size = icl_datatype_size(t->datatype);
    bool bytes = strcmp(t->datatype, "BYTES") == 0;
    if (!t->name[0] || (!size && !bytes) || t->rank < 0 || t->rank > ICL_MAX_DIMS)
        return icl_fail(err, ICL_ERR_INVALID, "input '%s': needs a name, a known datatype "
                        "and at most %d dimensions", t->name, ICL_MAX_DIMS);
    *elems = icl_shape_elements(t->shape, t->rank);
    if (*elems < 0)
        return icl_fail(err, ICL_ERR_INVALID, "input '%s': bad shape", t->name);
    if (!t->data && t->byte_size)
        return icl_fail(err, ICL_ERR_INVALID, "input '%s': no data", t->name);
    if (bytes) {
        const char *s;
        size_t len;
        if ((*elems > 0 && !icl_tensor_string(t, *elems - 1, &s, &len)) ||
            icl_tensor_string(t, *elems, &s, &len))
            return icl_fail(err, ICL_ERR_INVALID, "input '%s': BYTES data does not hold "
                            "%lld elements", t->name, (long long)*elems);
    } else if ((uint64_t)*elems > SIZE_MAX / size || t->byte_size != (size_t)*elems * size) {
        return icl_fail(err, ICL_ERR_INVALID, "input '%s': %zu bytes of data for %lld %s "
                        "elements", t->name, t->byte_size, (long long)*elems, t->datatype);
    }
    return ICL_OK;
}

enum icl_status icl_infer_encode(const struct icl_infer_request *req, uint8_t **body,
                                 size_t *len, size_t *header_len, struct icl_error *err)
{
    icl_error_clear(err);
    *body = NULL;
    *len = *header_len = 0;
    if (req->n_inputs < 1 || req->n_inputs > ICL_MAX_IO || req->n_outputs < 0 ||
        req->n_outputs > ICL_MAX_IO)
        return icl_fail(err, ICL_ERR_INVALID, "a request needs 1..%d inputs and at most %d "
                        "outputs", ICL_MAX_IO, ICL_MAX_IO);
    struct icl_buf b = {0};
    enum icl_status st = ICL_OK;
    icl_buf_puts(&b, "{");
    if (req->id) {
        icl_buf_puts(&b, "\"id\":");
        icl_buf_json_str(&b, req->id, strlen(req->id));
        icl_buf_puts(&b, ",");
    }
    icl_buf_puts(&b, "\"inputs\":[");
    for (int i = 0; i < req->n_inputs && st == ICL_OK; i++) {
        const struct icl_tensor *t = &req->inputs[i];
        int64_t elems = 0;
        if ((st = check_input(t, &elems, err)) != ICL_OK)
            break;
        icl_buf_puts(&b, i ? ",{\"name\":" : "{\"name\":");
        icl_buf_json_str(&b, t->name, strlen(t->name));
        icl_buf_printf(&b, ",\"datatype\":\"%s\",\"shape\":[", t->datatype);
        for (int d = 0; d < t->rank; d++)
            icl_buf_printf(&b, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        icl_buf_puts(&b, "]");
        if (req->binary_inputs)
            icl_buf_printf(&b, ",\"parameters\":{\"binary_data_size\":%zu}", t->byte_size);
        else
            st = put_data(&b, t, elems, err);
        icl_buf_puts(&b, "}");
    }
    icl_buf_puts(&b, "]");
    for (int i = 0; i < req->n_outputs && st == ICL_OK; i++) {
        const struct icl_output_request *o = &req->outputs[i];
        if (!o->name || !o->name[0] || o->classification < 0) {
            st = icl_fail(err, ICL_ERR_INVALID, "output %d: needs a name", i);
            break;
        }
        icl_buf_puts(&b, i ? ",{\"name\":" : ",\"outputs\":[{\"name\":");
        icl_buf_json_str(&b, o->name, strlen(o->name));
        icl_buf_printf(&b, ",\"parameters\":{\"binary_data\":%s",
                       req->binary_outputs ? "true" : "false");
        if (o->classification)
            icl_buf_printf(&b, ",\"classification\":%d", o->classification);
        icl_buf_puts(&b, i + 1 == req->n_outputs ? "}}]" : "}}");
    }
    if (req->timeout_us > 0 || (req->binary_outputs && req->n_outputs == 0)) {
        icl_buf_puts(&b, ",\"parameters\":{");
        if (req->timeout_us > 0)
            icl_buf_printf(&b, "\"timeout\":%lld%s", (long long)req->timeout_us,
                           req->binary_outputs && req->n_outputs == 0 ? "," : "");
        if (req->binary_outputs && req->n_outputs == 0)
            icl_buf_puts(&b, "\"binary_data_output\":true");
        icl_buf_puts(&b, "}");
    }
    icl_buf_puts(&b, "}");
    size_t json_len = b.len;
    for (int i = 0; st == ICL_OK && req->binary_inputs && i < req->n_inputs; i++)
        icl_buf_append(&b, req->inputs[i].data, req->inputs[i].byte_size);
    if (st == ICL_OK && b.failed)
        st = icl_fail(err, ICL_ERR_NO_MEMORY, "out of memory encoding the request");
    if (st != ICL_OK) {
        icl_buf_free(&b);
        return st;
    }
    *body = b.data;
    *len = b.len;
    *header_len = json_len;
    return ICL_OK;
}

/* ------------------------------------------------------------ answers */

/* Appends one JSON value, converted to datatype dt, to b. */
static bool get_value(struct icl_buf *b, const char *dt, const cJSON *v)
{
    if (strcmp(dt, "BYTES") == 0) {
        if (!cJSON_IsString(v))
            return false;
        size_t n = strlen(v->valuestring);
        uint8_t le[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
        icl_buf_append(b, le, 4);
        icl_buf_append(b, v->valuestring, n);
        return true;
    }
    if (strcmp(dt, "BOOL") == 0) {
        if (!cJSON_IsBool(v))
            return false;
        uint8_t x = cJSON_IsTrue(v);
        icl_buf_append(b, &x, 1);
        return true;
    }
    if (!cJSON_IsNumber(v))
        return false;
    double d = v->valuedouble;
    size_t size = icl_datatype_size(dt);
    if (strcmp(dt, "FP32") == 0) {
        float f = (float)d;
        icl_buf_append(b, &f, 4);
    } else if (strcmp(dt, "FP64") == 0) {
        icl_buf_append(b, &d, 8);
    } else if (strcmp(dt, "FP16") == 0) {
        uint16_t h = float_to_half((float)d);
        icl_buf_append(b, &h, 2);
    } else if (strcmp(dt, "BF16") == 0) {
        float f = (float)d;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        uint16_t h = (uint16_t)(bits >> 16);
        icl_buf_append(b, &h, 2);
    } else if (size) {
        /* integers; 64-bit values beyond 2^53 lose precision in cJSON already */
        uint64_t u = dt[0] == 'I' ? (uint64_t)(int64_t)d : (uint64_t)d;
        icl_buf_append(b, &u, size);
    } else {
        return false;
    }
    return true;
}

static bool get_values(struct icl_buf *b, const char *dt, const cJSON *arr, int depth)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, arr) {
        bool ok = cJSON_IsArray(v) ? depth < ICL_MAX_DIMS && get_values(b, dt, v, depth + 1)
                                   : get_value(b, dt, v);
        if (!ok)
            return false;
    }
    return true;
}

void icl_infer_result_free(struct icl_infer_result *r)
{
    free(r->storage);
    memset(r, 0, sizeof(*r));
}

/* Parses the JSON header of an answer and the binary data after it. */
static enum icl_status decode(const uint8_t *body, size_t len, size_t json_len,
                              struct icl_infer_result *out, struct icl_error *err)
{
    cJSON *root = cJSON_ParseWithLength((const char *)body, json_len);
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(root, "outputs"), *o;
    if (!cJSON_IsObject(root) || !cJSON_IsArray(outs) || cJSON_GetArraySize(outs) > ICL_MAX_IO) {
        cJSON_Delete(root);
        return icl_fail(err, ICL_ERR_PROTOCOL, "the inference answer is not a KServe v2 response");
    }
    icl_json_str(root, "model_name", out->model_name, sizeof(out->model_name));
    icl_json_str(root, "model_version", out->model_version, sizeof(out->model_version));
    icl_json_str(root, "id", out->id, sizeof(out->id));
    struct icl_buf data = {0};
    size_t offsets[ICL_MAX_IO], bin = json_len;
    bool ok = true;
    cJSON_ArrayForEach(o, outs) {
        struct icl_tensor *t = &out->outputs[out->n_outputs];
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(o, "parameters");
        const cJSON *bsize = cJSON_GetObjectItemCaseSensitive(params, "binary_data_size");
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "data");
        offsets[out->n_outputs] = data.len;
        if (!(ok = icl_json_tensor_desc(o, t)))
            break;
        if (cJSON_IsNumber(bsize)) {
            double n = bsize->valuedouble;
            if (!(ok = n >= 0 && n <= (double)(len - bin)))
                break;
            icl_buf_append(&data, body + bin, (size_t)n);
            bin += (size_t)n;
        } else if (!(ok = cJSON_IsArray(arr) && get_values(&data, t->datatype, arr, 1))) {
            break;
        }
        t->byte_size = data.len - offsets[out->n_outputs];
        out->n_outputs++;
    }
    cJSON_Delete(root);
    if (!ok || data.failed) {
        int bad = out->n_outputs;
        icl_buf_free(&data);
        memset(out, 0, sizeof(*out));
        return ok ? icl_fail(err, ICL_ERR_NO_MEMORY, "out of memory for the answer")
                  : icl_fail(err, ICL_ERR_PROTOCOL, "output %d of the answer is malformed", bad);
    }
    out->storage = data.data;
    for (int i = 0; i < out->n_outputs; i++)
        out->outputs[i].data = data.data ? data.data + offsets[i] : NULL;
    return ICL_OK;
}

enum icl_status icl_infer_body(struct icl_client *c, const char *model, const void *body,
                               size_t len, size_t header_len, struct icl_infer_result *out,
                               struct icl_error *err)
{
    memset(out, 0, sizeof(*out));
    char path[600];
    if (header_len > len)
        return icl_fail(err, ICL_ERR_INVALID, "header length beyond the body");
    if (!icl_model_path(path, sizeof(path), model, "/infer", err))
        return ICL_ERR_INVALID;
    struct icl_response resp;
    enum icl_status st = icl_exchange_binary(c, path, body, len, header_len, &resp, err);
    if (st == ICL_OK) {
        size_t json_len = resp.len;
        if (resp.header_len >= 0 && (uint64_t)resp.header_len <= resp.len)
            json_len = (size_t)resp.header_len;
        else if (resp.header_len != -1)
            st = icl_fail(err, ICL_ERR_PROTOCOL, "bad Inference-Header-Content-Length");
        if (st == ICL_OK)
            st = decode(resp.body, resp.len, json_len, out, err);
    }
    icl_response_free(&resp);
    return st;
}

enum icl_status icl_infer(struct icl_client *c, const char *model,
                          const struct icl_infer_request *req, struct icl_infer_result *out,
                          struct icl_error *err)
{
    memset(out, 0, sizeof(*out));
    uint8_t *body;
    size_t len, header_len;
    enum icl_status st = icl_infer_encode(req, &body, &len, &header_len, err);
    if (st != ICL_OK)
        return st;
    st = icl_infer_body(c, model, body, len, header_len, out, err);
    free(body);
    return st;
}
