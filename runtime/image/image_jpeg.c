/*
 * image/image_jpeg.c - JPEG decoding with libjpeg(-turbo) from memory.
 *
 * libjpeg reports fatal errors through error_exit, which here longjmps back
 * to the decode so nothing is printed and nothing leaks. Grayscale JPEGs stay
 * gray; YCbCr and RGB ones become RGB; CMYK and YCCK ones (libjpeg turns
 * YCCK into CMYK) become RGB as PIL's convert("RGB") does, R = (255 - C)
 * (255 - K) / 255, reading Adobe's inverted samples (what Photoshop and
 * PIL write, marked by an Adobe APP14 segment) as 255 - C. The default
 * (ISLOW) DCT and fancy upsampling are kept, as PIL uses them.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h>
#include <jerror.h>

#include "runtime/image/image_impl.h"

/* A progressive JPEG may carry any number of scans, each a pass over the
 * whole coefficient buffer; real encoders write about ten. */
#define JPEG_MAX_SCANS 100

/* Decoder state, kept in the caller of the setjmp'ing function so it stays
 * valid after a longjmp (see image/image_png.c). */
struct jpeg_reader {
    struct jpeg_decompress_struct cinfo;
    struct jpeg_error_mgr jerr;
    struct jpeg_progress_mgr progress;
    jmp_buf jmp;
    enum rt_status status;   /* what a longjmp reports */
    const char *why;
    uint8_t *pixels;         /* owned until returned */
};

static void jpeg_fail(struct jpeg_reader *r, enum rt_status status, const char *why)
{
    r->status = status;
    r->why = why;
    longjmp(r->jmp, 1);
}

/* libjpeg's messages may embed numbers read from the file; a fixed message
 * per class of error is reported instead. */
static void jpeg_on_error(j_common_ptr c)
{
    struct jpeg_reader *r = c->client_data;
    if (c->err->msg_code == JERR_OUT_OF_MEMORY)
        jpeg_fail(r, RT_ERR_NO_MEMORY, "out of memory decoding JPEG");
    jpeg_fail(r, RT_ERR_INVALID, "corrupt JPEG data");
}

/* libjpeg treats running out of data or broken entropy-coded data as a
 * warning and fills the rest of the image with gray; such an image is
 * rejected instead. Other warnings (stray bytes before a marker, an odd
 * JFIF version) leave the pixels intact and are ignored. */
static void jpeg_on_message(j_common_ptr c, int level)
{
    if (level >= 0)
        return;
    struct jpeg_reader *r = c->client_data;
    switch (c->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
        jpeg_fail(r, RT_ERR_INVALID, "truncated JPEG data");
        break;
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE:
    case JWRN_MUST_RESYNC:
        jpeg_fail(r, RT_ERR_INVALID, "corrupt JPEG data");
        break;
    default:
        break;
    }
}

static void jpeg_on_progress(j_common_ptr c)
{
    struct jpeg_reader *r = c->client_data;
    if (((j_decompress_ptr)c)->input_scan_number > JPEG_MAX_SCANS)
        jpeg_fail(r, RT_ERR_INVALID, "JPEG has too many scans");
}

/* (a * b) / 255 rounded, as PIL's MULDIV255. */
static uint8_t mul_div255(unsigned a, unsigned b)
{
    unsigned t = a * b + 128;
    return (uint8_t)((t + (t >> 8)) >> 8);
}

/* n CMYK pixels to RGB, in place (the RGB of pixel i lands at 3 i, never
 * past the CMYK of pixel i, so a forward pass is safe), with PIL's
 * cmyk2rgb arithmetic: R = (255 - K) - C (255 - K) / 255. inverted: the
 * samples are 255 - C, ... (Adobe), else C, ... as the standard says. */
static void cmyk_to_rgb(uint8_t *p, size_t n, bool inverted)
{
    const unsigned flip = inverted ? 255 : 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *s = p + 4 * i;
        unsigned c = s[0] ^ flip, m = s[1] ^ flip, y = s[2] ^ flip, nk = 255 - (s[3] ^ flip);
        p[3 * i] = (uint8_t)(nk - mul_div255(c, nk));
        p[3 * i + 1] = (uint8_t)(nk - mul_div255(m, nk));
        p[3 * i + 2] = (uint8_t)(nk - mul_div255(y, nk));
    }
}

static enum rt_status jpeg_read_guarded(struct jpeg_reader *r, const uint8_t *data, size_t len,
                                        const struct rt_image_bounds *b, struct rt_image *out,
                                        struct rt_error *err)
{
    struct jpeg_decompress_struct *ci = &r->cinfo;
    if (setjmp(r->jmp))
        return rt_error_set(err, r->status, "%s", r->why);
    /* Created here, under the setjmp, because creation reports running out
     * of memory through error_exit too. */
    jpeg_create_decompress(ci);
    ci->progress = &r->progress;
    jpeg_mem_src(ci, data, (unsigned long)len);
    jpeg_read_header(ci, TRUE);

    enum rt_status st = rt_image_check_size(ci->image_width, ci->image_height, b, err);
    if (st != RT_OK)
        return st;
    int channels, components;    /* in the image; from the decoder (4 for CMYK) */
    switch (ci->jpeg_color_space) {
    case JCS_GRAYSCALE:
        ci->out_color_space = JCS_GRAYSCALE;
        channels = 1;
        break;
    case JCS_YCbCr:
    case JCS_RGB:
        ci->out_color_space = JCS_RGB;
        channels = 3;
        break;
    case JCS_CMYK:
    case JCS_YCCK:
        ci->out_color_space = JCS_CMYK;
        channels = 3;
        break;
    default:
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "JPEG colour space is not supported");
    }
    components = ci->out_color_space == JCS_CMYK ? 4 : channels;

    jpeg_start_decompress(ci);
    if (ci->output_components != components || ci->output_width != ci->image_width ||
        ci->output_height != ci->image_height)
        return rt_error_set(err, RT_ERR_INTERNAL, "JPEG decoder gave an unexpected layout");
    struct rt_image img;
    /* Room for the decoder's components; CMYK shrinks to RGB in place. */
    st = rt_image_alloc(&img, (int)ci->output_width, (int)ci->output_height, components, err);
    if (st != RT_OK)
        return st;
    r->pixels = img.pixels;
    size_t stride = (size_t)img.width * (size_t)components;
    while (ci->output_scanline < ci->output_height) {
        JSAMPROW row = r->pixels + (size_t)ci->output_scanline * stride;
        /* A memory source never suspends, so each call yields a row or
         * longjmps. */
        jpeg_read_scanlines(ci, &row, 1);
    }
    /* What follows the last scan (normally just EOI) is not read: the
     * pixels are complete. jpeg_destroy_decompress releases everything. */
    if (components == 4) {
        cmyk_to_rgb(r->pixels, (size_t)img.width * (size_t)img.height, ci->saw_Adobe_marker);
        img.channels = 3;
    }
    *out = img;
    r->pixels = NULL;
    return RT_OK;
}

enum rt_status rt_image_decode_jpeg(const uint8_t *data, size_t len,
                                    const struct rt_image_bounds *b, struct rt_image *out,
                                    struct rt_error *err)
{
    struct jpeg_reader r = {0};
    r.cinfo.err = jpeg_std_error(&r.jerr);
    r.jerr.error_exit = jpeg_on_error;
    r.jerr.emit_message = jpeg_on_message;
    r.cinfo.client_data = &r;
    r.progress.progress_monitor = jpeg_on_progress;
    enum rt_status st = jpeg_read_guarded(&r, data, len, b, out, err);
    /* Safe on a half-created decoder too: it frees what its pools hold. */
    jpeg_destroy_decompress(&r.cinfo);
    free(r.pixels);      /* NULL unless the decode failed after allocating */
    return st;
}
