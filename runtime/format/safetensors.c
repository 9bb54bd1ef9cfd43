/* safetensors.c - parse and validate a safetensors file (see format/safetensors.h). */
#include "runtime/format/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/rt_checked.h"

struct range {
    uint64_t begin, end;
    int tensor;
};

static int compare_ranges(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static enum rt_status bad(struct rt_error *err, const char *label, const char *tensor, const char *what)
{
    if (tensor)
        return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: tensor '%.64s': %s", label, tensor, what);
    return rt_error_set(err, RT_ERR_BAD_MODEL, "%s: %s", label, what);
}

/* JSON numbers are doubles: accept only exact non-negative integers below 2^53. */
static bool json_uint(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v))
        return false;
    double d = v->valuedouble;
    if (!(d >= 0) || d > 9007199254740992.0 || d != (double)(uint64_t)d)
        return false;
    *out = (uint64_t)d;
    return true;
}

static enum rt_status parse_tensor(const cJSON *item, const char *label, uint64_t data_len,
                                   struct rt_st_tensor *t, struct range *r, struct rt_error *err)
{
    const char *name = item->string;
    if (!cJSON_IsObject(item))
        return bad(err, label, name, "entry is not an object");
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dtype) || !rt_dtype_from_safetensors(dtype->valuestring, &t->dtype))
        return bad(err, label, name, "missing or unknown dtype");
    if (!cJSON_IsArray(shape))
        return bad(err, label, name, "missing shape");
    int rank = cJSON_GetArraySize(shape);
    if (rank > RT_MAX_DIMS)
        return bad(err, label, name, "too many dimensions");
    t->shape.rank = rank;
    int i = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, shape) {
        uint64_t v;
        if (!json_uint(d, &v) || v > (uint64_t)INT64_MAX)
            return bad(err, label, name, "dimension is not a non-negative integer");
        t->shape.dims[i++] = (int64_t)v;
    }
    size_t esize = rt_dtype_size(t->dtype), nbytes;
    if (!rt_dims_product(t->shape.dims, rank, &t->elems) ||
        !rt_mul_size((size_t)t->elems, esize, &nbytes))
        return bad(err, label, name, "shape overflows");
    t->nbytes = nbytes;
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
        !json_uint(cJSON_GetArrayItem(offsets, 0), &r->begin) ||
        !json_uint(cJSON_GetArrayItem(offsets, 1), &r->end))
        return bad(err, label, name, "data_offsets must be two non-negative integers");
    if (r->end < r->begin || r->end > data_len)
        return bad(err, label, name, "data_offsets out of range");
    if (r->end - r->begin != nbytes)
        return bad(err, label, name, "byte length does not match dtype and shape");
    return RT_OK;
}

static enum rt_status parse_metadata(const cJSON *item, const char *label, struct rt_safetensors *st,
                                     struct rt_error *err)
{
    if (!cJSON_IsObject(item))
        return bad(err, label, NULL, "__metadata__ is not an object");
    int n = cJSON_GetArraySize(item);
    st->meta = calloc((size_t)n + 1, sizeof(*st->meta));
    if (!st->meta)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "%s: out of memory", label);
    const cJSON *kv;
    cJSON_ArrayForEach(kv, item) {
        if (!cJSON_IsString(kv))
            return bad(err, label, NULL, "__metadata__ values must be strings");
        struct rt_st_meta *m = &st->meta[st->n_meta++];
        m->key = strdup(kv->string);
        m->value = strdup(kv->valuestring);
        if (!m->key || !m->value)
            return rt_error_set(err, RT_ERR_NO_MEMORY, "%s: out of memory", label);
    }
    return RT_OK;
}

static enum rt_status parse_header(const cJSON *root, const char *label, const uint8_t *data,
                                   uint64_t data_len, size_t data_file_offset,
                                   struct rt_safetensors *st, struct rt_error *err)
{
    if (!cJSON_IsObject(root))
        return bad(err, label, NULL, "header is not a JSON object");
    int n = cJSON_GetArraySize(root);
    st->tensors = calloc((size_t)n + 1, sizeof(*st->tensors));
    struct range *ranges = calloc((size_t)n + 1, sizeof(*ranges));
    if (!st->tensors || !ranges) {
        free(ranges);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "%s: out of memory", label);
    }
    enum rt_status s = RT_OK;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        if (strcmp(item->string, "__metadata__") == 0) {
            if (st->meta) {
                s = bad(err, label, NULL, "duplicate __metadata__");
                break;
            }
            if ((s = parse_metadata(item, label, st, err)) != RT_OK)
                break;
            continue;
        }
        if (rt_safetensors_find(st, item->string)) {
            s = bad(err, label, item->string, "duplicate tensor name");
            break;
        }
        struct rt_st_tensor *t = &st->tensors[st->n_tensors];
        struct range *r = &ranges[st->n_tensors];
        if ((s = parse_tensor(item, label, data_len, t, r, err)) != RT_OK)
            break;
        size_t esize = rt_dtype_size(t->dtype);
        if ((data_file_offset + r->begin) % esize != 0) {
            s = bad(err, label, item->string, "data is not aligned to its element size");
            break;
        }
        t->name = strdup(item->string);
        if (!t->name) {
            s = rt_error_set(err, RT_ERR_NO_MEMORY, "%s: out of memory", label);
            break;
        }
        t->data = data + r->begin;
        r->tensor = st->n_tensors++;
    }
    if (s == RT_OK) {
        qsort(ranges, (size_t)st->n_tensors, sizeof(*ranges), compare_ranges);
        for (int i = 1; i < st->n_tensors; i++) {
            if (ranges[i].begin < ranges[i - 1].end) {
                s = bad(err, label, st->tensors[ranges[i].tensor].name,
                        "data overlaps another tensor");
                break;
            }
        }
    }
    free(ranges);
    return s;
}

enum rt_status rt_safetensors_parse(const void *buf, size_t len, const char *label,
                                    struct rt_safetensors *out, struct rt_error *err)
{
    memset(out, 0, sizeof(*out));
    const uint8_t *bytes = buf;
    if (len < 8)
        return bad(err, label, NULL, "file too short for a safetensors header");
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--)
        header_len = (header_len << 8) | bytes[i];
    if (header_len > len - 8)
        return bad(err, label, NULL, "header length runs past the end of the file");
    if (header_len > RT_SAFETENSORS_MAX_HEADER)
        return bad(err, label, NULL, "header too large");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts((const char *)bytes + 8, (size_t)header_len, &end, 0);
    if (!root)
        return bad(err, label, NULL, "header is not valid JSON");
    size_t data_off = 8 + (size_t)header_len;
    enum rt_status s = parse_header(root, label, bytes + data_off, len - data_off, data_off, out, err);
    cJSON_Delete(root);
    if (s != RT_OK)
        rt_safetensors_close(out);
    return s;
}

enum rt_status rt_safetensors_open(const char *path, const char *label, struct rt_safetensors *out,
                                   struct rt_error *err)
{
    memset(out, 0, sizeof(*out));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rt_error_set(err, errno == ENOENT ? RT_ERR_NOT_FOUND : RT_ERR_IO, "%s: cannot open (%s)",
                            label, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return bad(err, label, NULL, "not a regular file");
    }
    size_t len = (size_t)sb.st_size;
    if (len < 8) {
        close(fd);
        return bad(err, label, NULL, "file too short for a safetensors header");
    }
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return rt_error_set(err, RT_ERR_IO, "%s: cannot map (%s)", label, strerror(errno));
    enum rt_status s = rt_safetensors_parse(map, len, label, out, err);
    if (s != RT_OK) {
        munmap(map, len);
        return s;
    }
    out->map = map;
    out->map_len = len;
    return RT_OK;
}

void rt_safetensors_close(struct rt_safetensors *st)
{
    for (int i = 0; i < st->n_tensors; i++)
        free(st->tensors[i].name);
    for (int i = 0; i < st->n_meta; i++) {
        free(st->meta[i].key);
        free(st->meta[i].value);
    }
    free(st->tensors);
    free(st->meta);
    if (st->map)
        munmap(st->map, st->map_len);
    memset(st, 0, sizeof(*st));
}

const struct rt_st_tensor *rt_safetensors_find(const struct rt_safetensors *st, const char *name)
{
    for (int i = 0; i < st->n_tensors; i++) {
        if (st->tensors[i].name && strcmp(st->tensors[i].name, name) == 0)
            return &st->tensors[i];
    }
    return NULL;
}

const char *rt_safetensors_meta(const struct rt_safetensors *st, const char *key)
{
    for (int i = 0; i < st->n_meta; i++) {
        if (strcmp(st->meta[i].key, key) == 0)
            return st->meta[i].value;
    }
    return NULL;
}
