/*
 * test_image_preprocess.c - rt_image_preprocess against hand-computed
 * numbers: exact normalisation, bilinear resizing (up and down, as PIL
 * computes it, 8-bit rounding included), resize-shorter-side plus centre
 * crop, colour conversion and inversion.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/image/image.h"
#include "test.h"

/* Preprocessing that leaves values as they are (scale 1, mean 0, std 1). */
static struct rt_preprocess identity_pre(int w, int h, int channels)
{
    struct rt_preprocess p = {.present = true, .width = w, .height = h, .channels = channels,
                              .scale = 1.0f};
    for (int c = 0; c < 3; c++)
        p.std[c] = 1.0f;
    return p;
}

static int compare(const float *got, const float *want, int n, double tol)
{
    for (int i = 0; i < n; i++) {
        if (!(fabs((double)got[i] - (double)want[i]) <= tol)) {
            printf("  element %d: got %.9g, want %.9g\n", i, (double)got[i], (double)want[i]);
            return 1;
        }
    }
    return 0;
}

TEST(image_preprocess_gray_exact)
{
    /* 28x28 gray, no resize: every output is exactly the float32 sequence
     * t = v * scale; t = t - mean; t = t / std. */
    uint8_t px[28 * 28];
    for (int i = 0; i < 28 * 28; i++)
        px[i] = (uint8_t)test_rand_int(0, 255);
    struct rt_image img = {28, 28, 1, px};
    struct rt_preprocess pre = {.present = true, .width = 28, .height = 28, .channels = 1,
                                .scale = 0.00392156862745098f, .mean = {0.2860f},
                                .std = {0.3530f}};
    float out[28 * 28];
    struct rt_error err = {0};
    ASSERT_EQ_INT(rt_image_preprocess(&img, &pre, out, &err), RT_OK);
    for (int i = 0; i < 28 * 28; i++) {
        float t = (float)px[i] * pre.scale;
        t = t - pre.mean[0];
        t = t / pre.std[0];
        TEST_FAIL_IF(!test_same_bits(&t, &out[i], sizeof(float)), "pixel %d: %.9g != %.9g", i,
                     (double)out[i], (double)t);
    }
    return TEST_PASS;
}

TEST(image_preprocess_upscale)
{
    /* 2x2 -> 4x4, half-pixel centres: output x samples input x' = (x + 0.5)
     * / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped at the edges, so the
     * weights of (in0, in1) are (1, 0), (.75, .25), (.25, .75), (0, 1).
     * Rows [0 100] and [200 40] become [0 25 75 100] and [200 160 80 40];
     * the same weights down the columns give the rows in between, rounded to
 * 8 bits as PIL does (58.75 -> 59, 76.25 -> 76, 126.25 -> 126, 78.75 -> 79). */
    struct rt_image img = {2, 2, 1, (uint8_t[]){0, 100, 200, 40}};
    static const float want[16] = {
        0, 25, 75, 100,
        50, 59, 76, 85,
        150, 126, 79, 55,
        200, 160, 80, 40,
    };
    struct rt_preprocess pre = identity_pre(4, 4, 1);
    float out[16];
    ASSERT_EQ_INT(rt_image_preprocess(&img, &pre, out, NULL), RT_OK);
    ASSERT_EQ_INT(compare(out, want, 16, 0), 0);
    return TEST_PASS;
}

TEST(image_preprocess_downscale)
{
    /* 4x1 -> 2x1: PIL widens the triangle to 2 input pixels each side.
     * Output 0 is centred at 1.0: inputs 0, 1, 2 sit at 0.5, 1.5, 2.5, at
     * distances .25, .25, .75 in filter units -> weights .75, .75, .25, over
     * 1.75: (3*10 + 3*20 + 1*30) / 7 = 120/7. Output 1 is centred at 3.0:
     * inputs 1, 2, 3 -> weights .25, .75, .75: (20 + 3*30 + 3*40) / 7 = 230/7.
     * PIL rounds both to 8 bits: 17.14 -> 17, 32.86 -> 33. */
    struct rt_image img = {4, 1, 1, (uint8_t[]){10, 20, 30, 40}};
    const float want[2] = {17, 33};
    struct rt_preprocess pre = identity_pre(2, 1, 1);
    float out[2];
    ASSERT_EQ_INT(rt_image_preprocess(&img, &pre, out, NULL), RT_OK);
    ASSERT_EQ_INT(compare(out, want, 2, 0), 0);

    /* A constant image stays constant whatever the scale factor. */
    uint8_t *flat = malloc((size_t)301 * 97);
    ASSERT_TRUE(flat);
    memset(flat, 77, (size_t)301 * 97);
    struct rt_image big = {301, 97, 1, flat};
    pre = identity_pre(28, 28, 1);
    float small[28 * 28], ref[28 * 28];
    enum rt_status st = rt_image_preprocess(&big, &pre, small, NULL);
    free(flat);
    ASSERT_EQ_INT(st, RT_OK);
    for (int i = 0; i < 28 * 28; i++)
        ref[i] = 77.0f;
    ASSERT_EQ_INT(compare(small, ref, 28 * 28, 1e-3), 0);
    return TEST_PASS;
}

TEST(image_preprocess_shorter_side_crop)
{
    /* resize_shorter equal to the short side: no resampling, only the centre
     * crop, whose offset rounds half to even like Python's round():
     * width 6 crop 3 -> round(1.5) = 2; width 4 crop 3 -> round(0.5) = 0. */
    uint8_t row6[6 * 3], row4[4 * 3];
    for (int i = 0; i < 18; i++)
        row6[i] = (uint8_t)(i % 6 * 10 + i / 6);
    for (int i = 0; i < 12; i++)
        row4[i] = (uint8_t)(i % 4 * 10 + i / 4);
    struct rt_preprocess pre = identity_pre(3, 3, 1);
    pre.resize_shorter = 3;
    float out[9];
    struct rt_image img6 = {6, 3, 1, row6}, img4 = {4, 3, 1, row4};
    ASSERT_EQ_INT(rt_image_preprocess(&img6, &pre, out, NULL), RT_OK);
    static const float want6[9] = {20, 30, 40, 21, 31, 41, 22, 32, 42};
    ASSERT_EQ_INT(compare(out, want6, 9, 0), 0);
    ASSERT_EQ_INT(rt_image_preprocess(&img4, &pre, out, NULL), RT_OK);
    static const float want4[9] = {0, 10, 20, 1, 11, 21, 2, 12, 22};
    ASSERT_EQ_INT(compare(out, want4, 9, 0), 0);

    /* 2x4 with rows 0, 40, 80, 120, shorter side to 4: 4x8 (x2), then the
     * centre 4x4 (rows 2..5 of 8). Rows 2..5 of an x2 upscale weigh input
     * rows as (.25, .75) of 0/40, (.75, .25) of 40/80, (.25, .75) of 40/80,
     * (.75, .25) of 80/120: 30, 50, 70, 90, constant along each row. */
    struct rt_image tall = {2, 4, 1, (uint8_t[]){0, 0, 40, 40, 80, 80, 120, 120}};
    pre = identity_pre(4, 4, 1);
    pre.resize_shorter = 4;
    float out16[16], want16[16];
    for (int i = 0; i < 16; i++)
        want16[i] = (float)(30 + 20 * (i / 4)); // NOLINT(bugprone-integer-division): i / 4 is the row
    ASSERT_EQ_INT(rt_image_preprocess(&tall, &pre, out16, NULL), RT_OK);
    ASSERT_EQ_INT(compare(out16, want16, 16, 1e-4), 0);
    return TEST_PASS;
}

TEST(image_preprocess_color)
{
    /* RGB -> gray with PIL's fixed-point ITU-R 601 luma:
     * (19595 R + 38470 G + 7471 B + 32768) >> 16.
     * (255,0,0): 5029493 >> 16 = 76;  (0,255,0): 9842618 >> 16 = 150;
     * (0,0,255): 1937873 >> 16 = 29;  (10,20,30): 1222248 >> 16 = 18. */
    struct rt_image rgb = {4, 1, 3, (uint8_t[]){255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30}};
    struct rt_preprocess pre = identity_pre(4, 1, 1);
    float gray[4];
    ASSERT_EQ_INT(rt_image_preprocess(&rgb, &pre, gray, NULL), RT_OK);
    ASSERT_EQ_INT(compare(gray, (const float[]){76, 150, 29, 18}, 4, 0), 0);

    /* Gray -> RGB replicates, and each channel has its own mean and std;
     * the output is planar (CHW). */
    struct rt_image g = {2, 1, 1, (uint8_t[]){0, 255}};
    pre = (struct rt_preprocess){.present = true, .width = 2, .height = 1, .channels = 3,
                                 .scale = 1.0f / 255.0f, .mean = {0.5f, 0.25f, 0.0f},
                                 .std = {0.5f, 0.25f, 2.0f}};
    float chw[6];
    ASSERT_EQ_INT(rt_image_preprocess(&g, &pre, chw, NULL), RT_OK);
    ASSERT_EQ_INT(compare(chw, (const float[]){-1, 1, -1, 3, 0, 0.5f}, 6, 1e-6), 0);
    return TEST_PASS;
}

TEST(image_preprocess_invert)
{
    struct rt_image img = {3, 1, 1, (uint8_t[]){0, 100, 255}};
    struct rt_preprocess pre = identity_pre(3, 1, 1);
    pre.invert = true;
    float out[3];
    ASSERT_EQ_INT(rt_image_preprocess(&img, &pre, out, NULL), RT_OK);
    ASSERT_EQ_INT(compare(out, (const float[]){255, 155, 0}, 3, 0), 0);

    /* Inverting applies before normalising: (255 - 100) / 255 - 0.5. */
    pre.scale = 1.0f / 255.0f;
    pre.mean[0] = 0.5f;
    ASSERT_EQ_INT(rt_image_preprocess(&img, &pre, out, NULL), RT_OK);
    ASSERT_NEAR(out[1], 155.0 / 255.0 - 0.5, 1e-6);
    return TEST_PASS;
}

TEST(image_preprocess_rejects_bad_settings)
{
    struct rt_image img = {1, 1, 1, (uint8_t[]){1}};
    struct rt_preprocess pre = identity_pre(1, 1, 1);
    float out[3];
    struct rt_error err = {0};
    pre.present = false;
    ASSERT_EQ_INT(rt_image_preprocess(&img, &pre, out, &err), RT_ERR_UNSUPPORTED);
    pre = identity_pre(1, 1, 2);
    ASSERT_EQ_INT(rt_image_preprocess(&img, &pre, out, &err), RT_ERR_BAD_MODEL);
    pre = identity_pre(1, 1, 1);
    pre.std[0] = 0.0f;
    ASSERT_EQ_INT(rt_image_preprocess(&img, &pre, out, &err), RT_ERR_BAD_MODEL);
    return TEST_PASS;
}
