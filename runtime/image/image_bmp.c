/*
 * image/image_bmp.c - BMP (Windows bitmap) decoding, written here.
 *
 * Why by hand: no well-kept Debian library decodes BMP on its own. libgd
 * and gdk-pixbuf do, but bring a graphics stack (fontconfig, freetype,
 * tiff; GLib) to a server for one simple format; stb_image (libstb-dev)
 * says itself it is not meant for untrusted input; FreeImage is
 * unmaintained. Uncompressed BMP is a header and rows of pixels, which a
 * bounds-checked reader covers in a page.
 *
 * Supported: the OS/2 core header (12 bytes) and the Windows headers (40,
 * 52, 56, 108, 124 bytes); 1, 4 and 8 bits per pixel with a palette, 24
 * bits, and 16 and 32 bits (BI_RGB or BI_BITFIELDS masks); bottom-up and
 * top-down rows. Run-length (BI_RLE4/8) and embedded JPEG/PNG bitmaps are
 * refused as unsupported. Output is 8-bit RGB; alpha is dropped, as for PNG.
 */
#include <stdlib.h>

#include "runtime/image/image_impl.h"

#define BMP_FILE_HEADER 14
#define BI_RGB 0
#define BI_BITFIELDS 3
#define BI_ALPHABITFIELDS 6

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One colour channel of a BI_BITFIELDS mask: where it starts, how wide. */
struct bmp_field {
    uint32_t mask;
    int shift;
    uint32_t max;            /* mask >> shift */
};

static bool field_init(struct bmp_field *f, uint32_t mask)
{
    f->mask = mask;
    f->shift = 0;
    if (!mask)
        return false;
    while (!(mask & 1u)) {
        mask >>= 1;
        f->shift++;
    }
    f->max = mask;
    return (mask & (mask + 1u)) == 0;    /* contiguous bits */
}

static uint8_t field_get(const struct bmp_field *f, uint32_t px)
{
    /* max is 2^n - 1 (odd) for every field field_init accepted, so
     * max | 1 is max, and never 0 for the analyser's sake. */
    uint32_t v = (px & f->mask) >> f->shift, max = f->max | 1u;
    return (uint8_t)(((uint64_t)v * 255u + max / 2) / max);
}

struct bmp_header {
    int64_t width, height;       /* height > 0 after top_down is read off */
    bool top_down;
    uint32_t bpp, compression, offset, palette_at, palette_len, palette_entry;
    struct bmp_field rgb[3];
};

static enum rt_status bmp_read_header(const uint8_t *d, size_t len, struct bmp_header *h,
                                      struct rt_error *err)
{
    const uint32_t dib = le32(d + BMP_FILE_HEADER);
    if (len < (size_t)BMP_FILE_HEADER + dib)
        return rt_error_set(err, RT_ERR_INVALID, "truncated BMP header");
    const uint8_t *p = d + BMP_FILE_HEADER;
    h->offset = le32(d + 10);
    if (dib == 12) {
        h->width = le16(p + 4);
        h->height = (int16_t)le16(p + 6);
        h->bpp = le16(p + 10);
        h->compression = BI_RGB;
        h->palette_entry = 3;
    } else {
        h->width = (int32_t)le32(p + 4);
        h->height = (int32_t)le32(p + 8);
        h->bpp = le16(p + 14);
        h->compression = le32(p + 16);
        h->palette_len = le32(p + 32);
        h->palette_entry = 4;
    }
    if (le16(p + (dib == 12 ? 8 : 12)) != 1)
        return rt_error_set(err, RT_ERR_INVALID, "corrupt BMP header (planes)");
    h->top_down = h->height < 0;
    if (h->top_down)
        h->height = -h->height;
    h->palette_at = BMP_FILE_HEADER + dib;

    uint32_t masks[3] = {0};
    if (h->compression == BI_BITFIELDS || h->compression == BI_ALPHABITFIELDS) {
        if (h->bpp != 16 && h->bpp != 32)
            return rt_error_set(err, RT_ERR_INVALID, "corrupt BMP header (bit fields)");
        /* The masks follow a 40-byte header; later headers hold them. */
        size_t at = BMP_FILE_HEADER + 40;
        if (len < at + 12)
            return rt_error_set(err, RT_ERR_INVALID, "truncated BMP header");
        for (int c = 0; c < 3; c++)
            masks[c] = le32(d + at + 4 * (size_t)c);
        if (dib == 40)
            h->palette_at += h->compression == BI_ALPHABITFIELDS ? 16 : 12;
    } else if (h->compression != BI_RGB) {
        return rt_error_set(err, RT_ERR_UNSUPPORTED,
                            "compressed BMP (run-length, JPEG or PNG) is not supported");
    } else if (h->bpp == 16) {
        masks[0] = 0x7c00;
        masks[1] = 0x03e0;
        masks[2] = 0x001f;
    } else if (h->bpp == 32) {
        masks[0] = 0xff0000;
        masks[1] = 0x00ff00;
        masks[2] = 0x0000ff;
    }
    if (h->bpp == 16 || h->bpp == 32) {
        for (int c = 0; c < 3; c++)
            if (!field_init(&h->rgb[c], masks[c]))
                return rt_error_set(err, RT_ERR_INVALID, "corrupt BMP header (bit fields)");
    } else if (h->bpp == 1 || h->bpp == 4 || h->bpp == 8) {
        uint32_t most = 1u << h->bpp;
        if (h->palette_len == 0 || h->palette_len > most)
            h->palette_len = most;
        if ((size_t)h->palette_at + (size_t)h->palette_len * h->palette_entry > len)
            return rt_error_set(err, RT_ERR_INVALID, "truncated BMP palette");
    } else if (h->bpp != 24) {
        return rt_error_set(err, RT_ERR_INVALID, "corrupt BMP header (bits per pixel)");
    }
    return RT_OK;
}

/* Pixel x of a row, as RGB; false for a palette index past the palette. */
static bool bmp_pixel(const uint8_t *d, const struct bmp_header *h, const uint8_t *row, int64_t x,
                      uint8_t *rgb)
{
    uint32_t idx;
    switch (h->bpp) {
    case 24:
        rgb[0] = row[3 * x + 2];
        rgb[1] = row[3 * x + 1];
        rgb[2] = row[3 * x];
        return true;
    case 16:
    case 32: {
        uint32_t px = h->bpp == 16 ? le16(row + 2 * x) : le32(row + 4 * x);
        for (int c = 0; c < 3; c++)
            rgb[c] = field_get(&h->rgb[c], px);
        return true;
    }
    case 8:
        idx = row[x];
        break;
    case 4:
        idx = (row[x / 2] >> (x % 2 ? 0 : 4)) & 0xfu;
        break;
    default:
        idx = (row[x / 8] >> (7 - x % 8)) & 1u;
        break;
    }
    if (idx >= h->palette_len)
        return false;
    const uint8_t *e = d + h->palette_at + (size_t)idx * h->palette_entry;
    rgb[0] = e[2];
    rgb[1] = e[1];
    rgb[2] = e[0];
    return true;
}

enum rt_status rt_image_decode_bmp(const uint8_t *data, size_t len, const struct rt_image_bounds *b,
                                   struct rt_image *out, struct rt_error *err)
{
    struct bmp_header h = {0};
    enum rt_status st = bmp_read_header(data, len, &h, err);
    if (st != RT_OK)
        return st;
    if ((st = rt_image_check_size(h.width, h.height, b, err)) != RT_OK)
        return st;
    /* Rows are padded to 4 bytes; width and height are within the bounds,
     * so these products fit in 64 bits. */
    const uint64_t stride = ((uint64_t)h.width * h.bpp + 31) / 32 * 4;
    if (h.offset < h.palette_at || (uint64_t)h.offset + stride * (uint64_t)h.height > len)
        return rt_error_set(err, RT_ERR_INVALID, "truncated BMP data");
    struct rt_image img;
    if ((st = rt_image_alloc(&img, (int)h.width, (int)h.height, 3, err)) != RT_OK)
        return st;
    for (int64_t y = 0; y < h.height; y++) {
        const uint8_t *row = data + h.offset + stride * (uint64_t)(h.top_down ? y : h.height - 1 - y);
        uint8_t *dst = img.pixels + (size_t)y * (size_t)h.width * 3;
        for (int64_t x = 0; x < h.width; x++) {
            if (!bmp_pixel(data, &h, row, x, dst + 3 * x)) {
                rt_image_free(&img);
                return rt_error_set(err, RT_ERR_INVALID, "corrupt BMP data (colour index)");
            }
        }
    }
    *out = img;
    return RT_OK;
}
