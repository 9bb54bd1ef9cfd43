/*
 * image/image_webp.c - WebP decoding with libwebp (Debian's libwebp-dev).
 *
 * Lossy and lossless still images decode to 8-bit RGB; alpha is dropped
 * rather than composited, as for PNG (image/image_png.c), so the colour
 * values are those stored in the file. Animated WebP is refused as
 * unsupported: which frame a classifier should see is not ours to guess.
 * The header's dimensions are checked before the pixel buffer exists, and
 * libwebp decodes into that buffer, so it never allocates the image itself.
 */
#include <stdlib.h>

#include <webp/decode.h>

#include "runtime/image/image_impl.h"

enum rt_status rt_image_decode_webp(const uint8_t *data, size_t len,
                                    const struct rt_image_bounds *b, struct rt_image *out,
                                    struct rt_error *err)
{
    WebPBitstreamFeatures f;
    VP8StatusCode vs = WebPGetFeatures(data, len, &f);
    if (vs == VP8_STATUS_NOT_ENOUGH_DATA)
        return rt_error_set(err, RT_ERR_INVALID, "truncated WebP data");
    if (vs != VP8_STATUS_OK)
        return rt_error_set(err, RT_ERR_INVALID, "corrupt WebP data");
    if (f.has_animation)
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "animated WebP is not supported");
    enum rt_status st = rt_image_check_size(f.width, f.height, b, err);
    if (st != RT_OK)
        return st;
    struct rt_image img;
    if ((st = rt_image_alloc(&img, f.width, f.height, 3, err)) != RT_OK)
        return st;
    size_t stride = (size_t)img.width * 3;
    /* NULL for truncated or corrupt image data (the header alone passed). */
    if (!WebPDecodeRGBInto(data, len, img.pixels, stride * (size_t)img.height, (int)stride)) {
        rt_image_free(&img);
        return rt_error_set(err, RT_ERR_INVALID, "corrupt or truncated WebP data");
    }
    *out = img;
    return RT_OK;
}
