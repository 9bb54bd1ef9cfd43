/*
 * image/image_png.c - PNG decoding (libpng's classic API, for full control of the
 * conversions) and encoding (libpng's simplified API, for tests and tools).
 *
 * Every PNG is decoded to 8-bit gray or RGB: palettes expand to RGB, gray
 * below 8 bits expands to 8, 16-bit samples are scaled (rounded) to 8, and
 * alpha, including tRNS transparency, is dropped rather than composited, so
 * the colour values are exactly those stored in the file. Gamma chunks are
 * ignored, as PIL and torchvision ignore them.
 */
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_checked.h"
#include "runtime/image/image_impl.h"

/* Decoder state. It lives in the caller of the function that calls setjmp,
 * so what libpng's callbacks and the decode write into it stays valid after
 * a longjmp (locals of the setjmp'ing function would be indeterminate). */
struct png_reader {
    const uint8_t *data;
    size_t len, pos;
    bool truncated;          /* the read callback ran out of bytes */
    jmp_buf jmp;
    png_structp png;
    png_infop info;
    uint8_t *pixels;         /* height x width x channels, owned until returned */
    png_bytep *rows;         /* height pointers into pixels */
};

/* libpng's messages may name chunks taken from the file, so they are not
 * passed on; the caller reports a fixed message instead. */
static void png_on_error(png_structp png, png_const_charp msg)
{
    struct png_reader *r = png_get_error_ptr(png);
    longjmp(r->jmp, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    /* Warnings are about recoverable oddities (bad ancillary chunks); the
     * image itself decodes, so there is nothing to report. */
}

static void png_on_read(png_structp png, png_bytep dst, size_t n)
{
    struct png_reader *r = png_get_io_ptr(png);
    if (n > r->len - r->pos) {
        r->truncated = true;
        png_error(png, "truncated");
    }
    memcpy(dst, r->data + r->pos, n);
    r->pos += n;
}

/* Ancillary chunks that only cost time and memory (text, ICC profiles):
 * libpng skips them unread. Five bytes each: the name and a NUL. */
static const png_byte IGNORED_CHUNKS[] = "iCCP\0iTXt\0tEXt\0zTXt\0sPLT\0eXIf";

static enum rt_status png_read_guarded(struct png_reader *r, const struct rt_image_bounds *b,
                                       struct rt_image *out, struct rt_error *err)
{
    if (setjmp(r->jmp))
        return rt_error_set(err, RT_ERR_INVALID, r->truncated ? "truncated PNG data"
                                                              : "corrupt PNG data");
    png_set_read_fn(r->png, r, png_on_read);
    /* libpng's own size limits would fail as a corrupt file; the bounds below
     * decide instead, so an oversized image is reported as too large. */
    png_set_user_limits(r->png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
    png_set_keep_unknown_chunks(r->png, PNG_HANDLE_CHUNK_NEVER, IGNORED_CHUNKS,
                                (int)(sizeof(IGNORED_CHUNKS) / 5));
    png_read_info(r->png, r->info);

    png_uint_32 width, height;
    int depth, color;
    png_get_IHDR(r->png, r->info, &width, &height, &depth, &color, NULL, NULL, NULL);
    enum rt_status st = rt_image_check_size(width, height, b, err);
    if (st != RT_OK)
        return st;

    if (color == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(r->png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(r->png);
    if (depth == 16)
        png_set_scale_16(r->png);
    png_set_strip_alpha(r->png);
    png_set_interlace_handling(r->png);
    png_read_update_info(r->png, r->info);

    int channels = png_get_channels(r->png, r->info);
    if (png_get_bit_depth(r->png, r->info) != 8 || (channels != 1 && channels != 3) ||
        png_get_rowbytes(r->png, r->info) != (size_t)width * (size_t)channels)
        return rt_error_set(err, RT_ERR_INTERNAL, "PNG conversion gave an unexpected layout");

    struct rt_image img;
    st = rt_image_alloc(&img, (int)width, (int)height, channels, err);
    if (st != RT_OK)
        return st;
    r->pixels = img.pixels;
    size_t row_ptrs;
    if (!rt_mul_size(height, sizeof(png_bytep), &row_ptrs) || !(r->rows = malloc(row_ptrs)))
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for PNG rows");
    for (png_uint_32 y = 0; y < height; y++)
        r->rows[y] = r->pixels + (size_t)y * width * (size_t)channels;
    png_read_image(r->png, r->rows);
    /* Chunks after the image data (and a missing IEND) are not read: the
     * pixels are complete, as PIL also accepts them. */
    *out = img;
    r->pixels = NULL;
    return RT_OK;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

enum rt_status rt_image_decode_png(const uint8_t *data, size_t len, const struct rt_image_bounds *b,
                                   struct rt_image *out, struct rt_error *err)
{
    /* IHDR must be the first chunk (8-byte signature, length, type, width,
     * height). Its size is checked here, before libpng reads on: png_read_info
     * goes through every chunk up to the image data (decompressing text and
     * profiles), which an oversized image should never cost. */
    if (len >= 24 && memcmp(data + 12, "IHDR", 4) == 0) {
        enum rt_status st = rt_image_check_size(be32(data + 16), be32(data + 20), b, err);
        if (st != RT_OK)
            return st;
    }
    struct png_reader r = {.data = data, .len = len};
    r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, png_on_error, png_on_warning);
    if (r.png)
        r.info = png_create_info_struct(r.png);
    if (!r.png || !r.info) {
        png_destroy_read_struct(&r.png, NULL, NULL);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for the PNG decoder");
    }
    enum rt_status st = png_read_guarded(&r, b, out, err);
    png_destroy_read_struct(&r.png, &r.info, NULL);
    free(r.rows);
    free(r.pixels);      /* NULL unless the decode failed after allocating */
    return st;
}

enum rt_status rt_image_encode_png(const struct rt_image *img, uint8_t **out, size_t *out_len,
                                   struct rt_error *err)
{
    *out = NULL;
    *out_len = 0;
    if (!img->pixels || img->width < 1 || img->height < 1 ||
        (img->channels != 1 && img->channels != 3))
        return rt_error_set(err, RT_ERR_INVALID, "PNG encode needs a gray or RGB image");
    png_image pi;
    memset(&pi, 0, sizeof(pi));
    pi.version = PNG_IMAGE_VERSION;
    pi.width = (png_uint_32)img->width;
    pi.height = (png_uint_32)img->height;
    pi.format = img->channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;

    /* The first call measures, the second writes. */
    png_alloc_size_t size = 0;
    if (!png_image_write_to_memory(&pi, NULL, &size, 0, img->pixels, 0, NULL))
        return rt_error_set(err, RT_ERR_INTERNAL, "PNG encode failed: %s", pi.message);
    uint8_t *buf = malloc(size);
    if (!buf)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory for PNG encode");
    if (!png_image_write_to_memory(&pi, buf, &size, 0, img->pixels, 0, NULL)) {
        free(buf);
        return rt_error_set(err, RT_ERR_INTERNAL, "PNG encode failed: %s", pi.message);
    }
    *out = buf;
    *out_len = size;
    return RT_OK;
}
