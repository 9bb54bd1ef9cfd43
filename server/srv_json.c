/* srv_json.c - depth-checked JSON parsing and typed field access (see srv_json.h). */
#include "srv_json.h"

#include <math.h>

/* Bytes the depth scan must look at; everything else is skipped in a tight loop. */
static const unsigned char DEPTH_SPECIAL[256] = {
    ['"'] = 1, ['\\'] = 1, ['['] = 1, [']'] = 1, ['{'] = 1, ['}'] = 1};

bool srv_json_depth_ok(const char *text, size_t len, int max_depth)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + len;
    int depth = 0;
    bool in_string = false;
    for (; p < end; p++) {
        if (!DEPTH_SPECIAL[*p])
            continue;
        if (in_string) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                in_string = false;
        } else if (*p == '"') {
            in_string = true;
        } else if (*p == '[' || *p == '{') {
            if (++depth > max_depth)
                return false;
        } else if (*p == ']' || *p == '}') {
            depth--;
        }
    }
    return true;
}

int64_t srv_json_value_bound(const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + len;
    int64_t n = 1;
    bool in_string = false;
    for (; p < end; p++) {
        if (in_string) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                in_string = false;
        } else if (*p == '"') {
            in_string = true;
        } else if (*p == ',' || *p == '[' || *p == '{') {
            n++;
        }
    }
    return n;
}

cJSON *srv_json_parse(const char *text, size_t len, int max_depth, struct rt_error *err)
{
    if (len > 0 && !srv_json_depth_ok(text, len, max_depth)) {
        rt_error_set(err, RT_ERR_INVALID, "JSON nested deeper than %d levels", max_depth);
        return NULL;
    }
    return srv_json_parse_checked(text, len, NULL, err);
}

/* The offset in the uncut text of byte at of the cut one. */
static size_t uncut(const struct srv_json_cuts *c, size_t at)
{
    size_t orig = at;
    for (int i = 0; c && i < c->n && c->at[i] <= at; i++)
        orig += c->len[i];
    return orig;
}

cJSON *srv_json_parse_checked(const char *text, size_t len, const struct srv_json_cuts *cuts,
                              struct rt_error *err)
{
    if (len == 0) {
        rt_error_set(err, RT_ERR_INVALID, "empty request body");
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!root) {
        size_t at = end && end >= text ? (size_t)(end - text) : 0;
        rt_error_set(err, RT_ERR_INVALID, "malformed JSON near byte %zu", uncut(cuts, at));
        return NULL;
    }
    /* Only whitespace may follow the value. */
    for (const char *p = end; p && p < text + len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            cJSON_Delete(root);
            rt_error_set(err, RT_ERR_INVALID, "unexpected data after the JSON value at byte %zu",
                         uncut(cuts, (size_t)(p - text)));
            return NULL;
        }
    }
    return root;
}

bool srv_json_get(const cJSON *obj, const char *key, int type_mask, const char *what,
                  const cJSON **out, struct rt_error *err)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!item)
        return true;
    if (!(item->type & type_mask)) {
        rt_error_set(err, RT_ERR_INVALID, "%s: \"%s\" has the wrong type", what, key);
        return false;
    }
    *out = item;
    return true;
}

bool srv_json_int(const cJSON *item, int64_t lo, int64_t hi, const char *what, int64_t *out,
                  struct rt_error *err)
{
    double v = cJSON_IsNumber(item) ? item->valuedouble : NAN;
    if (!(v >= (double)lo && v <= (double)hi) || v != floor(v)) {
        rt_error_set(err, RT_ERR_INVALID, "%s must be an integer in %lld..%lld", what,
                     (long long)lo, (long long)hi);
        return false;
    }
    *out = (int64_t)v;
    return true;
}
