/*
 * image/image_pnm.c - Netpbm gray and colour maps: P2 (plain PGM), P5 (raw PGM),
 * P3 (plain PPM) and P6 (raw PPM). Bitmaps (P1, P4) are unsupported.
 *
 * Header: magic, width, height, maxval, separated by whitespace and '#'
 * comments; a raw raster follows exactly one whitespace byte. maxval is
 * 1..65535 (two big-endian bytes per raw sample above 255); samples are
 * scaled to 0..255 with rounding unless maxval is 255. Anything malformed,
 * including a sample above maxval or a short raster, is RT_ERR_INVALID;
 * data after the raster is ignored (Netpbm allows several images per file).
 */
#include <stdbool.h>
#include <stdlib.h>

#include "runtime/rt_checked.h"
#include "runtime/image/image_impl.h"

#define PNM_MAX_MAXVAL 65535u
/* Header numbers beyond this are not image sizes but garbage. */
#define PNM_MAX_NUMBER 0x7fffffffu

struct pnm_cursor {
    const uint8_t *p, *end;
};

static bool pnm_is_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* Skips whitespace and comments (from '#' to the end of the line). */
static void pnm_skip_space(struct pnm_cursor *c)
{
    while (c->p < c->end) {
        if (*c->p == '#') {
            while (c->p < c->end && *c->p != '\n' && *c->p != '\r')
                c->p++;
        } else if (pnm_is_space(*c->p)) {
            c->p++;
        } else {
            return;
        }
    }
}

/* Reads a decimal number of at most max after optional whitespace; the
 * number must end at whitespace, a comment or the end of the data. */
static enum rt_status pnm_read_number(struct pnm_cursor *c, uint32_t max, const char *what,
                                      uint32_t *out, struct rt_error *err)
{
    pnm_skip_space(c);
    if (c->p == c->end)
        return rt_error_set(err, RT_ERR_INVALID, "truncated PNM data (expected %s)", what);
    if (*c->p < '0' || *c->p > '9')
        return rt_error_set(err, RT_ERR_INVALID, "PNM %s is not a decimal number", what);
    uint64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        v = v * 10 + (uint64_t)(*c->p - '0');
        if (v > max)
            return rt_error_set(err, RT_ERR_INVALID, "PNM %s out of range (at most %u)", what,
                                (unsigned)max);
        c->p++;
    }
    if (c->p < c->end && !pnm_is_space(*c->p) && *c->p != '#')
        return rt_error_set(err, RT_ERR_INVALID, "PNM %s is not a decimal number", what);
    *out = (uint32_t)v;
    return RT_OK;
}

static uint8_t pnm_scale(uint32_t v, uint32_t maxval)
{
    if (maxval == 255)
        return (uint8_t)v;
    return (uint8_t)((v * 255u + maxval / 2) / maxval);
}

static enum rt_status pnm_read_raw(struct pnm_cursor *c, uint32_t maxval, struct rt_image *img,
                                   struct rt_error *err)
{
    size_t n = (size_t)img->width * (size_t)img->height * (size_t)img->channels;
    size_t bytes_per_sample = maxval > 255 ? 2 : 1;
    uint8_t *dst = img->pixels;
    const uint8_t *src = c->p;
    for (size_t i = 0; i < n; i++, src += bytes_per_sample) {
        uint32_t v = bytes_per_sample == 2 ? (uint32_t)src[0] << 8 | src[1] : src[0];
        if (v > maxval)
            return rt_error_set(err, RT_ERR_INVALID, "PNM sample exceeds maxval");
        dst[i] = pnm_scale(v, maxval);
    }
    return RT_OK;
}

static enum rt_status pnm_read_plain(struct pnm_cursor *c, uint32_t maxval, struct rt_image *img,
                                     struct rt_error *err)
{
    size_t n = (size_t)img->width * (size_t)img->height * (size_t)img->channels;
    for (size_t i = 0; i < n; i++) {
        uint32_t v;
        enum rt_status st = pnm_read_number(c, maxval, "sample", &v, err);
        if (st != RT_OK)
            return st;
        img->pixels[i] = pnm_scale(v, maxval);
    }
    return RT_OK;
}

enum rt_status rt_image_decode_pnm(const uint8_t *data, size_t len, const struct rt_image_bounds *b,
                                   struct rt_image *out, struct rt_error *err)
{
    if (len < 2 || data[0] != 'P')
        return rt_error_set(err, RT_ERR_INVALID, "not a PNM image");
    int channels;
    bool plain;
    switch (data[1]) {
    case '2': channels = 1; plain = true; break;
    case '3': channels = 3; plain = true; break;
    case '5': channels = 1; plain = false; break;
    case '6': channels = 3; plain = false; break;
    case '1':
    case '4':
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "PBM bitmaps are not supported");
    default:
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "unknown PNM variant");
    }
    struct pnm_cursor c = {data + 2, data + len};
    if (c.p == c.end || (!pnm_is_space(*c.p) && *c.p != '#'))
        return rt_error_set(err, RT_ERR_INVALID, "malformed PNM header");

    uint32_t width = 0, height = 0, maxval = 0;
    enum rt_status st;
    if ((st = pnm_read_number(&c, PNM_MAX_NUMBER, "width", &width, err)) != RT_OK ||
        (st = pnm_read_number(&c, PNM_MAX_NUMBER, "height", &height, err)) != RT_OK ||
        (st = pnm_read_number(&c, PNM_MAX_NUMBER, "maxval", &maxval, err)) != RT_OK)
        return st;
    if ((st = rt_image_check_size(width, height, b, err)) != RT_OK)
        return st;
    if (maxval < 1 || maxval > PNM_MAX_MAXVAL)
        return rt_error_set(err, RT_ERR_INVALID, "PNM maxval must be 1..%u", PNM_MAX_MAXVAL);

    /* Refuse short data before allocating: a raw raster needs every byte, a
     * plain one at least a digit and a separator per sample. */
    size_t samples;
    if (!rt_mul_size((size_t)width * (size_t)height, (size_t)channels, &samples)) /* sides checked */
        return rt_error_set(err, RT_ERR_TOO_LARGE, "PNM image size overflows");
    size_t remaining = (size_t)(c.end - c.p);
    size_t need = 0;
    if (plain) {
        need = 2 * samples;
    } else {
        /* Exactly one whitespace byte separates the header from the raster. */
        if (c.p == c.end || !pnm_is_space(*c.p))
            return rt_error_set(err, RT_ERR_INVALID, "malformed PNM header");
        c.p++;
        remaining--;
        if (!rt_mul_size(samples, maxval > 255 ? 2 : 1, &need))
            return rt_error_set(err, RT_ERR_TOO_LARGE, "PNM raster too large");
    }
    if (remaining < need)
        return rt_error_set(err, RT_ERR_INVALID, "truncated PNM data");

    struct rt_image img;
    if ((st = rt_image_alloc(&img, (int)width, (int)height, channels, err)) != RT_OK)
        return st;
    st = plain ? pnm_read_plain(&c, maxval, &img, err) : pnm_read_raw(&c, maxval, &img, err);
    if (st != RT_OK) {
        rt_image_free(&img);
        return st;
    }
    *out = img;
    return RT_OK;
}
