/* model_variant.c - shipped model folders with model.json fields changed (see model_variant.h). */
#include "model_variant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/rt_status.h"

static const char *const LINKED[] = {"model.safetensors", "labels.txt"};

char *json_field_set(const char *json, const char *key, const char *value)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\"", key);
    const char *at = strstr(json, pat);
    size_t len = strlen(json) + strlen(key) + strlen(value) + 16;
    char *out = malloc(len);
    RT_ASSERT(out);
    if (!at) {
        const char *brace = strchr(json, '{');
        RT_ASSERT(brace);
        snprintf(out, len, "%.*s{\"%s\": %s, %s", (int)(brace - json), json, key, value, brace + 1);
        return out;
    }
    const char *v = strchr(at + strlen(pat), ':');
    RT_ASSERT(v);
    v++;
    const char *end = v + strspn(v, " ");
    end += *end == '"' ? strcspn(end + 1, "\"") + 2 : strcspn(end, ",}");
    snprintf(out, len, "%.*s %s%s", (int)(v - json), json, value, end);
    return out;
}

/* model.json of src with the fields set, or NULL. */
static char *variant_json(const char *src, const char *dir, const char *precision, const char *engine,
                          int max_batch)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/model.json", src);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = calloc(1, 1 << 20);
    RT_ASSERT(text);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    char batch[16], name[80];
    snprintf(batch, sizeof(batch), "%d", max_batch);
    snprintf(name, sizeof(name), "\"%s\"", strrchr(dir, '/') + 1);   /* the loader wants the folder's name */
    const char *const SET[][2] = {{"precision", precision}, {"conv_engine", engine}, {"max_batch_size", batch},
                                  {"name", name}};
    for (size_t i = 0; i < sizeof(SET) / sizeof(SET[0]) && n > 0; i++) {
        char *next = json_field_set(text, SET[i][0], SET[i][1]);
        free(text);
        text = next;
    }
    if (n == 0) {
        free(text);
        return NULL;
    }
    return text;
}

bool model_variant_make(const char *src, char *dir, size_t cap, const char *precision, const char *engine,
                        int max_batch)
{
    snprintf(dir, cap, "/tmp/inferd-variant-XXXXXX");
    if (cap < 32 || !mkdtemp(dir))
        return false;
    char *json = variant_json(src, dir, precision, engine, max_batch), path[600];
    snprintf(path, sizeof(path), "%s/model.json", dir);
    FILE *f = json ? fopen(path, "wb") : NULL;
    bool ok = f && fwrite(json, 1, strlen(json), f) == strlen(json);
    if (f)
        ok = fclose(f) == 0 && ok;
    free(json);
    for (size_t i = 0; i < sizeof(LINKED) / sizeof(LINKED[0]) && ok; i++) {
        char from[512], to[600];
        snprintf(from, sizeof(from), "%s/%s", src, LINKED[i]);
        snprintf(to, sizeof(to), "%s/%s", dir, LINKED[i]);
        char *abs = realpath(from, NULL);
        ok = abs && symlink(abs, to) == 0;
        free(abs);
    }
    return ok;
}

void model_variant_remove(const char *dir)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/model.json", dir);
    unlink(path);
    for (size_t i = 0; i < sizeof(LINKED) / sizeof(LINKED[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, LINKED[i]);
        unlink(path);
    }
    rmdir(dir);
}
