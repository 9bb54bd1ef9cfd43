/*
 * icl_util.c - the client library's small shared pieces: the growable
 * buffer, JSON field readers, datatypes and shapes, local files.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "icl_impl.h"

/* ------------------------------------------------------------ buffer */

bool icl_buf_reserve(struct icl_buf *b, size_t extra)
{
    if (b->failed)
        return false;
    if (extra <= b->cap - b->len)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra) {
        if (cap > SIZE_MAX / 2) {
            b->failed = true;
            return false;
        }
        cap *= 2;
    }
    uint8_t *p = realloc(b->data, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void icl_buf_append(struct icl_buf *b, const void *p, size_t n)
{
    if (n == 0 || !icl_buf_reserve(b, n))
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void icl_buf_puts(struct icl_buf *b, const char *s) { icl_buf_append(b, s, strlen(s)); }

void icl_buf_printf(struct icl_buf *b, const char *fmt, ...)
{
    char small[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof(small)) {
        icl_buf_append(b, small, (size_t)n);
        return;
    }
    if (!icl_buf_reserve(b, (size_t)n + 1))
        return;
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void icl_buf_json_str(struct icl_buf *b, const char *s, size_t len)
{
    icl_buf_append(b, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            icl_buf_append(b, esc, 2);
        } else if (ch < 0x20) {
            icl_buf_printf(b, "\\u%04x", ch);
        } else {
            icl_buf_append(b, &s[i], 1);
        }
    }
    icl_buf_append(b, "\"", 1);
}

void icl_buf_free(struct icl_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------ JSON */

bool icl_json_str(const cJSON *obj, const char *name, char *dst, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    dst[0] = '\0';
    if (!cJSON_IsString(v))
        return false;
    icl_copy(dst, cap, v->valuestring);
    return true;
}

bool icl_json_tensor_desc(const cJSON *obj, struct icl_tensor *t)
{
    memset(t, 0, sizeof(*t));
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(obj, "shape");
    if (!icl_json_str(obj, "name", t->name, sizeof(t->name)) ||
        !icl_json_str(obj, "datatype", t->datatype, sizeof(t->datatype)) || !cJSON_IsArray(shape))
        return false;
    const cJSON *d;
    cJSON_ArrayForEach(d, shape) {
        if (!cJSON_IsNumber(d) || t->rank == ICL_MAX_DIMS)
            return false;
        t->shape[t->rank++] = (int64_t)d->valuedouble;
    }
    return true;
}

/* ------------------------------------------------------------ datatypes */

static const struct {
    const char *name;
    size_t size;
} DATATYPES[] = {
    {"BOOL", 1},  {"UINT8", 1},  {"UINT16", 2}, {"UINT32", 4}, {"UINT64", 8},
    {"INT8", 1},  {"INT16", 2},  {"INT32", 4},  {"INT64", 8},  {"FP16", 2},
    {"BF16", 2},  {"FP32", 4},   {"FP64", 8},
};

size_t icl_datatype_size(const char *datatype)
{
    for (size_t i = 0; i < sizeof(DATATYPES) / sizeof(DATATYPES[0]); i++)
        if (strcmp(DATATYPES[i].name, datatype) == 0)
            return DATATYPES[i].size;
    return 0;
}

int64_t icl_shape_elements(const int64_t *shape, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return -1;
        if (shape[i] > 0 && n > INT64_MAX / shape[i])
            return -1;
        n *= shape[i];
    }
    return n;
}

bool icl_tensor_string(const struct icl_tensor *t, int64_t i, const char **s, size_t *len)
{
    const uint8_t *p = t->data;
    size_t off = 0;
    for (int64_t k = 0; t->data && off + 4 <= t->byte_size; k++) {
        uint32_t n = (uint32_t)p[off] | (uint32_t)p[off + 1] << 8 | (uint32_t)p[off + 2] << 16 |
                     (uint32_t)p[off + 3] << 24;
        off += 4;
        if (n > t->byte_size - off)
            return false;
        if (k == i) {
            *s = (const char *)p + off;
            *len = n;
            return true;
        }
        off += n;
    }
    return false;
}

/* ------------------------------------------------------------ files */

#define ICL_FILE_MAX ((size_t)1 << 30)

enum icl_status icl_file_read(const char *path, uint8_t **data, size_t *len,
                              struct icl_error *err)
{
    *data = NULL;
    *len = 0;
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f)
        return icl_fail(err, ICL_ERR_IO, "%s: %s", path, strerror(errno));
    struct icl_buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && !b.failed && b.len <= ICL_FILE_MAX)
        icl_buf_append(&b, chunk, n);
    bool read_error = ferror(f);
    if (!is_stdin)
        fclose(f);
    if (read_error || b.failed || b.len > ICL_FILE_MAX) {
        icl_buf_free(&b);
        return icl_fail(err, read_error ? ICL_ERR_IO : ICL_ERR_NO_MEMORY, "%s: %s", path,
                        read_error ? "read error" : "too large to read");
    }
    if (!b.data && !(b.data = malloc(1))) /* an empty file still gets a buffer */
        return icl_fail(err, ICL_ERR_NO_MEMORY, "out of memory");
    *data = b.data;
    *len = b.len;
    return ICL_OK;
}

const char *icl_image_content_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } TYPES[] = {
        {".png", "image/png"},  {".jpg", "image/jpeg"}, {".jpeg", "image/jpeg"},
        {".pgm", "image/x-portable-graymap"}, {".ppm", "image/x-portable-pixmap"},
        {".pnm", "image/x-portable-anymap"}, {".webp", "image/webp"}, {".bmp", "image/bmp"},
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof(TYPES) / sizeof(TYPES[0]); i++)
        if (strcasecmp(dot, TYPES[i].ext) == 0)
            return TYPES[i].type;
    return "application/octet-stream";
}
