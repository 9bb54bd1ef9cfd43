/*
 * test_image_torchvision.c - a JPEG photo of any size becomes the 224x224
 * input of an ImageNet model exactly as PyTorch's preprocessing makes it:
 * rt_image_decode then rt_image_preprocess against torchvision's
 * Resize(256), CenterCrop(224), ToTensor(), Normalize(mean, std) on the PIL
 * image decoded from the same file (fixtures written by
 * tests/data/images/make_photos.py: landscape, portrait, an image smaller
 * than 256 that is upscaled, and a gray one converted to RGB).
 *
 * Two checks per photo: the decoded pixels are PIL's (CRC-32 of the RGB
 * bytes: both sides are libjpeg-turbo with the same settings), and the
 * tensor equals torchvision's bit for bit (tolerance 0).
 */
#include <stdlib.h>
#include <zlib.h>

#include "runtime/image/image.h"
#include "runtime/format/safetensors.h"
#include "runtime/rt_status.h"
#include "test.h"

#define SIDE 224

/* The preprocessing models/export_imagenet.py writes into model.json. */
static struct rt_preprocess imagenet_pre(void)
{
    return (struct rt_preprocess){.present = true, .width = SIDE, .height = SIDE, .channels = 3,
                                  .resize_shorter = 256, .scale = 1.0f, .divisor = 255.0f,
                                  .mean = {0.485f, 0.456f, 0.406f}, .std = {0.229f, 0.224f, 0.225f}};
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    *len = buf ? (size_t)n : 0;
    return buf;
}

static enum test_result check_photo(const char *name)
{
    char jpeg_path[128], fixture_path[128];
    snprintf(jpeg_path, sizeof(jpeg_path), "tests/data/images/photo_%s.jpg", name);
    snprintf(fixture_path, sizeof(fixture_path), "tests/data/photo_%s.preprocess.safetensors", name);
    struct rt_error err = {0};
    struct rt_safetensors fx;
    TEST_FAIL_IF(rt_safetensors_open(fixture_path, fixture_path, &fx, &err) != RT_OK, "%s", err.msg);
    const struct rt_st_tensor *crop = rt_safetensors_find(&fx, "crop"), *lut = rt_safetensors_find(&fx, "lut");
    const char *crc_text = rt_safetensors_meta(&fx, "crc32"), *w_text = rt_safetensors_meta(&fx, "width");
    ASSERT_TRUE(crop && lut && crc_text && w_text && crop->dtype == RT_DTYPE_U8 && lut->dtype == RT_DTYPE_F32);
    ASSERT_TRUE(crop->elems == (int64_t)SIDE * SIDE * 3 && lut->elems == (int64_t)3 * 256);

    size_t len;
    uint8_t *jpeg = read_file(jpeg_path, &len);
    TEST_FAIL_IF(!jpeg, "cannot read %s", jpeg_path);
    struct rt_image img;
    enum rt_status st = rt_image_decode(jpeg, len, NULL, &img, &err);
    free(jpeg);
    TEST_FAIL_IF(st != RT_OK, "%s: %s", jpeg_path, err.msg);

    /* PIL's decode, converted to RGB (gray replicated) as torchvision's
     * loader does, before the CRC. */
    size_t pixels = (size_t)img.width * (size_t)img.height;
    uint8_t *rgb = malloc(pixels * 3);
    RT_ASSERT(rgb);
    for (size_t i = 0; i < pixels * 3; i++)
        rgb[i] = img.channels == 3 ? img.pixels[i] : img.pixels[i / 3];
    unsigned long crc = crc32(0L, rgb, (uInt)(pixels * 3));
    free(rgb);
    ASSERT_EQ_INT(img.width, strtol(w_text, NULL, 10));
    TEST_FAIL_IF(crc != strtoul(crc_text, NULL, 10), "%s: decoded pixels differ from PIL's (CRC %lu vs %s)",
                 jpeg_path, crc, crc_text);

    struct rt_preprocess pre = imagenet_pre();
    float *got = malloc(sizeof(float) * 3 * SIDE * SIDE);
    RT_ASSERT(got);
    st = rt_image_preprocess(&img, &pre, got, &err);
    rt_image_free(&img);
    TEST_FAIL_IF(st != RT_OK, "%s: %s", jpeg_path, err.msg);
    const uint8_t *px = crop->data;
    const float *table = lut->data;
    int differ = 0;
    double worst = 0;
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < SIDE * SIDE; i++) {
            float want = table[c * 256 + px[i * 3 + c]], v = got[c * SIDE * SIDE + i];
            if (!test_same_bits(&want, &v, sizeof(float))) {
                differ++;
                worst = fmax(worst, fabs((double)want - (double)v));
            }
        }
    free(got);
    rt_safetensors_close(&fx);
    printf("  %s: %d of %d values differ from torchvision (max |diff| %.3g)\n", name, differ, 3 * SIDE * SIDE,
           worst);
    ASSERT_EQ_INT(differ, 0);
    return TEST_PASS;
}

TEST(image_torchvision_landscape_jpeg)
{
    return check_photo("landscape");
}

TEST(image_torchvision_portrait_jpeg)
{
    return check_photo("portrait");
}

TEST(image_torchvision_small_jpeg_upscaled)
{
    return check_photo("small");
}

TEST(image_torchvision_gray_jpeg_to_rgb)
{
    return check_photo("gray");
}
