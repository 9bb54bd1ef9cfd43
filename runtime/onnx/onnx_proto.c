/*
 * onnx_proto.c - the protobuf layer of the ONNX loader: unpacking with
 * protobuf-c under two limits, and decoding TensorProto data.
 *
 * protobuf-c trusts its input more than a server can afford to: unpacking
 * recurses once per nested message, and a few wire bytes (an empty repeated
 * message, a packed varint) become a struct of a hundred bytes or an int64.
 * So before unpacking, a walk over the wire format guided by the generated
 * descriptors bounds the nesting depth, and the unpacker allocates through a
 * budget proportional to the input size. Both failures are clear errors.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/onnx/onnx_impl.h"

#define MAX_DEPTH 48                     /* ModelProto -> ... -> Dimension is 7 */
#define BUDGET_BASE (64u << 20)          /* allocation budget: base + FACTOR * input */
#define BUDGET_FACTOR 8u

/* ------------------------------------------------------------ allocator */

/* Each block carries its size in a header so that frees return budget. */
#define HDR 16

static void *budget_alloc(void *data, size_t size)
{
    struct onnx_proto *b = data;
    if (size > b->limit - b->used) {
        b->exceeded = true;
        return NULL;
    }
    size_t *p = malloc(size + HDR);
    if (!p)
        return NULL;
    p[0] = size;
    b->used += size;
    return (char *)p + HDR;
}

static void budget_free(void *data, void *ptr)
{
    if (!ptr)
        return;
    struct onnx_proto *b = data;
    size_t *p = (size_t *)(void *)((char *)ptr - HDR);
    b->used -= p[0];
    free(p);
}

/* ------------------------------------------------------------ wire walk */

enum walk { WALK_OK, WALK_MALFORMED, WALK_TOO_DEEP };

static bool varint(const uint8_t *p, size_t len, size_t *i, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *i < len; shift += 7) {
        uint8_t byte = p[(*i)++];
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* Checks every field's framing and the depth of nested messages. */
static enum walk walk(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len, int depth)
{
    if (depth > MAX_DEPTH)
        return WALK_TOO_DEEP;
    size_t i = 0;
    while (i < len) {
        uint64_t key, n;
        if (!varint(p, len, &i, &key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
            return WALK_MALFORMED;
        switch (key & 7) {
        case 0:
            if (!varint(p, len, &i, &n))
                return WALK_MALFORMED;
            break;
        case 1:
            if (len - i < 8)
                return WALK_MALFORMED;
            i += 8;
            break;
        case 5:
            if (len - i < 4)
                return WALK_MALFORMED;
            i += 4;
            break;
        case 2: {
            if (!varint(p, len, &i, &n) || n > len - i)
                return WALK_MALFORMED;
            const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3));
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                enum walk w = walk(f->descriptor, p + i, (size_t)n, depth + 1);
                if (w != WALK_OK)
                    return w;
            }
            i += (size_t)n;
            break;
        }
        default:   /* groups (3, 4) are not in onnx.proto; 6, 7 do not exist */
            return WALK_MALFORMED;
        }
    }
    return WALK_OK;
}

struct onnx_proto *onnx_unpack(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len,
                               const char *label, struct rt_error *err)
{
    if (len > RT_ONNX_MAX_BYTES) {
        rt_error_set(err, RT_ERR_TOO_LARGE, "%s: larger than %u bytes", label, RT_ONNX_MAX_BYTES);
        return NULL;
    }
    enum walk w = walk(d, data, len, 0);
    if (w != WALK_OK) {
        rt_error_set(err, RT_ERR_BAD_MODEL, "%s: %s", label,
                     w == WALK_TOO_DEEP ? "messages nested too deeply" : "not a valid protobuf (bad framing)");
        return NULL;
    }
    struct onnx_proto *p = calloc(1, sizeof(*p));
    if (!p) {
        rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    p->limit = BUDGET_BASE + BUDGET_FACTOR * len;
    p->alloc = (ProtobufCAllocator){budget_alloc, budget_free, p};
    p->msg = protobuf_c_message_unpack(d, &p->alloc, len, data);
    if (!p->msg) {
        if (p->exceeded)
            rt_error_set(err, RT_ERR_TOO_LARGE, "%s: decoding needs more than %zu bytes of memory", label, p->limit);
        else
            rt_error_set(err, RT_ERR_BAD_MODEL, "%s: not a valid %s protobuf", label, d->short_name);
        onnx_proto_free(p);
        return NULL;
    }
    return p;
}

void onnx_proto_free(struct onnx_proto *p)
{
    if (!p)
        return;
    if (p->msg)
        protobuf_c_message_free_unpacked(p->msg, &p->alloc);
    free(p);
}

/* ------------------------------------------------------------ tensor data */

static const char *const TYPE_NAMES[] = {
    "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
    "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
};

const char *onnx_type_name(int type)
{
    return type >= 0 && type < (int)(sizeof(TYPE_NAMES) / sizeof(TYPE_NAMES[0])) ? TYPE_NAMES[type] : "unknown";
}

/* Bytes per element in raw_data; 0 for types this loader does not decode. */
static size_t type_size(int type)
{
    switch (type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        return 8;
    default:
        return 0;
    }
}

bool onnx_type_is_float(int type)
{
    return type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
           type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE || type == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

static float half_to_float(uint32_t h)
{
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v = exp == 0    ? ldexpf((float)mant, -24)
              : exp == 31 ? (mant ? NAN : INFINITY)
                          : ldexpf((float)(mant | 0x400), (int)exp - 25);
    return (h & 0x8000) ? -v : v;
}

static float bf16_to_float(uint32_t h)
{
    uint32_t bits = (h & 0xffff) << 16;
    float v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

/* Element k of a little-endian raw buffer of the given type. */
static double raw_float(int type, const uint8_t *p, int64_t k)
{
    switch (type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: {
        float v;
        memcpy(&v, p + 4 * k, 4);
        return v;
    }
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: {
        double v;
        memcpy(&v, p + 8 * k, 8);
        return v;
    }
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        return half_to_float((uint32_t)p[2 * k] | (uint32_t)p[2 * k + 1] << 8);
    default:
        return bf16_to_float((uint32_t)p[2 * k] | (uint32_t)p[2 * k + 1] << 8);
    }
}

static int64_t raw_int(int type, const uint8_t *p, int64_t k)
{
    size_t size = type_size(type);
    uint64_t v = 0;
    for (size_t b = 0; b < size; b++)
        v |= (uint64_t)p[(size_t)k * size + b] << (8 * b);
    return onnx_int_wrap(type, v);
}

int64_t onnx_int_wrap(int type, uint64_t v)
{
    switch (type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return (int8_t)v;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return (int16_t)v;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return (int32_t)v;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return (uint8_t)v;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return (uint16_t)v;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return (uint32_t)v;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return v != 0;
    default: return (int64_t)v;
    }
}

/* How many values the typed field for t's type holds. */
static size_t typed_count(const Onnx__TensorProto *t)
{
    switch (t->data_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return t->n_float_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return t->n_int64_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return t->n_double_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return t->n_uint64_data;
    default: return t->n_int32_data;   /* the narrow ints, bool, and the 16-bit floats as bits */
    }
}

static bool other_fields_set(const Onnx__TensorProto *t)
{
    return t->n_float_data || t->n_int32_data || t->n_int64_data || t->n_double_data || t->n_uint64_data ||
           t->n_string_data;
}

enum rt_status onnx_data_decode(const Onnx__TensorProto *t, const char *label, const char *what,
                                struct onnx_data *out, struct rt_error *err)
{
    memset(out, 0, sizeof(*out));
    out->type = t->has_data_type ? t->data_type : 0;
    if (t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL || t->n_external_data)
        return rt_error_set(err, RT_ERR_UNSUPPORTED,
                            "%s: tensor '%.64s': external data is not supported (keep the weights inside the file)",
                            label, what);
    if (t->segment)
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "%s: tensor '%.64s': segmented tensors are not supported", label,
                            what);
    if (type_size(out->type) == 0)
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "%s: tensor '%.64s': data type %s is not supported", label, what,
                            onnx_type_name(out->type));
    if (t->n_dims > RT_MAX_DIMS)
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "%s: tensor '%.64s': more than %d dimensions", label, what,
                            RT_MAX_DIMS);
    out->shape.rank = (int)t->n_dims;
    out->elems = 1;
    for (size_t k = 0; k < t->n_dims; k++) {
        if (t->dims[k] < 0 || t->dims[k] > ONNX_MAX_DIM ||
            __builtin_mul_overflow(out->elems, t->dims[k], &out->elems) || out->elems > ONNX_MAX_ELEMS)
            return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: tensor '%.64s': negative or absurd dimensions", label,
                                what);
        out->shape.dims[k] = t->dims[k];
    }
    size_t size = type_size(out->type), count = (size_t)out->elems;
    const uint8_t *raw = NULL;
    if (size == 0)
        return rt_error_set(err, RT_ERR_INTERNAL, "%s: tensor '%.64s': element size 0", label, what);
    if (t->has_raw_data) {
        if (other_fields_set(t))
            return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: tensor '%.64s': both raw_data and a typed field", label,
                                what);
        if (t->raw_data.len / size != count || t->raw_data.len % size != 0)
            return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: tensor '%.64s': raw_data holds %zu bytes, its dims need %zu",
                                label, what, t->raw_data.len, count * size);
        raw = t->raw_data.data;
    } else if (typed_count(t) != count) {
        return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: tensor '%.64s': holds %zu values, its dims need %zu", label,
                            what, typed_count(t), count);
    }
    if (onnx_type_is_float(out->type)) {
        float *f = out->f = malloc(sizeof(float) * (count ? count : 1));
        if (!f)
            return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
        for (size_t k = 0; k < count; k++) {
            if (raw)
                f[k] = (float)raw_float(out->type, raw, (int64_t)k);
            else if (out->type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
                f[k] = t->float_data[k];
            else if (out->type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
                f[k] = (float)t->double_data[k];
            else if (out->type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16)
                f[k] = half_to_float((uint32_t)t->int32_data[k]);
            else
                f[k] = bf16_to_float((uint32_t)t->int32_data[k]);
        }
        return RT_OK;
    }
    int64_t *v = out->i = malloc(sizeof(int64_t) * (count ? count : 1));
    if (!v)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    for (size_t k = 0; k < count; k++) {
        if (raw)
            v[k] = raw_int(out->type, raw, (int64_t)k);
        else if (out->type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64)
            v[k] = t->int64_data[k];
        else if (out->type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 ||
                 out->type == ONNX__TENSOR_PROTO__DATA_TYPE__UINT64)
            v[k] = (int64_t)t->uint64_data[k];
        else
            v[k] = t->int32_data[k];
    }
    return RT_OK;
}

void onnx_data_free(struct onnx_data *d)
{
    free(d->f);
    free(d->i);
    memset(d, 0, sizeof(*d));
}

/* ------------------------------------------------------------ test tensors */

enum rt_status rt_onnx_tensor_parse(const uint8_t *data, size_t len, const char *label, struct rt_onnx_tensor *out,
                                    struct rt_error *err)
{
    memset(out, 0, sizeof(*out));
    struct onnx_proto *p = onnx_unpack(&onnx__tensor_proto__descriptor, data, len, label, err);
    if (!p)
        return err->status;
    const Onnx__TensorProto *t = (const Onnx__TensorProto *)p->msg;
    struct onnx_data d;
    const char *name = t->name ? t->name : "";
    enum rt_status s = onnx_data_decode(t, label, name, &d, err);
    if (s == RT_OK && !d.f)
        s = rt_error_set(err, RT_ERR_UNSUPPORTED, "%s: tensor '%.64s' is %s, not a float type", label, name,
                         onnx_type_name(d.type));
    if (s == RT_OK) {
        if (strlen(name) < RT_NAME_MAX)
            memcpy(out->name, name, strlen(name) + 1);
        out->elem_type = d.type;
        out->shape = d.shape;
        out->elems = d.elems;
        out->data = d.f;
        d.f = NULL;
    }
    onnx_data_free(&d);
    onnx_proto_free(p);
    return s;
}

void rt_onnx_tensor_free(struct rt_onnx_tensor *t)
{
    free(t->data);
    memset(t, 0, sizeof(*t));
}
