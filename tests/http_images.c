/* http_images.c - JPEG/PNG/WebP/BMP payloads and lying headers for the image tests. */
#include "http_images.h"

#include <stdio.h> /* before jpeglib.h, which needs FILE */
#include <jpeglib.h>
#include <stdlib.h>
#include <string.h>
#include <webp/encode.h>
#include <zlib.h>

#include "runtime/image/image.h"

bool http_encode_jpeg_as(const uint8_t *pixels, int width, int height, const struct http_jpeg *how,
                         uint8_t **out, size_t *len)
{
    static const J_COLOR_SPACE INPUT[5] = {JCS_UNKNOWN, JCS_GRAYSCALE, JCS_UNKNOWN, JCS_RGB, JCS_CMYK};
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr jerr;
    c.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&c);
    unsigned char *buf = NULL;
    unsigned long size = 0;
    jpeg_mem_dest(&c, &buf, &size);
    c.image_width = (JDIMENSION)width;
    c.image_height = (JDIMENSION)height;
    c.input_components = how->components;
    c.in_color_space = INPUT[how->components];
    jpeg_set_defaults(&c);
    if (how->stored) {
        jpeg_set_colorspace(&c, (J_COLOR_SPACE)how->stored);
        c.write_Adobe_marker = how->adobe;
    }
    jpeg_set_quality(&c, how->quality, TRUE);
    if (how->scans) {
        c.scan_info = how->scans;
        c.num_scans = how->n_scans;
    }
    jpeg_start_compress(&c, TRUE);
    size_t stride = (size_t)width * (size_t)how->components;
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)c.next_scanline * stride);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    *out = buf;
    *len = size;
    return buf != NULL;
}

bool http_encode_jpeg(const uint8_t *gray, int width, int height, int quality, uint8_t **out,
                      size_t *len)
{
    return http_encode_jpeg_as(gray, width, height, &(struct http_jpeg){.components = 1, .quality = quality}, out,
                               len);
}

bool http_encode_png(const uint8_t *gray, int width, int height, uint8_t **out, size_t *len)
{
    struct rt_image img = {width, height, 1, (uint8_t *)gray};
    struct rt_error err = {RT_OK, ""};
    return rt_image_encode_png(&img, out, len, &err) == RT_OK;
}

bool http_encode_webp(const uint8_t *gray, int width, int height, uint8_t **out, size_t *len)
{
    uint8_t *rgb = malloc((size_t)width * (size_t)height * 3);
    if (!rgb)
        return false;
    for (size_t i = 0; i < (size_t)width * (size_t)height; i++)
        rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = gray[i];
    uint8_t *webp = NULL;
    size_t n = WebPEncodeLosslessRGB(rgb, width, height, width * 3, &webp);
    free(rgb);
    if (!n)
        return false;
    /* WebP's buffer is WebPFree's; the caller frees with free(). */
    *out = malloc(n);
    if (*out)
        memcpy(*out, webp, n);
    WebPFree(webp);
    *len = n;
    return *out != NULL;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

bool http_encode_bmp(const uint8_t *gray, int width, int height, int bpp, bool top_down,
                     uint8_t **out, size_t *len)
{
    const size_t stride = ((size_t)width * (size_t)bpp + 31) / 32 * 4;
    const size_t palette = bpp == 8 ? 256 * 4 : 0, offset = 14 + 40 + palette;
    const size_t n = offset + stride * (size_t)height;
    uint8_t *b = calloc(1, n);
    if (!b)
        return false;
    b[0] = 'B';
    b[1] = 'M';
    put_le32(b + 2, (uint32_t)n);
    put_le32(b + 10, (uint32_t)offset);
    put_le32(b + 14, 40);
    put_le32(b + 18, (uint32_t)width);
    put_le32(b + 22, top_down ? (uint32_t)-height : (uint32_t)height);
    b[26] = 1;                               /* planes */
    b[28] = (uint8_t)bpp;
    for (size_t i = 0; i < palette / 4; i++)
        b[54 + 4 * i] = b[55 + 4 * i] = b[56 + 4 * i] = (uint8_t)i;
    for (int y = 0; y < height; y++) {
        uint8_t *row = b + offset + stride * (size_t)(top_down ? y : height - 1 - y);
        for (size_t x = 0; x < (size_t)width; x++) {
            uint8_t v = gray[(size_t)y * (size_t)width + x];
            if (bpp == 8)
                row[x] = v;
            else
                row[3 * x] = row[3 * x + 1] = row[3 * x + 2] = v;
        }
    }
    *out = b;
    *len = n;
    return true;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

bool http_png_set_size(uint8_t *png, size_t len, uint32_t width, uint32_t height)
{
    /* signature (8), IHDR length (4), "IHDR" (4), width, height, 5 bytes, CRC */
    if (len < 33 || memcmp(png + 12, "IHDR", 4) != 0)
        return false;
    put_be32(png + 16, width);
    put_be32(png + 20, height);
    put_be32(png + 29, (uint32_t)crc32(0, png + 12, 17));
    return true;
}

bool http_jpeg_set_size(uint8_t *jpeg, size_t len, uint16_t width, uint16_t height)
{
    for (size_t i = 2; i + 9 < len;) {
        if (jpeg[i] != 0xFF)
            return false;
        uint8_t marker = jpeg[i + 1];
        size_t seg = (size_t)jpeg[i + 2] << 8 | jpeg[i + 3];
        if (marker >= 0xC0 && marker <= 0xC3) {
            jpeg[i + 5] = (uint8_t)(height >> 8), jpeg[i + 6] = (uint8_t)height;
            jpeg[i + 7] = (uint8_t)(width >> 8), jpeg[i + 8] = (uint8_t)width;
            return true;
        }
        i += 2 + seg;
    }
    return false;
}
