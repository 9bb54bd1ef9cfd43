/*
 * test_dataset.c - the IDX reader: the real Fashion-MNIST test split, small
 * plain and gzip files written to a temporary folder, and malformed files
 * (bad magic, bad dimensions, truncation, trailing data, count mismatch).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "runtime/image/dataset.h"
#include "test.h"

TEST(dataset_fashion_mnist_test_split)
{
    struct rt_dataset ds;
    struct rt_error err = {0};
    enum rt_status st = rt_dataset_load_fashion_mnist("test", &ds, &err);
    if (st == RT_ERR_NOT_FOUND)
        SKIP("%s", err.msg);
    TEST_FAIL_IF(st != RT_OK, "%s", err.msg);
    int bad = ds.count != 10000 || ds.rows != 28 || ds.cols != 28 || !ds.labels;
    int per_class[10] = {0};
    long ink = 0;
    for (int i = 0; !bad && i < ds.count; i++) {
        bad |= ds.labels[i] >= 10;
        if (ds.labels[i] < 10)
            per_class[ds.labels[i]]++;
    }
    for (int i = 0; !bad && i < 28 * 28; i++)
        ink += ds.images[i];
    rt_dataset_free(&ds);
    ASSERT_FALSE(bad);
    /* The test split is balanced: 1000 images of each class. */
    for (int c = 0; c < 10; c++)
        ASSERT_EQ_INT(per_class[c], 1000);
    ASSERT_GE(ink, 1);
    ASSERT_EQ_INT(rt_dataset_load_fashion_mnist("validation", &ds, &err), RT_ERR_INVALID);
    return TEST_PASS;
}

/* A temporary folder with the files one test writes, removed at the end. */
struct tmp_dir {
    char path[64];
    char files[8][128];
    int n;
};

static bool tmp_init(struct tmp_dir *t)
{
    // cppcheck-suppress ctuuninitvar ; snprintf writes t->path, it reads nothing of t
    snprintf(t->path, sizeof(t->path), "/tmp/inferd-test-XXXXXX");
    t->n = 0;
    return mkdtemp(t->path) != NULL;
}

static void tmp_cleanup(struct tmp_dir *t)
{
    for (int i = 0; i < t->n; i++)
        unlink(t->files[i]);
    rmdir(t->path);
}

/* Writes (or rewrites) <tmp>/name, gzip-compressed when the name ends in
 * .gz; returns the path (owned by t). */
static const char *tmp_write(struct tmp_dir *t, const char *name, const void *data, size_t len)
{
    char want[128];
    snprintf(want, sizeof(want), "%s/%s", t->path, name);
    int i = 0;
    while (i < t->n && strcmp(t->files[i], want) != 0)
        i++;
    if (i == 8)
        return NULL;
    if (i == t->n)
        t->n++;
    char *path = t->files[i];
    memcpy(path, want, sizeof(want));
    size_t nl = strlen(name);
    if (nl > 3 && strcmp(name + nl - 3, ".gz") == 0) {
        gzFile f = gzopen(path, "wb");
        if (!f || (len && gzwrite(f, data, (unsigned)len) != (int)len)) {
            if (f)
                gzclose(f);
            return NULL;
        }
        return gzclose(f) == Z_OK ? path : NULL;
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    bool ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? path : NULL;
}

/* IDX bytes: magic 0x08 DD, big-endian dims, then payload. */
static size_t idx_bytes(uint8_t *buf, int rank, const uint32_t *dims, const uint8_t *payload,
                        size_t payload_len)
{
    buf[0] = buf[1] = 0;
    buf[2] = 0x08;
    buf[3] = (uint8_t)rank;
    for (int i = 0; i < rank; i++) {
        buf[4 + 4 * i] = (uint8_t)(dims[i] >> 24);
        buf[5 + 4 * i] = (uint8_t)(dims[i] >> 16);
        buf[6 + 4 * i] = (uint8_t)(dims[i] >> 8);
        buf[7 + 4 * i] = (uint8_t)dims[i];
    }
    memcpy(buf + 4 + 4 * (size_t)rank, payload, payload_len);
    return 4 + 4 * (size_t)rank + payload_len;
}

TEST(dataset_idx_plain_and_gzip)
{
    struct tmp_dir t;
    ASSERT_TRUE(tmp_init(&t));
    uint8_t pixels[3 * 2 * 4], labels[3] = {7, 0, 9}, buf[128];
    for (size_t i = 0; i < sizeof(pixels); i++)
        pixels[i] = (uint8_t)test_rand_int(0, 255);
    size_t n = idx_bytes(buf, 3, (const uint32_t[]){3, 2, 4}, pixels, sizeof(pixels));
    const char *img_plain = tmp_write(&t, "img", buf, n);
    const char *img_gz = tmp_write(&t, "img.gz", buf, n);
    n = idx_bytes(buf, 1, (const uint32_t[]){3}, labels, 3);
    const char *lab_gz = tmp_write(&t, "lab.gz", buf, n);

    struct rt_dataset a = {0}, b = {0};
    struct rt_error err = {0};
    enum rt_status sa = RT_ERR_IO, sb = RT_ERR_IO;
    if (img_plain && img_gz && lab_gz) {
        sa = rt_dataset_load_idx(img_plain, NULL, &a, &err);
        sb = rt_dataset_load_idx(img_gz, lab_gz, &b, &err);
    }
    tmp_cleanup(&t);
    bool ok = sa == RT_OK && sb == RT_OK && a.count == 3 && a.rows == 2 && a.cols == 4 &&
              !a.labels && b.count == 3 && b.labels &&
              memcmp(a.images, pixels, sizeof(pixels)) == 0 &&
              memcmp(b.images, pixels, sizeof(pixels)) == 0 && memcmp(b.labels, labels, 3) == 0;
    rt_dataset_free(&a);
    rt_dataset_free(&b);
    TEST_FAIL_IF(!ok, "load: %s / %s (%s)", rt_status_name(sa), rt_status_name(sb), err.msg);
    return TEST_PASS;
}

/* FASHION_MNIST_DIR names the folder rt_dataset_load_fashion_mnist reads (the
 * GPU machine has no Debian package; its bundle carries the files); a folder
 * without them is RT_ERR_NOT_FOUND, naming the variable. */
TEST(dataset_fashion_mnist_dir_override)
{
    struct tmp_dir t;
    ASSERT_TRUE(tmp_init(&t));
    uint8_t pixels[2 * 3 * 3], labels[2] = {4, 1}, buf[64];
    for (size_t i = 0; i < sizeof(pixels); i++)
        pixels[i] = (uint8_t)test_rand_int(0, 255);
    size_t n = idx_bytes(buf, 3, (const uint32_t[]){2, 3, 3}, pixels, sizeof(pixels));
    bool written = tmp_write(&t, "t10k-images-idx3-ubyte.gz", buf, n) != NULL;
    n = idx_bytes(buf, 1, (const uint32_t[]){2}, labels, 2);
    written = tmp_write(&t, "t10k-labels-idx1-ubyte.gz", buf, n) && written;

    const char *before = getenv("FASHION_MNIST_DIR");
    char *saved = before ? strdup(before) : NULL;
    struct rt_dataset ds = {0};
    struct rt_error err = {0}, missing = {0};
    setenv("FASHION_MNIST_DIR", t.path, 1);
    enum rt_status st = written ? rt_dataset_load_fashion_mnist("test", &ds, &err) : RT_ERR_IO;
    enum rt_status st_train = rt_dataset_load_fashion_mnist("train", &(struct rt_dataset){0}, &missing);
    if (saved)
        setenv("FASHION_MNIST_DIR", saved, 1);
    else
        unsetenv("FASHION_MNIST_DIR");
    free(saved);
    tmp_cleanup(&t);
    bool ok = st == RT_OK && ds.count == 2 && ds.rows == 3 && ds.cols == 3 && ds.labels &&
              memcmp(ds.images, pixels, sizeof(pixels)) == 0 && memcmp(ds.labels, labels, 2) == 0;
    rt_dataset_free(&ds);
    TEST_FAIL_IF(!ok, "load from FASHION_MNIST_DIR: %s (%s)", rt_status_name(st), err.msg);
    printf("  no train split there: %s\n", missing.msg);
    ASSERT_EQ_INT(st_train, RT_ERR_NOT_FOUND);
    ASSERT_TRUE(strstr(missing.msg, "FASHION_MNIST_DIR") != NULL);
    return TEST_PASS;
}

struct idx_case { // NOLINT(clang-analyzer-optin.performance.Padding): a table of test cases, fields in reading order
    const char *name;
    bool images_file;        /* the broken file is the images (else labels) */
    uint8_t bytes[48];
    size_t len;
    enum rt_status want;
};

TEST(dataset_idx_malformed)
{
    /* A valid 2 x 2 x 2 image file and 2-label file to pair broken ones with. */
    static const uint8_t good_images[] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2,
                                          1, 2, 3, 4, 5, 6, 7, 8};
    static const uint8_t good_labels[] = {0, 0, 8, 1, 0, 0, 0, 2, 3, 4};
    static const struct idx_case cases[] = {
        {"labels magic on images", true, {0, 0, 8, 1, 0, 0, 0, 2, 1, 2}, 10, RT_ERR_INVALID},
        {"signed-byte type", true, {0, 0, 9, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 5}, 17,
         RT_ERR_INVALID},
        {"empty file", true, {0}, 0, RT_ERR_INVALID},
        {"truncated header", true, {0, 0, 8, 3, 0, 0, 0, 2, 0, 0}, 10, RT_ERR_INVALID},
        {"truncated pixels", true, {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3},
         19, RT_ERR_INVALID},
        {"zero rows", true, {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2}, 16,
         RT_ERR_INVALID},
        {"huge count", true, {0, 0, 8, 3, 0x7f, 0xff, 0xff, 0xff, 0, 1, 0, 0, 0, 1, 0, 0}, 16,
         RT_ERR_INVALID},
        {"trailing data", true, {0, 0, 8, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 9, 9}, 18,
         RT_ERR_INVALID},
        {"truncated labels", false, {0, 0, 8, 1, 0, 0, 0, 2, 3}, 9, RT_ERR_INVALID},
        {"count mismatch", false, {0, 0, 8, 1, 0, 0, 0, 3, 3, 4, 5}, 11, RT_ERR_INVALID},
        {"images magic on labels", false, {0, 0, 8, 3, 0, 0, 0, 2, 3, 4}, 10, RT_ERR_INVALID},
    };
    struct tmp_dir t;
    ASSERT_TRUE(tmp_init(&t));
    const char *images = tmp_write(&t, "good-images.gz", good_images, sizeof(good_images));
    const char *labels = tmp_write(&t, "good-labels", good_labels, sizeof(good_labels));
    int failures = 0;
    for (size_t i = 0; images && labels && i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct idx_case *c = &cases[i];
        /* Each case once plain and once gzip-compressed. */
        for (int gz = 0; gz < 2; gz++) {
            const char *broken = tmp_write(&t, gz ? "broken.gz" : "broken", c->bytes, c->len);
            struct rt_dataset ds = {0};
            struct rt_error err = {0};
            enum rt_status st =
                broken ? rt_dataset_load_idx(c->images_file ? broken : images,
                                             c->images_file ? labels : broken, &ds, &err)
                       : RT_ERR_IO;
            if (st != c->want || ds.images || ds.labels) {
                printf("  %s%s: %s (%s)\n", c->name, gz ? " (gz)" : "", rt_status_name(st),
                       err.msg);
                failures++;
            }
            rt_dataset_free(&ds);
        }
    }
    struct rt_dataset ds;
    char missing[128];
    snprintf(missing, sizeof(missing), "%s/no-such-file", t.path);
    enum rt_status st_missing = rt_dataset_load_idx(missing, NULL, &ds, NULL);

    /* The first half of a gzip stream: corrupt compressed data, not IDX. */
    uint8_t whole[64];
    size_t whole_len = 0;
    FILE *f = images ? fopen(images, "rb") : NULL;
    if (f) {
        whole_len = fread(whole, 1, sizeof(whole), f);
        fclose(f);
    }
    const char *cut = tmp_write(&t, "cut", whole, whole_len / 2);
    enum rt_status st_cut = cut && whole_len ? rt_dataset_load_idx(cut, NULL, &ds, NULL)
                                             : RT_ERR_IO;
    tmp_cleanup(&t);
    ASSERT_TRUE(images && labels);
    ASSERT_EQ_INT(failures, 0);
    ASSERT_EQ_INT(st_missing, RT_ERR_NOT_FOUND);
    ASSERT_EQ_INT(st_cut, RT_ERR_INVALID);
    return TEST_PASS;
}
