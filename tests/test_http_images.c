/*
 * test_http_images.c - the classify endpoint on real pictures: 500
 * Fashion-MNIST test images as PNG, lossless WebP and BMP give exactly the
 * offline predictions (raw bodies and multipart batches alike), as JPEG
 * nearly so; broken WebP and BMP bodies get their status and leave the
 * daemon serving.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "http_harness.h"
#include "http_images.h"
#include "runtime/image/dataset.h"
#include "runtime/image/image.h"
#include "test.h"

enum { N_IMAGES = 500, PER_REQUEST = 25, RAW_IMAGES = 50, CLASSES = 10 };

struct encoded {
    uint8_t *data;
    size_t len;
};

static struct rt_dataset dataset;
static int offline_pred[N_IMAGES];
static float offline_prob[N_IMAGES];       /* softmax probability of the top class */
static struct encoded images[N_IMAGES];

static void free_images(void)
{
    for (int i = 0; i < N_IMAGES; i++) {
        free(images[i].data);
        images[i] = (struct encoded){0};
    }
}

/* Offline predictions for the first N_IMAGES test images, from their pixels. */
static bool predict_offline(void)
{
    struct rt_error err = {RT_OK, ""};
    if (!dataset.images && rt_dataset_load_fashion_mnist("test", &dataset, &err) != RT_OK) {
        printf("  %s\n", err.msg);
        return false;
    }
    struct http_offline off;
    if (!http_offline_open(&off, HTTP_SOURCE_MODEL))
        return false;
    int64_t elems = off.cfg->inputs[0].sample_elems;
    float *x = malloc((size_t)(N_IMAGES * elems) * sizeof(float));
    float *y = malloc((size_t)N_IMAGES * CLASSES * sizeof(float));
    bool ok = x && y;
    for (int i = 0; ok && i < N_IMAGES; i++) {
        struct rt_image img = {dataset.cols, dataset.rows, 1, dataset.images + (size_t)i * 784};
        ok = rt_image_preprocess(&img, &off.cfg->pre, x + i * elems, &err) == RT_OK;
    }
    ok = ok && http_offline_run(&off, N_IMAGES, x, y);
    for (int i = 0; ok && i < N_IMAGES; i++) {
        const float *l = y + (size_t)i * CLASSES;
        offline_pred[i] = http_argmax(l, CLASSES);
        double sum = 0;
        for (int c = 0; c < CLASSES; c++)
            sum += exp((double)l[c] - (double)l[offline_pred[i]]);
        offline_prob[i] = (float)(1.0 / sum);
    }
    free(x);
    free(y);
    http_offline_close(&off);
    return ok;
}

/* Top-1 index and score of each result in a classify answer. */
static int parse_results(const char *body, int *pred, float *score, int max)
{
    cJSON *root = cJSON_Parse(body);
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results");
    int n = 0;
    for (const cJSON *r = results ? results->child : NULL; r && n < max; r = r->next, n++) {
        const cJSON *preds = cJSON_GetObjectItemCaseSensitive(r, "predictions");
        const cJSON *top = cJSON_GetArrayItem(preds, 0);
        const cJSON *idx = cJSON_GetObjectItemCaseSensitive(top, "index");
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(top, "score");
        const cJSON *label = cJSON_GetObjectItemCaseSensitive(top, "label");
        const cJSON *timing = cJSON_GetObjectItemCaseSensitive(r, "timing_us");
        if (!cJSON_IsNumber(idx) || !cJSON_IsNumber(sc) || !cJSON_IsString(label) ||
            !cJSON_IsObject(timing) || cJSON_GetArraySize(preds) != 3) {
            n = -1;
            break;
        }
        /* Sorted by score. */
        double prev = 2;
        for (const cJSON *p = preds->child; p; p = p->next) {
            double s = cJSON_GetObjectItemCaseSensitive(p, "score")->valuedouble;
            if (s > prev) {
                n = -1;
                break;
            }
            prev = s;
        }
        if (n < 0)
            break;
        pred[n] = idx->valueint;
        score[n] = (float)sc->valuedouble;
    }
    cJSON_Delete(root);
    return n;
}

/* Sends every image (the first RAW_IMAGES as raw bodies, the rest as
 * multipart batches) and counts top-1 agreement with the offline answers. */
static bool classify_all(const struct http_daemon *d, const char *content_type, int *agree,
                         double *max_score_diff)
{
    *agree = 0;
    *max_score_diff = 0;
    int pred[PER_REQUEST];
    float score[PER_REQUEST];
    for (int i = 0; i < N_IMAGES;) {
        int n = i < RAW_IMAGES ? 1 : PER_REQUEST;
        struct http_resp r;
        if (i < RAW_IMAGES) {
            http_post(d, "/v2/models/lenet5/classify?top_k=3", content_type, images[i].data,
                      images[i].len, &r);
        } else {
            size_t cap = 0;
            for (int k = 0; k < n; k++)
                cap += images[i + k].len + 256;
            char *body = malloc(cap + 64), *p = body;
            for (int k = 0; k < n; k++) {
                p += snprintf(p, cap + 64 - (size_t)(p - body), "--b0und4ry\r\nContent-Disposition: form-data; name=\"image\"; "
                                "filename=\"%d\"\r\nContent-Type: %s\r\n\r\n", i + k, content_type);
                memcpy(p, images[i + k].data, images[i + k].len);
                p += images[i + k].len;
                p += snprintf(p, cap + 64 - (size_t)(p - body), "\r\n");
            }
            p += snprintf(p, cap + 64 - (size_t)(p - body), "--b0und4ry--\r\n");
            http_post(d, "/v2/models/lenet5/classify?top_k=3",
                      "multipart/form-data; boundary=b0und4ry", body, (size_t)(p - body), &r);
            free(body);
        }
        int got = r.status == 200 ? parse_results(r.body, pred, score, n) : -1;
        if (got != n)
            printf("  request at image %d: status %ld, %d results: %.200s\n", i, r.status, got,
                   r.body ? r.body : "");
        http_resp_free(&r);
        if (got != n)
            return false;
        for (int k = 0; k < n; k++) {
            *agree += pred[k] == offline_pred[i + k];
            if (pred[k] == offline_pred[i + k] &&
                fabs(score[k] - offline_prob[i + k]) > *max_score_diff)
                *max_score_diff = fabs(score[k] - offline_prob[i + k]);
        }
        i += n;
    }
    return true;
}

static enum test_result classify_png(struct http_daemon *d)
{
    for (int i = 0; i < N_IMAGES; i++)
        ASSERT_TRUE(http_encode_png(dataset.images + (size_t)i * 784, 28, 28, &images[i].data,
                                    &images[i].len));
    int agree;
    double diff;
    bool sent = classify_all(d, "image/png", &agree, &diff);
    free_images();
    ASSERT_TRUE(sent);
    printf("  PNG: %d/%d top-1 equal to the offline run, top score within %.2g\n", agree,
           N_IMAGES, diff);
    ASSERT_EQ_INT(agree, N_IMAGES);
    ASSERT_LE(diff, 1e-5);
    return TEST_PASS;
}

static enum test_result classify_jpeg(struct http_daemon *d)
{
    for (int i = 0; i < N_IMAGES; i++)
        ASSERT_TRUE(http_encode_jpeg(dataset.images + (size_t)i * 784, 28, 28, 90,
                                     &images[i].data, &images[i].len));
    int agree;
    double diff;
    bool sent = classify_all(d, "image/jpeg", &agree, &diff);
    free_images();
    ASSERT_TRUE(sent);
    printf("  JPEG (quality 90): %d/%d top-1 equal to the offline run on the original pixels\n",
           agree, N_IMAGES);
    ASSERT_GE(agree, N_IMAGES * 98 / 100.0);
    return TEST_PASS;
}

/* Lossless WebP, and BMP (alternately 8-bit palette bottom-up and 24-bit
 * top-down): the same predictions as the pixels offline. */
static enum test_result classify_webp_bmp(struct http_daemon *d)
{
    static const char *const TYPES[] = {"image/webp", "image/bmp"};
    for (int t = 0; t < 2; t++) {
        for (int i = 0; i < N_IMAGES; i++) {
            const uint8_t *px = dataset.images + (size_t)i * 784;
            bool ok = t == 0 ? http_encode_webp(px, 28, 28, &images[i].data, &images[i].len)
                             : http_encode_bmp(px, 28, 28, i % 2 ? 24 : 8, i % 2, &images[i].data,
                                               &images[i].len);
            if (!ok)
                free_images();
            ASSERT_TRUE(ok);
        }
        int agree;
        double diff;
        bool sent = classify_all(d, TYPES[t], &agree, &diff);
        free_images();
        ASSERT_TRUE(sent);
        printf("  %s: %d/%d top-1 equal to the offline run, top score within %.2g\n", TYPES[t],
               agree, N_IMAGES, diff);
        ASSERT_EQ_INT(agree, N_IMAGES);
        ASSERT_LE(diff, 1e-5);
    }
    return TEST_PASS;
}

#define CLASSIFY "/v2/models/lenet5/classify"

/* Asserts the status of a POST, then that the daemon still serves. */
#define EXPECT_POST(d, ct, body, len, want) do {                                      \
        ASSERT_EQ_INT(http_status((d), "POST", CLASSIFY, (ct), (body), (len)), (want)); \
        ASSERT_TRUE(http_still_serves(d));                                            \
    } while (0)

/* Truncated, corrupt, oversized and unsupported WebP and BMP bodies. */
static enum test_result bad_webp_bmp(struct http_daemon *d)
{
    uint8_t px[28 * 28];
    for (int i = 0; i < 28 * 28; i++)
        px[i] = (uint8_t)test_rand_int(0, 255);
    uint8_t *webp = NULL, *bmp = NULL;
    size_t webp_len = 0, bmp_len = 0;
    enum test_result r = TEST_FAIL;
    if (!http_encode_webp(px, 28, 28, &webp, &webp_len) ||
        !http_encode_bmp(px, 28, 28, 24, false, &bmp, &bmp_len))
        goto done;
    r = TEST_PASS;
    EXPECT_POST(d, "image/webp", webp, webp_len, 200);
    EXPECT_POST(d, "image/bmp", bmp, bmp_len, 200);
    EXPECT_POST(d, "image/webp", webp, webp_len / 2, 400);          /* truncated */
    EXPECT_POST(d, "image/webp", webp, 16, 400);
    EXPECT_POST(d, "image/bmp", bmp, bmp_len / 2, 400);
    EXPECT_POST(d, "image/bmp", bmp, 30, 400);
    for (size_t i = 40; i < webp_len; i += 2)                        /* corrupt stream */
        webp[i] ^= 0x5a;
    EXPECT_POST(d, "image/webp", webp, webp_len, 400);
    bmp[22] = 0x60;                                                  /* 60000 x 28 */
    bmp[23] = 0xea;
    bmp[18] = 0x60;
    bmp[19] = 0xea;
    EXPECT_POST(d, "image/bmp", bmp, bmp_len, 413);
    bmp[30] = 1;                                                     /* BI_RLE8 */
    EXPECT_POST(d, "image/bmp", bmp, bmp_len, 415);
done:
    free(webp);
    free(bmp);
    return r;
}

static enum test_result run_classify(http_test_fn fn)
{
    if (!http_source_model_present())
        SKIP("%s is missing (make models)", HTTP_SOURCE_MODEL);
    ASSERT_TRUE(predict_offline());
    const struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    return http_run(&spec, 1, NULL, fn);
}

TEST(http_classify_png_equals_offline) { return run_classify(classify_png); }

TEST(http_classify_jpeg_nearly_offline) { return run_classify(classify_jpeg); }

TEST(http_classify_webp_bmp_equal_offline) { return run_classify(classify_webp_bmp); }

TEST(http_classify_bad_webp_bmp)
{
    const struct http_model_spec spec = HTTP_MODEL_SPEC("lenet5");
    return http_run(&spec, 1, NULL, bad_webp_bmp);
}
