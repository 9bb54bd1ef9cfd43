/*
 * image/image.c - the image API: format sniffing, decode dispatch, and
 * preprocessing of a decoded image into a model input (docs/model-format.md,
 * "Preprocessing"). The format decoders live in image_{png,jpeg,webp,bmp,pnm}.c,
 * the resampler in image/image_resize.c.
 *
 * Preprocessing follows the PIL/torchvision pipeline models are trained
 * with: convert("L") or convert("RGB"), Resize, CenterCrop, then
 * normalisation, so a picture classified here gets the numbers it would
 * get in Python.
 */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_checked.h"
#include "runtime/image/image_impl.h"

#define DEFAULT_MAX_PIXELS ((int64_t)16 * 1024 * 1024)
#define DEFAULT_MAX_SIDE 16384

static const uint8_t PNG_MAGIC[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

enum rt_image_format rt_image_sniff(const void *data, size_t len)
{
    const uint8_t *d = data;
    if (!d)
        return RT_IMAGE_UNKNOWN;
    if (len >= sizeof(PNG_MAGIC) && memcmp(d, PNG_MAGIC, sizeof(PNG_MAGIC)) == 0)
        return RT_IMAGE_PNG;
    if (len >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff)
        return RT_IMAGE_JPEG;
    /* RIFF container, "WEBP" form type. */
    if (len >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0)
        return RT_IMAGE_WEBP;
    /* "BM" then, after the 14-byte file header, a DIB header size that
     * some BMP version uses: two letters alone would claim text too. */
    if (len >= 18 && d[0] == 'B' && d[1] == 'M') {
        uint32_t dib = (uint32_t)d[14] | (uint32_t)d[15] << 8 | (uint32_t)d[16] << 16 |
                       (uint32_t)d[17] << 24;
        if (dib == 12 || dib == 40 || dib == 52 || dib == 56 || dib == 108 || dib == 124)
            return RT_IMAGE_BMP;
    }
    /* "P1".."P6" then whitespace or a comment; P1/P4 are recognised so
     * they can be refused as unsupported PNM rather than as unknown. */
    if (len >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6' &&
        (d[2] == ' ' || d[2] == '\t' || d[2] == '\n' || d[2] == '\r' || d[2] == '#'))
        return RT_IMAGE_PNM;
    return RT_IMAGE_UNKNOWN;
}

enum rt_status rt_image_check_size(int64_t width, int64_t height, const struct rt_image_bounds *b,
                                   struct rt_error *err)
{
    if (width < 1 || height < 1)
        return rt_error_set(err, RT_ERR_INVALID, "image has no pixels");
    if (width > b->max_side || height > b->max_side)
        return rt_error_set(err, RT_ERR_TOO_LARGE,
                            "image is %" PRId64 "x%" PRId64 ", sides are limited to %" PRId64,
                            width, height, b->max_side);
    const int64_t dims[2] = {width, height};
    int64_t pixels;
    if (!rt_dims_product(dims, 2, &pixels) || pixels > b->max_pixels)
        return rt_error_set(err, RT_ERR_TOO_LARGE,
                            "image is %" PRId64 "x%" PRId64 ", limited to %" PRId64 " pixels",
                            width, height, b->max_pixels);
    return RT_OK;
}

enum rt_status rt_image_alloc(struct rt_image *out, int width, int height, int channels,
                              struct rt_error *err)
{
    size_t n;
    memset(out, 0, sizeof(*out));
    if (!rt_mul_size((size_t)width, (size_t)height, &n) || !rt_mul_size(n, (size_t)channels, &n))
        return rt_error_set(err, RT_ERR_TOO_LARGE, "image size overflows");
    out->pixels = malloc(n);
    if (!out->pixels)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for a %dx%d image", width,
                            height);
    out->width = width;
    out->height = height;
    out->channels = channels;
    return RT_OK;
}

void rt_image_free(struct rt_image *img)
{
    if (!img)
        return;
    free(img->pixels);
    memset(img, 0, sizeof(*img));
}

enum rt_status rt_image_decode(const void *data, size_t len, const struct rt_image_limits *lim,
                               struct rt_image *out, struct rt_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!data || len == 0)
        return rt_error_set(err, RT_ERR_INVALID, "empty image");
    struct rt_image_bounds b = {DEFAULT_MAX_PIXELS, DEFAULT_MAX_SIDE};
    if (lim && lim->max_pixels > 0)
        b.max_pixels = lim->max_pixels;
    if (lim && lim->max_side > 0)
        b.max_side = lim->max_side;
    /* struct rt_image holds sizes as int: keep width * height * 3 within it. */
    if (b.max_side > INT_MAX / 4)
        b.max_side = INT_MAX / 4;
    if (b.max_pixels > INT_MAX / 4)
        b.max_pixels = INT_MAX / 4;

    switch (rt_image_sniff(data, len)) {
    case RT_IMAGE_PNG:
        return rt_image_decode_png(data, len, &b, out, err);
    case RT_IMAGE_JPEG:
        return rt_image_decode_jpeg(data, len, &b, out, err);
    case RT_IMAGE_PNM:
        return rt_image_decode_pnm(data, len, &b, out, err);
    case RT_IMAGE_WEBP:
        return rt_image_decode_webp(data, len, &b, out, err);
    case RT_IMAGE_BMP:
        return rt_image_decode_bmp(data, len, &b, out, err);
    case RT_IMAGE_UNKNOWN:
        break;
    }
    return rt_error_set(err, RT_ERR_UNSUPPORTED,
                        "unrecognised image format (PNG, JPEG, WebP, BMP, PGM and PPM are supported)");
}

/* ------------------------------------------------------------ preprocess */

/* Gray (1 channel) <-> RGB (3) in 8 bits, as PIL's convert() does: gray
 * is R = G = B; RGB to gray is ITU-R 601-2 luma with PIL's fixed-point
 * rounding, L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16. */
static void convert_channels(const struct rt_image *img, int channels, uint8_t *dst)
{
    size_t n = (size_t)img->width * (size_t)img->height;
    const uint8_t *src = img->pixels;
    if (channels == 3) {
        for (size_t i = 0; i < n; i++)
            dst[3 * i] = dst[3 * i + 1] = dst[3 * i + 2] = src[i];
    } else {
        for (size_t i = 0; i < n; i++) {
            const uint8_t *p = src + 3 * i;
            dst[i] = (uint8_t)((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
        }
    }
}

/* Offset of a centre crop of crop pixels from size pixels, as torchvision's
 * center_crop: int(round((size - crop) / 2)) with Python's round-half-even
 * (nearbyint in the default rounding mode); a crop larger than the image
 * is padded by (crop - size) // 2 on the leading side. */
static int crop_offset(int size, int crop)
{
    if (size >= crop)
        return (int)nearbyint((size - crop) / 2.0);
    return -((crop - size) / 2);
}

/* torchvision's Resize(shorter): the shorter side becomes shorter, the
 * longer side int(shorter * long / short), truncated. */
static enum rt_status shorter_side_size(int w, int h, int shorter, int *rw, int *rh,
                                        struct rt_error *err)
{
    int s = w <= h ? w : h, l = w <= h ? h : w;
    double longer = trunc((double)((int64_t)shorter * l) / s);
    if (longer > INT_MAX / 4)
        return rt_error_set(err, RT_ERR_TOO_LARGE, "image aspect ratio is too extreme");
    *rw = w <= h ? shorter : (int)longer;
    *rh = w <= h ? (int)longer : shorter;
    return RT_OK;
}

enum rt_status rt_image_preprocess(const struct rt_image *img, const struct rt_preprocess *pre,
                                   float *out, struct rt_error *err)
{
    if (!pre->present)
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "model has no image preprocessing");
    if (pre->width < 1 || pre->height < 1 || (pre->channels != 1 && pre->channels != 3) ||
        pre->resize_shorter < 0)
        return rt_error_set(err, RT_ERR_BAD_MODEL, "model's preprocessing settings are invalid");
    for (int c = 0; c < pre->channels; c++) {
        if (!(pre->std[c] != 0.0f) || !isfinite(pre->std[c]))
            return rt_error_set(err, RT_ERR_BAD_MODEL, "model's preprocessing std must be non-zero");
    }
    if (!img->pixels || img->width < 1 || img->height < 1 ||
        (img->channels != 1 && img->channels != 3))
        return rt_error_set(err, RT_ERR_INVALID, "preprocessing needs a gray or RGB image");

    const int ch = pre->channels, W = pre->width, H = pre->height;
    const int w = img->width, h = img->height;
    const uint8_t *src = img->pixels;
    uint8_t *converted = NULL;
    uint8_t *window = NULL;  /* [H][W][ch]: the resized centre crop */
    enum rt_status st = RT_OK;

    if (img->channels != ch) {
        size_t n;
        if (!rt_mul_size((size_t)w * (size_t)h, (size_t)ch, &n) || !(converted = malloc(n)))
            return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory converting an image");
        convert_channels(img, ch, converted);
        src = converted;
    }

    int rw = W, rh = H;      /* size after resizing, before cropping */
    if (pre->resize_shorter > 0 &&
        (st = shorter_side_size(w, h, pre->resize_shorter, &rw, &rh, err)) != RT_OK)
        goto done;
    const int cx = crop_offset(rw, W), cy = crop_offset(rh, H);
    if (rw != w || rh != h) {
        if (!(window = malloc((size_t)W * (size_t)H * (size_t)ch))) {
            st = rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory resizing an image");
            goto done;
        }
        if ((st = rt_image_resize(src, w, h, ch, rw, rh, cx, cy, W, H, window, err)) != RT_OK)
            goto done;
    }

    /* (v / divisor - mean) / std, or (v * scale - mean) / std, as three
     * float32 operations in this order, as torchvision's ToTensor (v / 255)
     * then Normalize compute it. */
    const size_t plane = (size_t)W * (size_t)H;
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            int sx = x + cx, sy = y + cy;
            bool inside = sx >= 0 && sx < w && sy >= 0 && sy < h;
            for (int c = 0; c < ch; c++) {
                float v;
                if (window)
                    v = window[((size_t)y * (size_t)W + (size_t)x) * (size_t)ch + (size_t)c];
                else
                    v = inside ? (float)src[((size_t)sy * (size_t)w + (size_t)sx) * (size_t)ch + (size_t)c]
                               : 0.0f;
                if (pre->invert)
                    v = 255.0f - v;
                float t = pre->divisor > 0.0f ? v / pre->divisor : v * pre->scale;
                t = t - pre->mean[c];
                out[(size_t)c * plane + (size_t)y * (size_t)W + (size_t)x] = t / pre->std[c];
            }
        }
    }
done:
    free(window);
    free(converted);
    return st;
}
