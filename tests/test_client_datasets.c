/*
 * test_client_datasets.c - inferctl eval and quantize on the user's own
 * images: an ImageFolder (one sub-folder per class, named after the
 * model's labels in any case and punctuation), an unlabelled calibration
 * folder, and the clear errors for a model the data does not fit.
 *
 * The folders hold Fashion-MNIST test images written as PNG, so the folder
 * path must give exactly the score of the built-in IDX path on the same
 * images (lenet5 neither inverts nor resizes them).
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_harness.h"
#include "runtime/image/dataset.h"
#include "runtime/image/image.h"
#include "test.h"
#include "test_model_util.h"

#define IMAGES 60

/* lenet5's labels ("T-shirt/top", ..., "Ankle boot") as a user might name folders. */
static const char *const FOLDERS[10] = {"t_shirt_top", "Trouser", "pullover", "DRESS", "coat",
                                        "sandal",      "shirt",   "sneaker",  "bag",   "ankle-boot"};

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_tree(const char *dir) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Writes the first IMAGES test images as dir/FOLDER/i.png (labelled) or
 * dir/i.png (flat); false on any failure. */
static bool write_images(const char *dir, bool labelled)
{
    struct rt_dataset ds;
    struct rt_error err = {0};
    if (rt_dataset_load_fashion_mnist("test", &ds, &err) != RT_OK) {
        printf("  %s\n", err.msg);
        return false;
    }
    bool ok = true;
    for (int i = 0; ok && i < IMAGES; i++) {
        char sub[512], path[600];
        snprintf(sub, sizeof(sub), "%s/%s", dir, labelled ? FOLDERS[ds.labels[i]] : "");
        ok = mkdir(sub, 0755) == 0 || access(sub, F_OK) == 0;
        struct rt_image img = {ds.cols, ds.rows, 1, ds.images + (size_t)i * (size_t)(ds.rows * ds.cols)};
        uint8_t *png = NULL;
        size_t len = 0;
        ok = ok && rt_image_encode_png(&img, &png, &len, &err) == RT_OK;
        snprintf(path, sizeof(path), "%s/%d.png", sub, i);
        FILE *f = ok ? fopen(path, "wb") : NULL;
        ok = f && fwrite(png, 1, len, f) == len;
        if (f)
            ok = fclose(f) == 0 && ok;
        free(png);
    }
    rt_dataset_free(&ds);
    return ok;
}

/* The "(correct/total)" of eval's output, or "" */
static const char *score(const char *out, char *buf, size_t cap)
{
    const char *at = strstr(out, "top-1 accuracy:");
    const char *open = at ? strchr(at, '(') : NULL, *close = open ? strchr(open, ')') : NULL;
    snprintf(buf, cap, "%.*s", open && close ? (int)(close - open + 1) : 0, open ? open : "");
    return buf;
}

TEST(client_inferctl_eval_image_folder_matches_idx)
{
    char dir[64], a[64], b[64];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    bool written = write_images(dir, true);
    struct client_run folder = {0}, idx = {0};
    const char *folder_args[] = {"eval", "model_repository/lenet5", "--data", dir, "--threads", "1", NULL};
    const char *idx_args[] = {"eval", "model_repository/lenet5", "--limit", "60", "--threads", "1", NULL};
    bool ran = written && client_run_tool("inferctl", folder_args, &folder) && client_run_tool("inferctl", idx_args, &idx);
    remove_tree(dir);
    ASSERT_TRUE(ran);
    printf("  folder: %s  idx: %s\n", score(folder.out, a, sizeof(a)), score(idx.out, b, sizeof(b)));
    ASSERT_EQ_INT(folder.status, 0);
    ASSERT_EQ_INT(idx.status, 0);
    ASSERT_STR_CONTAINS(a, "/60)");
    ASSERT_STR_EQ(a, b);
    client_run_free(&folder);
    client_run_free(&idx);
    return TEST_PASS;
}

TEST(client_inferctl_eval_refuses_data_that_does_not_fit)
{
    char dir[64], model[64];
    ASSERT_TRUE(tmp_dir_make(dir, sizeof(dir)));
    ASSERT_TRUE(tmp_dir_make(model, sizeof(model)));
    struct tiny_weights w;
    tiny_weights_init(&w);
    char *json = str_replace_once(TINY_MODEL_JSON, "\"max_batch_size\": 8,",
                                  "\"max_batch_size\": 8, \"preprocessing\": {\"width\": 6, \"height\": 6},");
    bool ok = tiny_model_write(model, json, &w) && write_images(dir, true);
    free(json);
    char jackets[128];
    snprintf(jackets, sizeof(jackets), "%s/jackets", dir);
    ok = ok && mkdir(jackets, 0755) == 0;
    struct client_run classes = {0}, no_labels = {0}, unknown = {0};
    /* a 5-class model on the default (10-class) images; the same model on a
     * folder (it has no labels to match); lenet5 on a folder with a class it lacks */
    const char *a1[] = {"eval", model, NULL};
    const char *a2[] = {"eval", model, "--data", dir, NULL};
    const char *a3[] = {"eval", "model_repository/lenet5", "--data", dir, NULL};
    ok = ok && client_run_tool("inferctl", a1, &classes) && client_run_tool("inferctl", a2, &no_labels) &&
         client_run_tool("inferctl", a3, &unknown);
    remove_tree(dir);
    remove_tree(model);
    ASSERT_TRUE(ok);
    ASSERT_TRUE(classes.status != 0 && no_labels.status != 0 && unknown.status != 0);
    ASSERT_STR_CONTAINS(classes.err, "gives 5 classes");
    ASSERT_STR_CONTAINS(classes.err, "--data DIR");
    ASSERT_STR_CONTAINS(no_labels.err, "has no labels");
    ASSERT_STR_CONTAINS(unknown.err, "folder 'jackets' names none of");
    ASSERT_TRUE(strstr(unknown.out, "accuracy") == NULL);
    client_run_free(&classes);
    client_run_free(&no_labels);
    client_run_free(&unknown);
    return TEST_PASS;
}

TEST(client_inferctl_quantize_own_calibration_images)
{
    char calib[64], eval[64], out[64];
    ASSERT_TRUE(tmp_dir_make(calib, sizeof(calib)));
    ASSERT_TRUE(tmp_dir_make(eval, sizeof(eval)));
    ASSERT_TRUE(tmp_dir_make(out, sizeof(out)));
    bool ok = write_images(calib, false) && write_images(eval, true);
    struct client_run r = {0};
    const char *args[] = {"quantize", "model_repository/lenet5", "-o", out, "--calib-data", calib, "--calib", "40",
                          "--eval-data", eval, "--threads", "1", NULL};
    ok = ok && client_run_tool("inferctl", args, &r);
    struct rt_backend *b = NULL;
    struct rt_model *m = NULL;
    struct rt_error err = {0};
    enum rt_status loaded = RT_ERR_INTERNAL;
    if (ok && r.status == 0 && rt_backend_create(RT_BACKEND_CPU, NULL, &b, &err) == RT_OK) {
        loaded = rt_model_load(out, b, &m, &err);
        if (loaded == RT_OK && rt_model_config(m)->precision != RT_PRECISION_INT8)
            loaded = RT_ERR_INTERNAL;
    }
    rt_model_free(m);
    rt_backend_free(b);
    remove_tree(calib);
    remove_tree(eval);
    remove_tree(out);
    ASSERT_TRUE(ok);
    if (r.status != 0)
        printf("  %s", r.err);
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_STR_CONTAINS(r.out, "calibration over 40 images of");
    ASSERT_STR_CONTAINS(r.out, "(60 images), top-1:");
    ASSERT_EQ_INT(loaded, RT_OK);
    client_run_free(&r);
    return TEST_PASS;
}

/* inferctl profile --precision int8 calibrates its copy on the user's images too. */
TEST(client_inferctl_profile_int8_own_calibration)
{
    char calib[64];
    ASSERT_TRUE(tmp_dir_make(calib, sizeof(calib)));
    bool ok = write_images(calib, false);
    struct client_run r = {0};
    const char *args[] = {"profile", "model_repository/lenet5", "--precision", "int8", "--calib-data", calib,
                          "--runs", "3", "--warmup", "1", "--threads", "1", NULL};
    ok = ok && client_run_tool("inferctl", args, &r);
    remove_tree(calib);
    ASSERT_TRUE(ok);
    if (r.status != 0)
        printf("  %s", r.err);
    ASSERT_EQ_INT(r.status, 0);
    ASSERT_STR_CONTAINS(r.out, "images of /tmp/");
    ASSERT_STR_CONTAINS(r.out, "conv2d");
    client_run_free(&r);
    return TEST_PASS;
}
