/* image_source.c - Fashion-MNIST or a folder of image files, as a model's inputs (image_source.h). */
#include "image_source.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "runtime/image/image.h"

#define FASHION_CLASSES 10
#define MAX_FILES (1 << 20)
#define MAX_DEPTH 8
/* Larger than any image the decoders accept at their default limits. */
#define MAX_FILE_BYTES ((long)256 << 20)

bool ctl_images_fashion_mnist(const char *split, const struct rt_model_config *cfg, struct ctl_images *out)
{
    memset(out, 0, sizeof(*out));
    if (cfg && cfg->outputs[0].sample_elems != FASHION_CLASSES) {
        fprintf(stderr,
                "inferctl: %s gives %lld classes; the default images (Fashion-MNIST) have %d: give your own "
                "images (eval: --data DIR, one sub-folder per class; quantize: --calib-data DIR)\n",
                cfg->name, (long long)cfg->outputs[0].sample_elems, FASHION_CLASSES);
        return false;
    }
    struct rt_error err = {0};
    if (rt_dataset_load_fashion_mnist(split, &out->ds, &err) != RT_OK) {
        fprintf(stderr, "inferctl: %s\n", err.msg);
        return false;
    }
    out->count = out->ds.count;
    out->labels = malloc(sizeof(int) * (size_t)out->count);
    if (!out->labels) {
        fprintf(stderr, "inferctl: out of memory\n");
        ctl_images_free(out);
        return false;
    }
    for (int i = 0; i < out->count; i++)
        out->labels[i] = out->ds.labels ? out->ds.labels[i] : -1;
    return true;
}

/* ---- a folder of files */

static bool is_image_name(const char *name)
{
    static const char *const EXT[] = {".png", ".jpg", ".jpeg", ".pgm", ".ppm", ".pnm"};
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof(EXT) / sizeof(EXT[0]); i++)
        if (strcasecmp(dot, EXT[i]) == 0)
            return true;
    return false;
}

/* A class name reduced to lower-case letters and digits: "T-shirt/top",
 * "t_shirt_top" and "tshirt top" all become "tshirttop". */
static void class_key(const char *name, char *key, size_t cap)
{
    size_t n = 0;
    for (; *name && n + 1 < cap; name++)
        if (isalnum((unsigned char)*name))
            key[n++] = (char)tolower((unsigned char)*name);
    key[n] = '\0';
}

static int label_of(const struct rt_model_config *cfg, const char *folder)
{
    char want[128], have[128];
    class_key(folder, want, sizeof(want));
    for (int i = 0; i < cfg->n_labels; i++) {
        class_key(cfg->labels[i], have, sizeof(have));
        if (want[0] && strcmp(want, have) == 0)
            return i;
    }
    return -1;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir (sorted, without "." entries and hidden files); NULL
 * (after printing why) when dir cannot be read. */
static char **list_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return NULL;
    }
    char **names = NULL;
    int n = 0, cap = 0;
    bool ok = true;
    for (struct dirent *e; ok && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = cap <= MAX_FILES ? realloc(names, sizeof(char *) * (size_t)cap) : NULL;
            ok = grown != NULL;
            names = ok ? grown : names;
        }
        if (ok)
            ok = (names[n] = strdup(e->d_name)) != NULL && ++n;
    }
    closedir(d);
    if (!ok) {
        fprintf(stderr, "inferctl: %s: too many entries or out of memory\n", dir);
        for (int i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return NULL;
    }
    if (n > 1)
        qsort(names, (size_t)n, sizeof(char *), compare_names);
    *count = n;
    return names ? names : calloc(1, sizeof(char *));
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Appends path with label to out; false when out of room or memory. */
static bool add_file(struct ctl_images *out, int *cap, const char *path, int label)
{
    if (out->count == *cap) {
        int grown_cap = *cap ? *cap * 2 : 256;
        char **paths = grown_cap <= MAX_FILES ? realloc(out->paths, sizeof(char *) * (size_t)grown_cap) : NULL;
        if (!paths)
            return false;
        out->paths = paths;
        int *labels = realloc(out->labels, sizeof(int) * (size_t)grown_cap);
        if (!labels)
            return false;
        out->labels = labels;
        *cap = grown_cap;
    }
    if (!(out->paths[out->count] = strdup(path)))
        return false;
    out->labels[out->count++] = label;
    return true;
}

/* Every image file under dir (depth levels of sub-folders at most), with label. */
static bool add_tree(struct ctl_images *out, int *cap, const char *dir, int label, int depth)
{
    int n;
    char **names = list_dir(dir, &n);
    bool ok = names != NULL;
    for (int i = 0; ok && i < n; i++) {
        char path[4096];
        if (snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= (int)sizeof(path))
            continue;
        if (is_dir(path))
            ok = depth >= MAX_DEPTH || add_tree(out, cap, path, label, depth + 1);
        else if (is_image_name(names[i]) && !add_file(out, cap, path, label)) {
            fprintf(stderr, "inferctl: %s: more than %d images, or out of memory\n", dir, MAX_FILES);
            ok = false;
        }
    }
    if (names)
        free_names(names, n);
    return ok;
}

bool ctl_images_folder(const char *dir, const struct rt_model_config *cfg, bool need_labels, struct ctl_images *out)
{
    memset(out, 0, sizeof(*out));
    int cap = 0;
    bool ok = true;
    if (!need_labels) {
        ok = add_tree(out, &cap, dir, -1, 0);
    } else if (!cfg->labels) {
        fprintf(stderr, "inferctl: %s has no labels, so the class folders of %s cannot be matched to its outputs "
                        "(give the model a labels file: docs/model-format.md)\n", cfg->name, dir);
        ok = false;
    } else {
        int n;
        char **names = list_dir(dir, &n);
        ok = names != NULL;
        for (int i = 0; ok && i < n; i++) {
            char path[4096];
            if (snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= (int)sizeof(path) || !is_dir(path))
                continue;   /* files beside the class folders: not images of a class */
            int label = label_of(cfg, names[i]);
            if (label < 0) {
                fprintf(stderr, "inferctl: %s: folder '%s' names none of %s's %d classes (%s, %s, ...)\n", dir,
                        names[i], cfg->name, cfg->n_labels, cfg->labels[0],
                        cfg->n_labels > 1 ? cfg->labels[1] : "");
                ok = false;
            } else {
                ok = add_tree(out, &cap, path, label, 1);
            }
        }
        if (names)
            free_names(names, n);
    }
    if (ok && out->count == 0) {
        fprintf(stderr, "inferctl: %s: no image files (.png, .jpg, .pgm, .ppm)%s\n", dir,
                need_labels ? " in class sub-folders" : "");
        ok = false;
    }
    if (!ok)
        ctl_images_free(out);
    return ok;
}

/* ---- decoding */

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    uint8_t *buf = NULL;
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (n < 0 || n > MAX_FILE_BYTES || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "inferctl: %s: not a readable file of at most %ld bytes\n", path, MAX_FILE_BYTES);
    } else if (!(buf = malloc(n > 0 ? (size_t)n : 1))) {
        fprintf(stderr, "inferctl: %s: out of memory\n", path);
    } else if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "inferctl: %s: read error\n", path);
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

bool ctl_image_file_preprocess(const char *path, const struct rt_preprocess *pre, float *dst)
{
    size_t len;
    uint8_t *data = read_file(path, &len);
    if (!data)
        return false;
    struct rt_image img;
    struct rt_error err = {0};
    enum rt_status st = rt_image_decode(data, len, NULL, &img, &err);
    free(data);
    if (st == RT_OK) {
        st = rt_image_preprocess(&img, pre, dst, &err);
        rt_image_free(&img);
    }
    if (st != RT_OK)
        fprintf(stderr, "inferctl: %s: %s: %s\n", path, rt_status_name(st), err.msg);
    return st == RT_OK;
}

bool ctl_images_preprocess(const struct ctl_images *src, int i, const struct rt_preprocess *pre, float *dst)
{
    if (src->paths)
        return ctl_image_file_preprocess(src->paths[i], pre, dst);
    struct rt_preprocess upright = *pre;   /* dataset images are already upright, 28x28 */
    upright.invert = false;
    upright.resize_shorter = 0;
    const struct rt_dataset *ds = &src->ds;
    struct rt_image img = {ds->cols, ds->rows, 1, ds->images + (size_t)i * (size_t)(ds->rows * ds->cols)};
    struct rt_error err = {0};
    if (rt_image_preprocess(&img, &upright, dst, &err) != RT_OK) {
        fprintf(stderr, "inferctl: preprocessing: %s\n", err.msg);
        return false;
    }
    return true;
}

void ctl_images_free(struct ctl_images *src)
{
    for (int i = 0; src->paths && i < src->count; i++)
        free(src->paths[i]);
    free(src->paths);
    free(src->labels);
    rt_dataset_free(&src->ds);
    memset(src, 0, sizeof(*src));
}
