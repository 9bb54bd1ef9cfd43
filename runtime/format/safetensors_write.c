/* safetensors_write.c - write a safetensors file (see format/safetensors.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_checked.h"
#include "runtime/format/safetensors.h"

static size_t tensor_bytes(const struct rt_st_write *t)
{
    int64_t elems = 1;
    RT_ASSERT(rt_dims_product(t->shape.dims, t->shape.rank, &elems));
    return (size_t)elems * rt_dtype_size(t->dtype);
}

static char *build_header(const struct rt_st_write *tensors, int n, const struct rt_st_meta *meta, int n_meta)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    if (n_meta > 0) {
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        for (int i = 0; m && i < n_meta; i++)
            cJSON_AddStringToObject(m, meta[i].key, meta[i].value);
    }
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        const struct rt_st_write *t = &tensors[i];
        cJSON *o = cJSON_AddObjectToObject(root, t->name);
        cJSON *shape = cJSON_CreateArray();
        cJSON *offs = cJSON_CreateArray();
        if (!o || !shape || !offs) {
            cJSON_Delete(shape);
            cJSON_Delete(offs);
            cJSON_Delete(root);
            return NULL;
        }
        cJSON_AddStringToObject(o, "dtype", rt_dtype_safetensors_name(t->dtype));
        for (int d = 0; d < t->shape.rank; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape.dims[d]));
        cJSON_AddItemToObject(o, "shape", shape);
        size_t bytes = tensor_bytes(t);
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)offset));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(offset + bytes)));
        cJSON_AddItemToObject(o, "data_offsets", offs);
        offset += (bytes + 7) & ~(size_t)7;
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

enum rt_status rt_safetensors_write(const char *path, const struct rt_st_write *tensors, int n,
                                    const struct rt_st_meta *meta, int n_meta, struct rt_error *err)
{
    char *header = build_header(tensors, n, meta, n_meta);
    if (!header)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    size_t hlen = strlen(header);
    size_t padded = (hlen + 7) & ~(size_t)7;   /* keeps the data 8-byte aligned */
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(header);
        return rt_error_set(err, RT_ERR_IO, "cannot create %s (%s)", path, strerror(errno));
    }
    uint8_t len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    bool ok = fwrite(len8, 1, 8, f) == 8 && fwrite(header, 1, hlen, f) == hlen;
    for (size_t i = hlen; ok && i < padded; i++)
        ok = fputc(' ', f) != EOF;
    static const uint8_t zeros[8];
    for (int i = 0; ok && i < n; i++) {
        size_t bytes = tensor_bytes(&tensors[i]);
        ok = fwrite(tensors[i].data, 1, bytes, f) == bytes;
        size_t pad = ((bytes + 7) & ~(size_t)7) - bytes;
        ok = ok && fwrite(zeros, 1, pad, f) == pad;
    }
    free(header);
    if (fclose(f) != 0 || !ok)
        return rt_error_set(err, RT_ERR_IO, "cannot write %s", path);
    return RT_OK;
}
