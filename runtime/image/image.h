/*
 * image.h - image decoding (PNG, JPEG, WebP, BMP, PGM/PPM) and preprocessing into a
 * model input, as model.json's "preprocessing" describes.
 *
 *     struct rt_image img;
 *     if (rt_image_decode(body, len, &limits, &img, &err) == RT_OK) {
 *         rt_image_preprocess(&img, &cfg->pre, input_chw, &err);
 *         rt_image_free(&img);
 *     }
 *
 * Decoding checks the header's dimensions against the limits before any
 * pixel buffer is allocated; truncated or corrupt data is RT_ERR_INVALID,
 * an unknown format RT_ERR_UNSUPPORTED, too many pixels RT_ERR_TOO_LARGE.
 */
#ifndef RT_IMAGE_H
#define RT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/rt_model.h"

enum rt_image_format {
    RT_IMAGE_UNKNOWN = 0,
    RT_IMAGE_PNG,
    RT_IMAGE_JPEG,
    RT_IMAGE_PNM,
    RT_IMAGE_WEBP,
    RT_IMAGE_BMP,
};

struct rt_image_limits {
    int64_t max_pixels;      /* width * height; 0 = default (16 Mpx) */
    int max_side;            /* 0 = default (16384) */
};

/* 8-bit pixels, interleaved (HWC), channels 1 (gray) or 3 (RGB). */
struct rt_image {
    int width, height, channels;
    uint8_t *pixels;
};

/* From the first bytes (magic numbers), not from any declared media type. */
enum rt_image_format rt_image_sniff(const void *data, size_t len);

enum rt_status rt_image_decode(const void *data, size_t len, const struct rt_image_limits *lim,
                               struct rt_image *out, struct rt_error *err);
void rt_image_free(struct rt_image *img);

/* Writes pre->channels * pre->height * pre->width floats (CHW) to out. */
enum rt_status rt_image_preprocess(const struct rt_image *img, const struct rt_preprocess *pre,
                                   float *out, struct rt_error *err);

/* Encodes gray or RGB pixels as PNG into a malloc'd buffer (tests, tools). */
enum rt_status rt_image_encode_png(const struct rt_image *img, uint8_t **out, size_t *out_len,
                                   struct rt_error *err);

#endif /* RT_IMAGE_H */
