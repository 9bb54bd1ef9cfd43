/*
 * image/dataset.c - reader for IDX files (the MNIST / Fashion-MNIST format),
 * gzip-compressed or plain: zlib's gz* functions read both.
 *
 * IDX: a big-endian magic 0x000008DD (0x08 = unsigned bytes, DD = number of
 * dimensions), DD big-endian 32-bit sizes, then the data. Images are 3-D
 * (0x00000803: count, rows, cols), labels 1-D (0x00000801: count). The
 * files must hold exactly the data their header announces.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "runtime/rt_checked.h"
#include "runtime/image/dataset.h"

#define IDX_MAGIC_IMAGES 0x00000803u
#define IDX_MAGIC_LABELS 0x00000801u
/* Far above any real IDX file; a header claiming more is corrupt. */
#define IDX_MAX_BYTES ((size_t)1 << 32)
#define IDX_MAX_SIDE 65536u

static enum rt_status idx_open(const char *path, gzFile *out, struct rt_error *err)
{
    errno = 0;
    *out = gzopen(path, "rb");
    if (*out)
        return RT_OK;
    if (errno == ENOENT)
        return rt_error_set(err, RT_ERR_NOT_FOUND, "%s: no such file", path);
    if (errno == 0)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "%s: out of memory opening", path);
    return rt_error_set(err, RT_ERR_IO, "%s: %s", path, strerror(errno));
}

/* Reads exactly n bytes; a short read is a truncated or corrupt file. */
static enum rt_status idx_read(gzFile f, const char *path, void *dst, size_t n,
                               struct rt_error *err)
{
    uint8_t *p = dst;
    while (n > 0) {
        unsigned chunk = n > (1u << 30) ? 1u << 30 : (unsigned)n;
        int got = gzread(f, p, chunk);
        if (got < 0) {
            int code;
            const char *msg = gzerror(f, &code);
            if (code == Z_ERRNO)
                return rt_error_set(err, RT_ERR_IO, "%s: %s", path, strerror(errno));
            return rt_error_set(err, RT_ERR_INVALID, "%s: corrupt gzip data (%s)", path, msg);
        }
        if (got == 0)
            return rt_error_set(err, RT_ERR_INVALID, "%s: truncated IDX file", path);
        p += got;
        n -= (size_t)got;
    }
    return RT_OK;
}

static uint32_t be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Reads an IDX file of unsigned bytes with the given magic into a malloc'd
 * buffer; dims receives the header's sizes (rank = the magic's low byte). */
static enum rt_status idx_load(const char *path, uint32_t magic, uint32_t *dims, uint8_t **data,
                               struct rt_error *err)
{
    gzFile f;
    enum rt_status st = idx_open(path, &f, err);
    if (st != RT_OK)
        return st;
    *data = NULL;
    int rank = (int)(magic & 0xff);
    uint8_t head[4 + 4 * 3];
    size_t total = 1;
    uint8_t extra;
    if ((st = idx_read(f, path, head, 4 + 4 * (size_t)rank, err)) != RT_OK)
        goto done;
    if (be32(head) != magic) {
        st = rt_error_set(err, RT_ERR_INVALID, "%s: IDX magic is 0x%08x, expected 0x%08x", path,
                          (unsigned)be32(head), (unsigned)magic);
        goto done;
    }
    for (int i = 0; i < rank; i++) {
        dims[i] = be32(head + 4 + (size_t)4 * i);
        uint32_t max = i == 0 ? 0x7fffffffu : IDX_MAX_SIDE;
        if (dims[i] < 1 || dims[i] > max || !rt_mul_size(total, dims[i], &total) ||
            total > IDX_MAX_BYTES) {
            st = rt_error_set(err, RT_ERR_INVALID, "%s: IDX dimension %d (%u) is out of range",
                              path, i, (unsigned)dims[i]);
            goto done;
        }
    }
    if (!(*data = malloc(total))) {
        st = rt_error_set(err, RT_ERR_NO_MEMORY, "%s: out of memory for %zu bytes", path, total);
        goto done;
    }
    if ((st = idx_read(f, path, *data, total, err)) != RT_OK)
        goto done;
    int got = gzread(f, &extra, 1);
    if (got != 0)
        st = rt_error_set(err, RT_ERR_INVALID, got < 0 ? "%s: corrupt gzip data"
                                                       : "%s: data after the IDX payload", path);
done:
    gzclose(f);
    if (st != RT_OK) {
        free(*data);
        *data = NULL;
    }
    return st;
}

enum rt_status rt_dataset_load_idx(const char *images_path, const char *labels_path,
                                   struct rt_dataset *out, struct rt_error *err)
{
    memset(out, 0, sizeof(*out));
    uint32_t idims[3] = {0}, ldims[1] = {0};
    uint8_t *images, *labels = NULL;
    enum rt_status st = idx_load(images_path, IDX_MAGIC_IMAGES, idims, &images, err);
    if (st != RT_OK)
        return st;
    if (labels_path) {
        if ((st = idx_load(labels_path, IDX_MAGIC_LABELS, ldims, &labels, err)) != RT_OK) {
            free(images);
            return st;
        }
        if (ldims[0] != idims[0]) {
            free(images);
            free(labels);
            return rt_error_set(err, RT_ERR_INVALID, "%s holds %u labels for %u images in %s",
                                labels_path, (unsigned)ldims[0], (unsigned)idims[0],
                                images_path);
        }
    }
    out->count = (int)idims[0];
    out->rows = (int)idims[1];
    out->cols = (int)idims[2];
    out->images = images;
    out->labels = labels;
    return RT_OK;
}

enum rt_status rt_dataset_load_fashion_mnist(const char *split, struct rt_dataset *out,
                                             struct rt_error *err)
{
    const char *prefix;
    memset(out, 0, sizeof(*out));
    if (split && strcmp(split, "test") == 0)
        prefix = "t10k";
    else if (split && strcmp(split, "train") == 0)
        prefix = "train";
    else
        return rt_error_set(err, RT_ERR_INVALID, "Fashion-MNIST split must be \"test\" or \"train\"");
    const char *dir = getenv("FASHION_MNIST_DIR");
    if (!dir || !*dir)
        dir = RT_FASHION_MNIST_DIR;
    char images[512], labels[512];
    if (snprintf(images, sizeof(images), "%s/%s-images-idx3-ubyte.gz", dir, prefix) >= (int)sizeof(images)
        || snprintf(labels, sizeof(labels), "%s/%s-labels-idx1-ubyte.gz", dir, prefix) >= (int)sizeof(labels))
        return rt_error_set(err, RT_ERR_INVALID, "FASHION_MNIST_DIR is too long");
    enum rt_status st = rt_dataset_load_idx(images, labels, out, err);
    if (st == RT_ERR_NOT_FOUND)
        rt_error_prefix(err, strcmp(dir, RT_FASHION_MNIST_DIR) == 0
                                 ? "Fashion-MNIST is not installed (Debian package dataset-fashion-mnist)"
                                 : "Fashion-MNIST is not in FASHION_MNIST_DIR");
    return st;
}

void rt_dataset_free(struct rt_dataset *ds)
{
    if (!ds)
        return;
    free(ds->images);
    free(ds->labels);
    memset(ds, 0, sizeof(*ds));
}
