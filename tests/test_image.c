/*
 * test_image.c - image decoding: PNG and JPEG round trips, every PNG colour
 * type and bit depth (files from tests/data/images/make_images.py), PGM/PPM
 * parsing, and each malformed input with the exact status it must get.
 * Preprocessing numerics are in test_image_preprocess.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <zlib.h>

#include "http_images.h"
#include "runtime/image/image.h"
#include "test.h"

/* Reads tests/data/images/<name>; NULL when missing. */
static uint8_t *read_test_file(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/tests/data/images/%s", test_root(), name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* A smooth, slightly noisy test picture (samples 30..221, never wrapping):
 * JPEG keeps such content within a few levels. */
static void fill_smooth(uint8_t *p, int w, int h, int ch)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++)
                p[(y * w + x) * ch + c] = (uint8_t)(30 + (120 * x) / w + (50 * y) / h + 10 * c +
                                                    test_rand_int(0, 2));
}

/* A valid progressive scan script of 1 + 3 * 63 scans for an RGB image:
 * all DC coefficients, then every AC coefficient of every component in a
 * scan of its own. */
#define MANY_SCANS (1 + 3 * 63)
static jpeg_scan_info many_scans[MANY_SCANS];

static void make_many_scans(void)
{
    many_scans[0] = (jpeg_scan_info){.comps_in_scan = 3, .component_index = {0, 1, 2}};
    for (int c = 0; c < 3; c++)
        for (int k = 1; k <= 63; k++)
            many_scans[c * 63 + k] = (jpeg_scan_info){
                .comps_in_scan = 1, .component_index = {c}, .Ss = k, .Se = k};
}

/* Gray or RGB pixels as a JPEG, baseline or (RGB only) progressive with
 * MANY_SCANS scans. */
static uint8_t *encode_jpeg_scans(const uint8_t *pixels, int w, int h, int ch, int quality,
                                  bool scans, size_t *len)
{
    if (scans)
        make_many_scans();
    struct http_jpeg how = {.components = ch, .quality = quality, .scans = scans ? many_scans : NULL,
                            .n_scans = scans ? MANY_SCANS : 0};
    uint8_t *jpg = NULL;
    return http_encode_jpeg_as(pixels, w, h, &how, &jpg, len) ? jpg : NULL;
}

static uint8_t *encode_jpeg(const uint8_t *pixels, int w, int h, int ch, int quality,
                            size_t *len)
{
    return encode_jpeg_scans(pixels, w, h, ch, quality, false, len);
}

static enum rt_status decode(const void *data, size_t len, struct rt_image *img)
{
    struct rt_error err = {0};
    enum rt_status st = rt_image_decode(data, len, NULL, img, &err);
    if (st != RT_OK && img->pixels)
        return RT_ERR_INTERNAL;      /* a failed decode must leave no buffer */
    return st;
}

TEST(image_sniff)
{
    static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0};
    static const uint8_t jpg[] = {0xff, 0xd8, 0xff, 0xe0};
    ASSERT_EQ_INT(rt_image_sniff(png, sizeof(png)), RT_IMAGE_PNG);
    ASSERT_EQ_INT(rt_image_sniff(png, 7), RT_IMAGE_UNKNOWN);
    ASSERT_EQ_INT(rt_image_sniff(jpg, sizeof(jpg)), RT_IMAGE_JPEG);
    ASSERT_EQ_INT(rt_image_sniff("P5\n1 1\n255\n", 11), RT_IMAGE_PNM);
    ASSERT_EQ_INT(rt_image_sniff("P3 1 1 255 1 2 3", 16), RT_IMAGE_PNM);
    ASSERT_EQ_INT(rt_image_sniff("P7\nWIDTH 1", 10), RT_IMAGE_UNKNOWN);
    ASSERT_EQ_INT(rt_image_sniff("Pizza", 5), RT_IMAGE_UNKNOWN);
    ASSERT_EQ_INT(rt_image_sniff("", 0), RT_IMAGE_UNKNOWN);
    return TEST_PASS;
}

TEST(image_png_roundtrip)
{
    for (int ch = 1; ch <= 3; ch += 2) {
        for (int round = 0; round < 4; round++) {
            struct rt_image img = {test_rand_int(1, 70), test_rand_int(1, 70), ch, NULL};
            size_t n = (size_t)img.width * (size_t)img.height * (size_t)ch;
            img.pixels = malloc(n);
            ASSERT_TRUE(img.pixels);
            for (size_t i = 0; i < n; i++)
                img.pixels[i] = (uint8_t)test_rand_int(0, 255);
            uint8_t *png;
            size_t len;
            struct rt_error err = {0};
            ASSERT_EQ_INT(rt_image_encode_png(&img, &png, &len, &err), RT_OK);
            ASSERT_EQ_INT(rt_image_sniff(png, len), RT_IMAGE_PNG);
            struct rt_image back;
            enum rt_status st = decode(png, len, &back);
            free(png);
            int same = st == RT_OK && back.width == img.width && back.height == img.height &&
                       back.channels == ch && memcmp(back.pixels, img.pixels, n) == 0;
            rt_image_free(&back);
            rt_image_free(&img);
            ASSERT_EQ_INT(st, RT_OK);
            ASSERT_TRUE(same);
        }
    }
    return TEST_PASS;
}

struct png_case {
    const char *file;
    int width, height, channels;
    uint8_t first[12];       /* the first width*height*channels samples, up to 12 */
};

TEST(image_png_formats)
{
    /* Expected samples follow from make_images.py: low bit depths expand to
     * 0..255, 16 bits scale with rounding (v * 255 / 65535), alpha is
     * dropped, palettes expand to RGB. */
    static const struct png_case cases[] = {
        {"gray1.png", 5, 3, 1, {0, 255, 0, 255, 0, 255, 0, 255, 0, 255, 0, 255}},
        {"gray2.png", 4, 1, 1, {0, 85, 170, 255}},
        {"gray16.png", 3, 2, 1, {0, 255, 128, 100, 48, 156}},
        {"graya16.png", 2, 1, 1, {4, 233}},
        {"rgba.png", 2, 2, 3, {10, 20, 30, 40, 50, 60, 70, 80, 90, 200, 210, 220}},
        {"rgb16.png", 2, 1, 3, {0, 255, 3, 4, 8, 117}},
        {"palette_trns.png", 3, 2, 3, {255, 0, 0, 0, 255, 0, 0, 0, 255, 17, 34, 51}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct png_case *c = &cases[i];
        size_t len;
        uint8_t *data = read_test_file(c->file, &len);
        TEST_FAIL_IF(!data, "missing tests/data/images/%s", c->file);
        struct rt_image img;
        enum rt_status st = decode(data, len, &img);
        free(data);
        TEST_FAIL_IF(st != RT_OK, "%s: status %d", c->file, (int)st);
        int n = c->width * c->height * c->channels;
        bool same = img.width == c->width && img.height == c->height &&
                    img.channels == c->channels &&
                    memcmp(img.pixels, c->first, (size_t)(n < 12 ? n : 12)) == 0;
        rt_image_free(&img);
        TEST_FAIL_IF(!same, "%s decoded to unexpected pixels", c->file);
    }
    return TEST_PASS;
}

TEST(image_png_interlaced)
{
    size_t len;
    uint8_t *data = read_test_file("interlaced.png", &len);
    ASSERT_TRUE(data);
    struct rt_image img;
    enum rt_status st = decode(data, len, &img);
    free(data);
    ASSERT_EQ_INT(st, RT_OK);
    int bad = img.width != 9 || img.height != 9 || img.channels != 3;
    for (int y = 0; !bad && y < 9; y++)
        for (int x = 0; x < 9; x++) {
            const uint8_t *p = img.pixels + (size_t)(y * 9 + x) * 3;
            bad |= p[0] != 20 * x || p[1] != 20 * y || p[2] != 10 * (x + y);
        }
    rt_image_free(&img);
    ASSERT_FALSE(bad);
    return TEST_PASS;
}

/* Max and mean absolute difference between two byte arrays. */
static void diff_stats(const uint8_t *a, const uint8_t *b, size_t n, int *max, double *mean)
{
    long sum = 0;
    *max = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)a[i] - (int)b[i]);
        sum += d;
        *max = d > *max ? d : *max;
    }
    *mean = (double)sum / (double)n;
}

TEST(image_jpeg_roundtrip)
{
    for (int ch = 1; ch <= 3; ch += 2) {
        int w = test_rand_int(8, 64), h = test_rand_int(8, 64);
        size_t n = (size_t)w * (size_t)h * (size_t)ch, len;
        uint8_t *px = malloc(n);
        ASSERT_TRUE(px);
        fill_smooth(px, w, h, ch);
        uint8_t *jpg = encode_jpeg(px, w, h, ch, 95, &len);
        struct rt_image img;
        enum rt_status st = decode(jpg, len, &img);
        free(jpg);
        int max = 255;
        double mean = 255;
        if (st == RT_OK && img.width == w && img.height == h && img.channels == ch)
            diff_stats(img.pixels, px, n, &max, &mean);
        rt_image_free(&img);
        free(px);
        ASSERT_EQ_INT(st, RT_OK);
        /* Quality 95 on smooth content: a few levels at most. */
        ASSERT_LE(max, 12);
        ASSERT_LE(mean, 2.0);
    }
    return TEST_PASS;
}

TEST(image_jpeg_progressive_and_cmyk)
{
    size_t len;
    uint8_t *data = read_test_file("progressive.jpg", &len);
    ASSERT_TRUE(data);
    struct rt_image img;
    enum rt_status st = decode(data, len, &img);
    free(data);
    ASSERT_EQ_INT(st, RT_OK);
    uint8_t want[16 * 16 * 3];
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++) {
            want[(y * 16 + x) * 3 + 0] = (uint8_t)(8 * x);
            want[(y * 16 + x) * 3 + 1] = (uint8_t)(8 * y);
            want[(y * 16 + x) * 3 + 2] = (uint8_t)(4 * (x + y) + 64);
        }
    int max = 255;
    double mean = 255;
    if (img.width == 16 && img.height == 16 && img.channels == 3)
        diff_stats(img.pixels, want, sizeof(want), &max, &mean);
    rt_image_free(&img);
    ASSERT_LE(max, 12);
    ASSERT_LE(mean, 2.0);

    /* PIL's CMYK of the same gradient (C = 255 - R, ..., K = 0), written
     * with Adobe's inverted samples: back to the gradient's RGB. */
    data = read_test_file("cmyk.jpg", &len);
    ASSERT_TRUE(data);
    st = decode(data, len, &img);
    free(data);
    ASSERT_EQ_INT(st, RT_OK);
    max = 255;
    mean = 255;
    if (img.width == 16 && img.height == 16 && img.channels == 3)
        diff_stats(img.pixels, want, sizeof(want), &max, &mean);
    rt_image_free(&img);
    ASSERT_LE(max, 12);
    ASSERT_LE(mean, 2.0);
    return TEST_PASS;
}

TEST(image_jpeg_scan_limit)
{
    /* A legal progressive JPEG with 190 scans: each costs a pass over the
     * coefficients, so the decoder refuses files with more than 100. */
    uint8_t px[16 * 16 * 3];
    fill_smooth(px, 16, 16, 3);
    size_t len;
    uint8_t *jpg = encode_jpeg_scans(px, 16, 16, 3, 90, true, &len);
    struct rt_image img;
    struct rt_error err = {0};
    enum rt_status st = rt_image_decode(jpg, len, NULL, &img, &err);
    free(jpg);
    ASSERT_EQ_INT(st, RT_ERR_INVALID);
    ASSERT_STR_CONTAINS(err.msg, "scans");
    return TEST_PASS;
}

static enum rt_status decode_text(const char *text, struct rt_image *img)
{
    return decode(text, strlen(text), img);
}

TEST(image_pnm_formats)
{
    struct rt_image img;
    /* P2 with comments everywhere the header allows them. */
    ASSERT_EQ_INT(decode_text("P2 # gray\n3 2 # size\n255\n0 1 2\n# row two\n253 254 255\n", &img),
                  RT_OK);
    ASSERT_TRUE(img.width == 3 && img.height == 2 && img.channels == 1);
    ASSERT_TRUE(memcmp(img.pixels, "\x00\x01\x02\xfd\xfe\xff", 6) == 0);
    rt_image_free(&img);
    /* P3 with maxval 15: samples scale to round(v * 255 / 15). */
    ASSERT_EQ_INT(decode_text("P3\n2 1\n15\n0 15 7  8 1 14\n", &img), RT_OK);
    ASSERT_TRUE(img.width == 2 && img.height == 1 && img.channels == 3);
    ASSERT_TRUE(memcmp(img.pixels, "\x00\xff\x77\x88\x11\xee", 6) == 0);
    rt_image_free(&img);

    /* P5, 8-bit, data that itself contains whitespace and '#' bytes. */
    static const uint8_t p5[] = "P5\n# c\n4 1\n255\n\x0a\x23\x20\xff";
    ASSERT_EQ_INT(decode(p5, sizeof(p5) - 1, &img), RT_OK);
    ASSERT_TRUE(img.width == 4 && img.height == 1 && img.channels == 1);
    ASSERT_TRUE(memcmp(img.pixels, "\x0a\x23\x20\xff", 4) == 0);
    rt_image_free(&img);
    /* P5, 16-bit big-endian samples. */
    static const uint8_t p5w[] = "P5 2 1 65535\n\x00\x00\xff\xff";
    ASSERT_EQ_INT(decode(p5w, sizeof(p5w) - 1, &img), RT_OK);
    ASSERT_TRUE(img.width == 2 && img.pixels[0] == 0 && img.pixels[1] == 255);
    rt_image_free(&img);
    /* P6 with maxval 1000 (16-bit): 500 -> round(127.5) = 128, and
     * trailing bytes after the raster are ignored. */
    static const uint8_t p6[] = "P6 1 1 1000\n\x01\xf4\x03\xe8\x00\x00trailing";
    ASSERT_EQ_INT(decode(p6, sizeof(p6) - 1, &img), RT_OK);
    ASSERT_TRUE(img.channels == 3 && img.pixels[0] == 128 && img.pixels[1] == 255 &&
                img.pixels[2] == 0);
    rt_image_free(&img);
    return TEST_PASS;
}

TEST(image_one_pixel)
{
    struct rt_image img = {1, 1, 3, (uint8_t[]){7, 8, 9}}, back;
    uint8_t *png;
    size_t len;
    ASSERT_EQ_INT(rt_image_encode_png(&img, &png, &len, NULL), RT_OK);
    enum rt_status st = decode(png, len, &back);
    free(png);
    ASSERT_EQ_INT(st, RT_OK);
    ASSERT_TRUE(back.width == 1 && back.height == 1 && back.pixels[2] == 9);
    rt_image_free(&back);

    uint8_t *jpg = encode_jpeg((const uint8_t[]){200}, 1, 1, 1, 90, &len);
    st = decode(jpg, len, &back);
    free(jpg);
    ASSERT_EQ_INT(st, RT_OK);
    ASSERT_TRUE(back.width == 1 && back.height == 1 && back.channels == 1);
    ASSERT_NEAR(back.pixels[0], 200, 2);
    rt_image_free(&back);

    ASSERT_EQ_INT(decode_text("P2 1 1 255 42", &back), RT_OK);
    ASSERT_EQ_INT(back.pixels[0], 42);
    rt_image_free(&back);
    return TEST_PASS;
}

/* A PNG signature and IHDR chunk (valid CRC) claiming w x h, with no data. */
static size_t png_header(uint8_t *buf, uint32_t w, uint32_t h)
{
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[17] = {'I', 'H', 'D', 'R', (uint8_t)(w >> 24), (uint8_t)(w >> 16),
                        (uint8_t)(w >> 8), (uint8_t)w, (uint8_t)(h >> 24), (uint8_t)(h >> 16),
                        (uint8_t)(h >> 8), (uint8_t)h, 8, 2, 0, 0, 0};
    uint32_t crc = (uint32_t)crc32(0, ihdr, sizeof(ihdr));
    memcpy(buf, sig, 8);
    memcpy(buf + 8, (const uint8_t[4]){0, 0, 0, 13}, 4); /* IHDR length, big-endian */
    memcpy(buf + 12, ihdr, sizeof(ihdr));
    buf[29] = (uint8_t)(crc >> 24);
    buf[30] = (uint8_t)(crc >> 16);
    buf[31] = (uint8_t)(crc >> 8);
    buf[32] = (uint8_t)crc;
    return 33;
}

/* Rewrites the frame size in a JPEG's SOF0 marker. */
static bool jpeg_patch_size(uint8_t *jpg, size_t len, uint16_t w, uint16_t h)
{
    for (size_t i = 2; i + 9 < len; i++) {
        if (jpg[i] == 0xff && jpg[i + 1] == 0xc0) {
            jpg[i + 5] = (uint8_t)(h >> 8);
            jpg[i + 6] = (uint8_t)h;
            jpg[i + 7] = (uint8_t)(w >> 8);
            jpg[i + 8] = (uint8_t)w;
            return true;
        }
    }
    return false;
}

struct bad_case {
    const char *name;
    const char *data;        /* text inputs; binary ones are built below */
    enum rt_status want;
};

TEST(image_malformed_status)
{
    static const struct bad_case text_cases[] = {
        {"empty", "", RT_ERR_INVALID},
        {"text", "hello, this is not an image", RT_ERR_UNSUPPORTED},
        {"html", "<html><body>secret</body></html>", RT_ERR_UNSUPPORTED},
        {"pbm bitmap", "P1\n1 1\n0\n", RT_ERR_UNSUPPORTED},
        {"pnm absurd dims", "P5\n100000 100000\n255\n", RT_ERR_TOO_LARGE},
        {"pnm wide", "P2 20000 1 255 1", RT_ERR_TOO_LARGE},
        {"pnm overflowing width", "P5\n99999999999999999999 1\n255\n", RT_ERR_INVALID},
        {"pnm negative height", "P2\n2 -1\n255\n1 2\n", RT_ERR_INVALID},
        {"pnm zero width", "P2\n0 1\n255\n", RT_ERR_INVALID},
        {"pnm maxval 0", "P2\n1 1\n0\n0\n", RT_ERR_INVALID},
        {"pnm maxval 65536", "P2\n1 1\n65536\n0\n", RT_ERR_INVALID},
        {"pnm sample over maxval", "P2\n2 1\n100\n5 101\n", RT_ERR_INVALID},
        {"pnm plain truncated", "P3\n2 2\n255\n1 2 3 4 5 6 7 8 9 10\n", RT_ERR_INVALID},
        {"pnm raw truncated", "P6\n2 2\n255\nabcdefghij", RT_ERR_INVALID},
        {"pnm header only", "P5\n1 1\n255", RT_ERR_INVALID},
        {"pnm missing maxval", "P5\n4 4\n", RT_ERR_INVALID},
        {"pnm junk in number", "P5\n2x2\n255\nabcd", RT_ERR_INVALID},
        {"pnm float sample", "P2\n2 1\n255\n1.5 2\n", RT_ERR_INVALID},
    };
    for (size_t i = 0; i < sizeof(text_cases) / sizeof(text_cases[0]); i++) {
        struct rt_image img;
        struct rt_error err = {0};
        enum rt_status st = rt_image_decode(text_cases[i].data, strlen(text_cases[i].data), NULL,
                                            &img, &err);
        TEST_FAIL_IF(st != text_cases[i].want, "%s: status %s, want %s", text_cases[i].name,
                     rt_status_name(st), rt_status_name(text_cases[i].want));
        TEST_FAIL_IF(img.pixels != NULL, "%s: pixels left allocated", text_cases[i].name);
        TEST_FAIL_IF(err.msg[0] == '\0' || strstr(err.msg, "secret") || strstr(err.msg, "hello"),
                     "%s: message \"%s\" empty or quoting the input", text_cases[i].name,
                     err.msg);
    }

    struct rt_image img;
    uint8_t hdr[64];
    /* Header-only PNGs: an allocation or a read past the header would show
     * up as "truncated", so TOO_LARGE proves the check came first. */
    ASSERT_EQ_INT(decode(hdr, png_header(hdr, 60000, 60000), &img), RT_ERR_TOO_LARGE);
    ASSERT_EQ_INT(decode(hdr, png_header(hdr, 16000, 16000), &img), RT_ERR_TOO_LARGE);
    ASSERT_EQ_INT(decode(hdr, png_header(hdr, 0, 5), &img), RT_ERR_INVALID);
    ASSERT_EQ_INT(decode(hdr, png_header(hdr, 4, 4), &img), RT_ERR_INVALID);
    size_t len = png_header(hdr, 4, 4);
    hdr[len - 1] ^= 1;       /* bad IHDR CRC */
    ASSERT_EQ_INT(decode(hdr, len, &img), RT_ERR_INVALID);
    struct rt_image_limits lim = {.max_side = 3};
    ASSERT_EQ_INT(rt_image_decode("P2 4 1 255 1 2 3 4", 18, &lim, &img, NULL), RT_ERR_TOO_LARGE);
    lim = (struct rt_image_limits){.max_pixels = 3};
    ASSERT_EQ_INT(rt_image_decode("P2 2 2 255 1 2 3 4", 18, &lim, &img, NULL), RT_ERR_TOO_LARGE);

    /* A truncated PNG: half of a valid file. */
    struct rt_image src = {32, 32, 3, NULL};
    src.pixels = malloc((size_t)32 * 32 * 3);
    ASSERT_TRUE(src.pixels);
    for (int i = 0; i < 32 * 32 * 3; i++)
        src.pixels[i] = (uint8_t)test_rand_int(0, 255);
    uint8_t *png;
    ASSERT_EQ_INT(rt_image_encode_png(&src, &png, &len, NULL), RT_OK);
    enum rt_status st = decode(png, len / 2, &img);
    png[len / 2] ^= 0x55;    /* corrupt IDAT bytes: zlib or CRC error */
    enum rt_status st2 = decode(png, len, &img);
    free(png);
    ASSERT_EQ_INT(st, RT_ERR_INVALID);
    ASSERT_EQ_INT(st2, RT_ERR_INVALID);

    /* A truncated JPEG, and one whose frame claims 60000 x 60000. */
    fill_smooth(src.pixels, 32, 32, 3);
    uint8_t *jpg = encode_jpeg(src.pixels, 32, 32, 3, 90, &len);
    rt_image_free(&src);
    st = decode(jpg, len / 2, &img);
    st2 = decode(jpg, 10, &img);
    bool patched = jpeg_patch_size(jpg, len, 60000, 60000);
    enum rt_status st3 = decode(jpg, len, &img);
    free(jpg);
    ASSERT_EQ_INT(st, RT_ERR_INVALID);
    ASSERT_EQ_INT(st2, RT_ERR_INVALID);
    ASSERT_TRUE(patched);
    ASSERT_EQ_INT(st3, RT_ERR_TOO_LARGE);
    return TEST_PASS;
}

TEST(image_truncation_sweep)
{
    /* Every prefix of a PNG and a JPEG must decode cleanly or fail cleanly
     * (the sanitizer build checks for leaks and stray reads); prefixes
     * missing image data must fail. */
    struct rt_image src = {12, 9, 3, NULL};
    src.pixels = malloc((size_t)12 * 9 * 3);
    ASSERT_TRUE(src.pixels);
    fill_smooth(src.pixels, 12, 9, 3);
    size_t png_len, jpg_len;
    uint8_t *png, *jpg = encode_jpeg(src.pixels, 12, 9, 3, 90, &jpg_len);
    ASSERT_EQ_INT(rt_image_encode_png(&src, &png, &png_len, NULL), RT_OK);
    rt_image_free(&src);
    int bad = 0;
    for (size_t n = 0; n < png_len + jpg_len; n++) {
        bool is_png = n < png_len;
        size_t cut = is_png ? n : n - png_len;
        size_t full = is_png ? png_len : jpg_len;
        struct rt_image img;
        enum rt_status st = decode(is_png ? png : jpg, cut, &img);
        rt_image_free(&img);
        /* The last 12 PNG bytes are IEND; JPEG's last 2 are EOI. */
        bool may_pass = cut >= full - (is_png ? 12 : 2);
        if (st != RT_ERR_INVALID && st != RT_ERR_UNSUPPORTED && !(may_pass && st == RT_OK)) {
            printf("  %s prefix of %zu/%zu bytes: %s\n", is_png ? "PNG" : "JPEG", cut, full,
                   rt_status_name(st));
            bad++;
        }
    }
    free(png);
    free(jpg);
    ASSERT_EQ_INT(bad, 0);
    return TEST_PASS;
}
