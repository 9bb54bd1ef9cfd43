/*
 * test_image_formats.c - the decoders beside PNG and JPEG: WebP (lossless
 * exact, lossy close, alpha dropped, animation refused), BMP (every bit
 * depth, palettes, bit fields, row order) and CMYK/YCCK JPEG (with and
 * without Adobe's inverted samples), each malformed input with the exact
 * status it must get, and every prefix of each format failing cleanly.
 */
#include <stdio.h> /* before jpeglib.h, which needs FILE */
#include <jpeglib.h>
#include <stdlib.h>
#include <string.h>
#include <webp/encode.h>

#include "http_images.h"
#include "runtime/image/image.h"
#include "test.h"

static enum rt_status decode(const void *data, size_t len, struct rt_image *img)
{
    struct rt_error err = {0};
    enum rt_status st = rt_image_decode(data, len, NULL, img, &err);
    if (st != RT_OK && img->pixels)
        return RT_ERR_INTERNAL;      /* a failed decode must leave no buffer */
    return st;
}

static void fill_random(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)test_rand_int(0, 255);
}

/* Largest absolute difference between two byte arrays. */
static int max_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)a[i] - (int)b[i]);
        m = d > m ? d : m;
    }
    return m;
}

/* Every prefix shorter than the file must fail as INVALID or UNSUPPORTED. */
static int bad_prefixes(const uint8_t *data, size_t len, const char *what)
{
    int bad = 0;
    for (size_t cut = 0; cut < len; cut++) {
        struct rt_image img;
        enum rt_status st = decode(data, cut, &img);
        rt_image_free(&img);
        if (st != RT_ERR_INVALID && st != RT_ERR_UNSUPPORTED) {
            printf("  %s prefix of %zu/%zu bytes: %s\n", what, cut, len, rt_status_name(st));
            bad++;
        }
    }
    return bad;
}

/* ------------------------------------------------------------ WebP */

static uint8_t *webp_copy(uint8_t *webp, size_t n)
{
    uint8_t *c = n ? malloc(n) : NULL;
    if (c)
        memcpy(c, webp, n);
    WebPFree(webp);
    return c;
}

TEST(image_webp_decode)
{
    enum { W = 13, H = 7 };
    uint8_t rgb[W * H * 3], rgba[W * H * 4];
    fill_random(rgb, sizeof(rgb));
    for (size_t i = 0; i < (size_t)W * H; i++) {
        memcpy(rgba + 4 * i, rgb + 3 * i, 3);
        rgba[4 * i + 3] = (uint8_t)test_rand_int(0, 255);
    }
    uint8_t *enc;
    size_t len = WebPEncodeLosslessRGB(rgb, W, H, W * 3, &enc);
    uint8_t *lossless = webp_copy(enc, len);
    ASSERT_TRUE(lossless);
    ASSERT_EQ_INT(rt_image_sniff(lossless, len), RT_IMAGE_WEBP);
    struct rt_image img;
    ASSERT_EQ_INT(decode(lossless, len, &img), RT_OK);
    ASSERT_EQ_INT(img.width, W);
    ASSERT_EQ_INT(img.height, H);
    ASSERT_EQ_INT(img.channels, 3);
    int d = max_diff(img.pixels, rgb, sizeof(rgb));
    rt_image_free(&img);
    free(lossless);
    ASSERT_EQ_INT(d, 0);

    /* Alpha is dropped, the colours kept (lossless with exact RGB under alpha). */
    WebPConfig cfg;
    ASSERT_TRUE(WebPConfigInit(&cfg));
    cfg.lossless = 1;
    cfg.exact = 1;
    WebPPicture pic;
    ASSERT_TRUE(WebPPictureInit(&pic));
    pic.use_argb = 1;
    pic.width = W;
    pic.height = H;
    WebPMemoryWriter wr;
    WebPMemoryWriterInit(&wr);
    pic.writer = WebPMemoryWrite;
    pic.custom_ptr = &wr;
    bool ok = WebPPictureImportRGBA(&pic, rgba, W * 4) && WebPEncode(&cfg, &pic);
    WebPPictureFree(&pic);
    enum rt_status st = ok ? decode(wr.mem, wr.size, &img) : RT_ERR_INTERNAL;
    WebPMemoryWriterClear(&wr);
    ASSERT_EQ_INT(st, RT_OK);
    d = max_diff(img.pixels, rgb, sizeof(rgb));
    rt_image_free(&img);
    ASSERT_EQ_INT(d, 0);

    /* Lossy: a smooth picture comes back within a few levels. */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++)
                rgb[(y * W + x) * 3 + c] = (uint8_t)(60 + 8 * x + 6 * y + 20 * c);
    len = WebPEncodeRGB(rgb, W, H, W * 3, 95, &enc);
    uint8_t *lossy = webp_copy(enc, len);
    ASSERT_TRUE(lossy);
    st = decode(lossy, len, &img);
    d = st == RT_OK ? max_diff(img.pixels, rgb, sizeof(rgb)) : 255;
    rt_image_free(&img);
    free(lossy);
    ASSERT_EQ_INT(st, RT_OK);
    ASSERT_LE(d, 16);

    return TEST_PASS;
}

TEST(image_webp_malformed_status)
{
    enum { W = 16, H = 16 };
    uint8_t rgb[W * H * 3];
    fill_random(rgb, sizeof(rgb));
    uint8_t *enc;
    size_t len = WebPEncodeLosslessRGB(rgb, W, H, W * 3, &enc);
    uint8_t *webp = webp_copy(enc, len);
    ASSERT_TRUE(webp);
    int bad = bad_prefixes(webp, len, "WebP");
    struct rt_image img;
    /* Bytes of the compressed stream flipped: corrupt data. */
    uint8_t *broken = malloc(len);
    if (!broken)
        free(webp);
    ASSERT_TRUE(broken);
    memcpy(broken, webp, len);
    for (size_t i = 30; i < len; i += 3)
        broken[i] ^= 0xa5;
    enum rt_status st_broken = decode(broken, len, &img);
    rt_image_free(&img);
    /* A "VP8L" header claiming 16384 x 16384 (14-bit sides minus one). */
    memcpy(broken, webp, len);
    broken[21] = 0xff;
    broken[22] = 0xff;
    broken[23] = 0xff;
    broken[24] = (uint8_t)((broken[24] & 0xf0) | 0x0f);
    enum rt_status st_huge = decode(broken, len, &img);
    rt_image_free(&img);
    free(broken);
    free(webp);
    ASSERT_EQ_INT(bad, 0);
    ASSERT_EQ_INT(st_broken, RT_ERR_INVALID);
    ASSERT_EQ_INT(st_huge, RT_ERR_TOO_LARGE);
    /* RIFF/WEBP with nothing after: truncated, not unknown. */
    ASSERT_EQ_INT(decode("RIFF\x04\0\0\0WEBP", 12, &img), RT_ERR_INVALID);
    return TEST_PASS;
}

/* ------------------------------------------------------------ BMP */

static void put16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, v);
    put16(p + 2, v >> 16);
}

/* A BMP with a 40-byte header (or 12, OS/2) and the given rows, palette
 * and (BI_BITFIELDS) masks; returns its length. buf must hold it. */
struct bmp_spec {
    int width, height, bpp, compression, dib;
    const uint8_t *palette;      /* BGRX or BGR (OS/2) entries */
    int palette_len;
    const uint32_t *masks;       /* 3 masks for BI_BITFIELDS */
    const uint8_t *rows;         /* stride-padded, in file order */
    size_t rows_len;
};

static size_t make_bmp(uint8_t *b, const struct bmp_spec *s)
{
    size_t entry = s->dib == 12 ? 3 : 4;
    size_t at = 14 + (size_t)s->dib;
    memset(b, 0, at);
    b[0] = 'B';
    b[1] = 'M';
    put32(b + 14, (uint32_t)s->dib);
    if (s->dib == 12) {
        put16(b + 18, (uint32_t)s->width);
        put16(b + 20, (uint32_t)s->height);
        put16(b + 22, 1);
        put16(b + 24, (uint32_t)s->bpp);
    } else {
        put32(b + 18, (uint32_t)s->width);
        put32(b + 22, (uint32_t)s->height);
        put16(b + 26, 1);
        put16(b + 28, (uint32_t)s->bpp);
        put32(b + 30, (uint32_t)s->compression);
        put32(b + 46, (uint32_t)s->palette_len);
    }
    for (int c = 0; s->masks && c < 3; c++, at += 4)
        put32(b + at, s->masks[c]);
    if (s->palette) {
        memcpy(b + at, s->palette, (size_t)s->palette_len * entry);
        at += (size_t)s->palette_len * entry;
    }
    put32(b + 10, (uint32_t)at);
    memcpy(b + at, s->rows, s->rows_len);
    put32(b + 2, (uint32_t)(at + s->rows_len));
    return at + s->rows_len;
}

static enum rt_status decode_bmp(const struct bmp_spec *s, struct rt_image *img)
{
    static uint8_t buf[4096];
    return decode(buf, make_bmp(buf, s), img);
}

/* The image's pixels equal want (RGB, top row first). */
#define ASSERT_PIXELS(img, want) do {                                               \
        ASSERT_EQ_INT((img).channels, 3);                                        \
        int d_ = max_diff((img).pixels, (want), sizeof(want));                    \
        rt_image_free(&(img));                                                   \
        ASSERT_EQ_INT(d_, 0);                                                    \
    } while (0)

TEST(image_bmp_formats)
{
    struct rt_image img;
    /* 24-bit 2x2, bottom-up: file rows are BGR, padded to 8 bytes. */
    static const uint8_t rows24[] = {10, 20, 30, 40, 50, 60, 0, 0, 70, 80, 90, 1, 2, 3, 0, 0};
    static const uint8_t want24[] = {90, 80, 70, 3, 2, 1, 30, 20, 10, 60, 50, 40};
    struct bmp_spec s = {2, 2, 24, 0, 40, NULL, 0, NULL, rows24, sizeof(rows24)};
    ASSERT_EQ_INT(decode_bmp(&s, &img), RT_OK);
    ASSERT_EQ_INT(img.width, 2);
    ASSERT_EQ_INT(img.height, 2);
    ASSERT_PIXELS(img, want24);
    /* The same rows top-down (negative height). */
    static const uint8_t want24_td[] = {30, 20, 10, 60, 50, 40, 90, 80, 70, 3, 2, 1};
    s.height = -2;
    ASSERT_EQ_INT(decode_bmp(&s, &img), RT_OK);
    ASSERT_PIXELS(img, want24_td);

    /* 8-bit palette, 4-bit and 1-bit, one row of 3 pixels. */
    static const uint8_t pal[] = {0, 0, 255, 0, 0, 255, 0, 0, 255, 0, 0, 0, 7, 8, 9, 0};
    static const uint8_t want_pal[] = {255, 0, 0, 0, 255, 0, 9, 8, 7};
    static const uint8_t row8[] = {0, 1, 3, 0};
    s = (struct bmp_spec){3, 1, 8, 0, 40, pal, 4, NULL, row8, sizeof(row8)};
    ASSERT_EQ_INT(decode_bmp(&s, &img), RT_OK);
    ASSERT_PIXELS(img, want_pal);
    static const uint8_t row4[] = {0x01, 0x30, 0, 0};
    s = (struct bmp_spec){3, 1, 4, 0, 40, pal, 4, NULL, row4, sizeof(row4)};
    ASSERT_EQ_INT(decode_bmp(&s, &img), RT_OK);
    ASSERT_PIXELS(img, want_pal);
    static const uint8_t row1[] = {0x40, 0, 0, 0};     /* 0 1 0 */
    static const uint8_t want1[] = {255, 0, 0, 0, 255, 0, 255, 0, 0};
    s = (struct bmp_spec){3, 1, 1, 0, 40, pal, 2, NULL, row1, sizeof(row1)};
    ASSERT_EQ_INT(decode_bmp(&s, &img), RT_OK);
    ASSERT_PIXELS(img, want1);
    /* OS/2 core header: 3-byte palette entries, 16-bit sizes. */
    static const uint8_t pal3[] = {0, 0, 255, 0, 255, 0};
    s = (struct bmp_spec){3, 1, 1, 0, 12, pal3, 2, NULL, row1, sizeof(row1)};
    ASSERT_EQ_INT(decode_bmp(&s, &img), RT_OK);
    ASSERT_PIXELS(img, want1);

    /* 16-bit 5-5-5 (BI_RGB) and 5-6-5 (BI_BITFIELDS); 32-bit BGRX and
     * bit fields. 5 bits scale to 8 as v * 255 / 31, rounded. */
    static const uint8_t row555[] = {0x1f, 0x7c, 0xe0, 0x03};   /* 0x7c1f, 0x03e0 */
    static const uint8_t want555[] = {255, 0, 255, 0, 255, 0};
    s = (struct bmp_spec){2, 1, 16, 0, 40, NULL, 0, NULL, row555, sizeof(row555)};
    ASSERT_EQ_INT(decode_bmp(&s, &img), RT_OK);
    ASSERT_PIXELS(img, want555);
    static const uint32_t m565[] = {0xf800, 0x07e0, 0x001f};
    static const uint8_t row565[] = {0x10, 0x84, 0xff, 0xff};   /* 0x8410: 16/31, 32/63, 16/31 */
    static const uint8_t want565[] = {132, 130, 132, 255, 255, 255};
    s = (struct bmp_spec){2, 1, 16, 3, 40, NULL, 0, m565, row565, sizeof(row565)};
    ASSERT_EQ_INT(decode_bmp(&s, &img), RT_OK);
    ASSERT_PIXELS(img, want565);
    static const uint8_t row32[] = {1, 2, 3, 200};
    static const uint8_t want32[] = {3, 2, 1};
    s = (struct bmp_spec){1, 1, 32, 0, 40, NULL, 0, NULL, row32, sizeof(row32)};
    ASSERT_EQ_INT(decode_bmp(&s, &img), RT_OK);
    ASSERT_PIXELS(img, want32);
    static const uint32_t mrgba[] = {0xff000000, 0x00ff0000, 0x0000ff00};
    static const uint8_t want32bf[] = {200, 3, 2};
    s = (struct bmp_spec){1, 1, 32, 3, 40, NULL, 0, mrgba, row32, sizeof(row32)};
    ASSERT_EQ_INT(decode_bmp(&s, &img), RT_OK);
    ASSERT_PIXELS(img, want32bf);

    /* The shared encoder's 8-bit gray and 24-bit files, the HTTP test's. */
    uint8_t gray[5 * 3];
    fill_random(gray, sizeof(gray));
    for (int bpp = 8; bpp <= 24; bpp += 16) {
        uint8_t *bmp;
        size_t len;
        ASSERT_TRUE(http_encode_bmp(gray, 5, 3, bpp, bpp == 24, &bmp, &len));
        ASSERT_EQ_INT(rt_image_sniff(bmp, len), RT_IMAGE_BMP);
        enum rt_status st = decode(bmp, len, &img);
        int bad = bad_prefixes(bmp, len, "BMP");
        free(bmp);
        ASSERT_EQ_INT(st, RT_OK);
        ASSERT_EQ_INT(bad, 0);
        for (size_t i = 0; i < 15; i++)
            TEST_FAIL_IF(img.pixels[3 * i] != gray[i] || img.pixels[3 * i + 2] != gray[i],
                         "%d-bit pixel %zu: %d, want %d", bpp, i, img.pixels[3 * i], gray[i]);
        rt_image_free(&img);
    }
    return TEST_PASS;
}

TEST(image_bmp_malformed_status)
{
    struct rt_image img;
    static const uint8_t rows[64] = {0};
    static const uint8_t pal[] = {0, 0, 0, 0, 255, 255, 255, 0};
    static const uint8_t row8[] = {2, 0, 0, 0};   /* index 2 of a 2-entry palette */
    static const uint32_t holey[] = {0xf00f, 0x0ff0, 0};
    static const struct {
        const char *name;
        struct bmp_spec s;
        enum rt_status want;
    } cases[] = {
        {"rle8", {2, 2, 8, 1, 40, pal, 2, NULL, rows, 8}, RT_ERR_UNSUPPORTED},
        {"rle4", {2, 2, 4, 2, 40, pal, 2, NULL, rows, 8}, RT_ERR_UNSUPPORTED},
        {"embedded jpeg", {2, 2, 24, 4, 40, NULL, 0, NULL, rows, 16}, RT_ERR_UNSUPPORTED},
        {"rows missing", {4, 4, 24, 0, 40, NULL, 0, NULL, rows, 47}, RT_ERR_INVALID},
        {"palette index past palette", {1, 1, 8, 0, 40, pal, 2, NULL, row8, 4}, RT_ERR_INVALID},
        {"7 bits per pixel", {1, 1, 7, 0, 40, NULL, 0, NULL, rows, 4}, RT_ERR_INVALID},
        {"zero width", {0, 1, 24, 0, 40, NULL, 0, NULL, rows, 4}, RT_ERR_INVALID},
        {"negative width", {-3, 1, 24, 0, 40, NULL, 0, NULL, rows, 12}, RT_ERR_INVALID},
        {"60000 x 60000", {60000, 60000, 24, 0, 40, NULL, 0, NULL, rows, 64}, RT_ERR_TOO_LARGE},
        {"20000 x 1", {20000, 1, 24, 0, 40, NULL, 0, NULL, rows, 64}, RT_ERR_TOO_LARGE},
        {"bit fields not contiguous", {1, 1, 16, 3, 40, NULL, 0, holey, rows, 4}, RT_ERR_INVALID},
        {"bit fields on 24 bits", {1, 1, 24, 3, 40, NULL, 0, holey, rows, 4}, RT_ERR_INVALID},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum rt_status st = decode_bmp(&cases[i].s, &img);
        rt_image_free(&img);
        TEST_FAIL_IF(st != cases[i].want, "%s: status %s, want %s", cases[i].name,
                     rt_status_name(st), rt_status_name(cases[i].want));
    }
    /* Bad planes; a data offset inside the header. */
    static uint8_t buf[256];
    struct bmp_spec s = {2, 1, 24, 0, 40, NULL, 0, NULL, rows, 8};
    size_t len = make_bmp(buf, &s);
    buf[26] = 2;
    ASSERT_EQ_INT(decode(buf, len, &img), RT_ERR_INVALID);
    len = make_bmp(buf, &s);
    put32(buf + 10, 20);
    ASSERT_EQ_INT(decode(buf, len, &img), RT_ERR_INVALID);
    /* "BM" then text is not a BMP: unknown format, 415 at the server. */
    ASSERT_EQ_INT(decode("BMW is not a bitmap, just a car", 31, &img), RT_ERR_UNSUPPORTED);
    return TEST_PASS;
}

/* ------------------------------------------------------------ CMYK JPEG */

/* Encodes CMYK samples as JPEG, stored as CMYK or YCCK, with or without
 * the Adobe marker (libjpeg writes the samples as given either way). */
static uint8_t *encode_cmyk(const uint8_t *cmyk, int w, int h, J_COLOR_SPACE stored, bool adobe,
                            size_t *len)
{
    struct http_jpeg how = {.components = 4, .quality = 98, .stored = (int)stored, .adobe = adobe};
    uint8_t *jpg = NULL;
    return http_encode_jpeg_as(cmyk, w, h, &how, &jpg, len) ? jpg : NULL;
}

TEST(image_jpeg_cmyk)
{
    enum { W = 16, H = 8 };
    uint8_t cmyk[W * H * 4], want_plain[W * H * 3], want_adobe[W * H * 3];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = cmyk + (size_t)(y * W + x) * 4;
            p[0] = (uint8_t)(10 * x);
            p[1] = (uint8_t)(20 * y);
            p[2] = (uint8_t)(100 + 5 * (x + y));
            p[3] = (uint8_t)(40 + 3 * x);
            for (int c = 0; c < 3; c++) {
                /* The standard: samples are C, M, Y, K. Adobe: 255 - each. */
                int nk = 255 - p[3], v = p[c];
                want_plain[(y * W + x) * 3 + c] = (uint8_t)((255 - v) * nk / 255);
                want_adobe[(y * W + x) * 3 + c] = (uint8_t)(v * p[3] / 255);
            }
        }
    static const struct {
        J_COLOR_SPACE stored;
        bool adobe;
    } cases[] = {{JCS_CMYK, true}, {JCS_CMYK, false}, {JCS_YCCK, true}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len;
        uint8_t *jpg = encode_cmyk(cmyk, W, H, cases[i].stored, cases[i].adobe, &len);
        struct rt_image img;
        enum rt_status st = decode(jpg, len, &img);
        int bad = i == 0 ? bad_prefixes(jpg, len - 2, "CMYK JPEG") : 0;
        free(jpg);
        TEST_FAIL_IF(st != RT_OK, "case %zu: %s", i, rt_status_name(st));
        ASSERT_EQ_INT(img.channels, 3);
        ASSERT_EQ_INT(img.width, W);
        int d = max_diff(img.pixels, cases[i].adobe ? want_adobe : want_plain, sizeof(want_plain));
        rt_image_free(&img);
        printf("  %s%s: largest difference %d\n", cases[i].stored == JCS_YCCK ? "YCCK" : "CMYK",
               cases[i].adobe ? " (Adobe, inverted)" : "", d);
        ASSERT_LE(d, 8);
        ASSERT_EQ_INT(bad, 0);
    }
    return TEST_PASS;
}
