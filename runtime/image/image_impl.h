/*
 * image_impl.h - internals shared by the image decoders (image/image_png.c,
 * image/image_jpeg.c, image/image_webp.c, image/image_bmp.c, image/image_pnm.c), the resampler (image/image_resize.c) and
 * image/image.c, which dispatches to them. Not part of the public API.
 */
#ifndef RT_IMAGE_IMPL_H
#define RT_IMAGE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/image/image.h"

/* Limits with the defaults filled in (rt_image_limits' zeros mean "default"). */
struct rt_image_bounds {
    int64_t max_pixels;
    int64_t max_side;
};

/* RT_ERR_TOO_LARGE when width x height exceeds the bounds, RT_ERR_INVALID when
 * either side is below 1. Decoders call it on the header's numbers, before
 * any pixel buffer exists. */
enum rt_status rt_image_check_size(int64_t width, int64_t height, const struct rt_image_bounds *b,
                                   struct rt_error *err);

/* Allocates out->pixels for a checked width x height x channels image. */
enum rt_status rt_image_alloc(struct rt_image *out, int width, int height, int channels,
                              struct rt_error *err);

/* Each decoder fills out (pixels malloc'd) or leaves it zeroed on error; the
 * caller has already sniffed the format. Messages never quote file bytes. */
enum rt_status rt_image_decode_png(const uint8_t *data, size_t len, const struct rt_image_bounds *b,
                                   struct rt_image *out, struct rt_error *err);
enum rt_status rt_image_decode_jpeg(const uint8_t *data, size_t len,
                                    const struct rt_image_bounds *b, struct rt_image *out,
                                    struct rt_error *err);
enum rt_status rt_image_decode_webp(const uint8_t *data, size_t len,
                                    const struct rt_image_bounds *b, struct rt_image *out,
                                    struct rt_error *err);
enum rt_status rt_image_decode_bmp(const uint8_t *data, size_t len, const struct rt_image_bounds *b,
                                   struct rt_image *out, struct rt_error *err);
enum rt_status rt_image_decode_pnm(const uint8_t *data, size_t len, const struct rt_image_bounds *b,
                                   struct rt_image *out, struct rt_error *err);

/* Resamples an 8-bit HWC image (in_w x in_h x ch) to out_w x out_h with
 * PIL's bilinear filter, 8-bit results included, and writes only the window
 * [crop_x, crop_x + crop_w) x [crop_y, crop_y + crop_h) of the result to out
 * (crop_w x crop_h x ch bytes, HWC).
 * Window pixels outside the resized image are 0 (torchvision pads a centre
 * crop larger than the image with zeros). */
enum rt_status rt_image_resize(const uint8_t *in, int in_w, int in_h, int ch, int out_w, int out_h,
                               int crop_x, int crop_y, int crop_w, int crop_h, uint8_t *out,
                               struct rt_error *err);

#endif /* RT_IMAGE_IMPL_H */
