/* srv_repo_layout.c - a model folder's layout and version policy (see srv_repo_layout.h). */
#include "srv_repo_layout.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "srv_pbtxt.h"

static bool is_file(const char *dir, const char *name)
{
    char path[PATH_MAX + RT_NAME_MAX + 2];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A version folder's name: digits, no leading zero, fits an int64. */
static bool version_name(const char *s, long long *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 18 || (s[0] == '0' && n > 1) || strspn(s, "0123456789") != n)
        return false;
    *out = strtoll(s, NULL, 10);
    return true;
}

static bool has_flat_files(const char *model_dir, const char *onnx_file)
{
    return is_file(model_dir, "model.json") || is_file(model_dir, onnx_file);
}

/* Numeric sub-folders of model_dir, descending (*out malloc'd); -1 when the
 * folder cannot be read or memory runs out. */
static int list_versions(const char *model_dir, long long **out)
{
    DIR *d = opendir(model_dir);
    if (!d)
        return -1;
    long long *v = NULL;
    int n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        long long num;
        char path[PATH_MAX + 2 * RT_NAME_MAX];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", model_dir, de->d_name);
        if (!version_name(de->d_name, &num) || stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            long long *grown = realloc(v, (size_t)cap * sizeof(*v));
            if (!grown) {
                free(v);
                closedir(d);
                return -1;
            }
            v = grown;
        }
        v[n++] = num;
    }
    closedir(d);
    for (int i = 1; i < n; i++) {   /* a handful of folders: insertion sort */
        long long x = v[i];
        int j = i;
        for (; j > 0 && v[j - 1] < x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
    *out = v;
    return n;
}

bool srv_layout_is_model(const char *dir, const char *name)
{
    char model_dir[PATH_MAX + RT_NAME_MAX + 2];
    snprintf(model_dir, sizeof(model_dir), "%s/%s", dir, name);
    if (has_flat_files(model_dir, "model.onnx") || is_file(model_dir, "config.pbtxt"))
        return true;
    long long *v = NULL;
    int n = list_versions(model_dir, &v);
    free(v);
    return n > 0;
}

static enum rt_status read_config(const char *model_dir, const char *name, struct srv_layout *out,
                                  struct rt_error *err)
{
    char path[PATH_MAX + RT_NAME_MAX + 16];
    snprintf(path, sizeof(path), "%s/config.pbtxt", model_dir);
    struct stat st;
    if (stat(path, &st) != 0) {
        srv_triton_config_default(name, &out->cfg);
        return RT_OK;
    }
    if (!S_ISREG(st.st_mode))
        return rt_error_set(err, RT_ERR_BAD_MODEL, "%s/config.pbtxt is not a file", name);
    if (st.st_size > SRV_PBTXT_MAX_BYTES)
        return rt_error_set(err, RT_ERR_BAD_MODEL, "%s/config.pbtxt: larger than %d bytes", name,
                            SRV_PBTXT_MAX_BYTES);
    FILE *f = fopen(path, "rb");
    char *text = malloc((size_t)st.st_size + 1);
    size_t len = f && text ? fread(text, 1, (size_t)st.st_size + 1, f) : 0;
    bool read = f && text && !ferror(f) && len <= (size_t)st.st_size;
    if (f)
        fclose(f);
    enum rt_status s = read ? srv_triton_config_parse(text, len, name, &out->cfg, err)
                     : text ? rt_error_set(err, RT_ERR_IO, "%s/config.pbtxt cannot be read", name)
                            : rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    free(text);
    out->has_config = s == RT_OK;
    return s;
}

static void pick(struct srv_layout *out, long long v, bool present)
{
    snprintf(out->versions[out->n], sizeof(out->versions[0]), "%lld", v);
    out->present[out->n++] = present;
}

enum rt_status srv_layout_read(const char *model_dir, const char *name, const struct srv_triton_config *override,
                               struct srv_layout *out, struct rt_error *err)
{
    memset(out, 0, sizeof(*out));
    enum rt_status s = RT_OK;
    if (override) {
        out->has_config = true;
        out->cfg = *override;
    } else if ((s = read_config(model_dir, name, out, err)) != RT_OK) {
        return s;
    }
    const struct srv_triton_config *c = &out->cfg;
    long long *v = NULL;
    int n = 0;
    out->flat = has_flat_files(model_dir, c->model_filename[0] ? c->model_filename : "model.onnx");
    if (out->flat) {   /* the folder itself is version 1 */
        if (!(v = malloc(sizeof(*v))))
            return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
        v[n++] = 1;
    } else if ((n = list_versions(model_dir, &v)) < 0) {
        return rt_error_set(err, RT_ERR_IO, "model %s: its folder cannot be read", name);
    }
    if (c->policy == SRV_VERSIONS_SPECIFIC) {
        for (int i = 0; i < c->n_versions; i++) {
            bool there = false;
            for (int k = 0; v && k < n && !there; k++)
                there = v[k] == c->versions[i];
            pick(out, c->versions[i], there);
        }
    } else {
        int want = n;
        if (c->policy == SRV_VERSIONS_LATEST && c->latest >= 1 && c->latest < n)
            want = c->latest;
        if (want > SRV_MAX_VERSIONS) {
            rt_error_set(err, RT_ERR_BAD_MODEL, "model %s: %d versions, more than the %d inferd loads at once", name,
                         want, SRV_MAX_VERSIONS);
            s = RT_ERR_BAD_MODEL;
        }
        for (int i = want - 1; v && s == RT_OK && i >= 0; i--)   /* ascending */
            pick(out, v[i], true);
    }
    free(v);
    if (s == RT_OK && out->n == 0)
        s = rt_error_set(err, RT_ERR_BAD_MODEL,
                         "model %s: no version to load: put model.onnx (or model.json and model.safetensors) "
                         "directly in its folder, or in numeric version folders (%s/1/model.onnx)",
                         name, name);
    return s;
}
