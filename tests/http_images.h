/*
 * http_images.h - image payloads for the image tests: JPEG, WebP and BMP
 * encoding (the runtime only encodes PNG), and headers edited to lie about their size.
 */
#ifndef HTTP_IMAGES_H
#define HTTP_IMAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How a test JPEG is written (tests only: libjpeg's default error handler
 * exits, acceptable for valid input). */
struct http_jpeg {
    int components;            /* bytes per pixel given: 1 gray, 3 RGB, 4 CMYK */
    int quality;
    int stored;                /* 0: libjpeg's default for the input; else its J_COLOR_SPACE (JCS_CMYK, JCS_YCCK) */
    bool adobe;                /* with stored: write the Adobe marker */
    const void *scans;         /* a jpeg_scan_info script (progressive), or NULL: baseline */
    int n_scans;
};
/* Pixels to a JPEG as `how` says (malloc'd into *out). */
bool http_encode_jpeg_as(const uint8_t *pixels, int width, int height, const struct http_jpeg *how,
                         uint8_t **out, size_t *len);
/* Gray 8-bit pixels to a baseline JPEG (malloc'd into *out). */
bool http_encode_jpeg(const uint8_t *gray, int width, int height, int quality, uint8_t **out,
                      size_t *len);
/* Gray 8-bit pixels to PNG via rt_image_encode_png. */
bool http_encode_png(const uint8_t *gray, int width, int height, uint8_t **out, size_t *len);
/* Gray 8-bit pixels to a lossless WebP (libwebp's encoder; malloc'd). */
bool http_encode_webp(const uint8_t *gray, int width, int height, uint8_t **out, size_t *len);
/* Gray 8-bit pixels to an uncompressed BMP: 8 bits with a 256-entry gray
 * palette, or (bpp 24) BGR rows; bottom-up rows, or top-down. */
bool http_encode_bmp(const uint8_t *gray, int width, int height, int bpp, bool top_down,
                     uint8_t **out, size_t *len);
/* Rewrites a PNG's IHDR width and height (fixing its CRC). */
bool http_png_set_size(uint8_t *png, size_t len, uint32_t width, uint32_t height);
/* Rewrites a JPEG's SOF width and height. */
bool http_jpeg_set_size(uint8_t *jpeg, size_t len, uint16_t width, uint16_t height);

#endif /* HTTP_IMAGES_H */
