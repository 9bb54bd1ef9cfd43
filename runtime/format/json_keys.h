/*
 * json_keys.h - strict JSON objects for the model formats: a key the
 * reader does not know is an error that suggests the nearest known key
 * ("max_batch" -> "max_batch_size"), and a parse error names its line and
 * column.
 */
#ifndef RT_JSON_KEYS_H
#define RT_JSON_KEYS_H

#include <stdbool.h>
#include <stddef.h>

struct cJSON;

/* Whether obj holds a key outside known[0..n_known); if so, msg says which
 * and, when one is close, the known key it probably meant. */
bool rt_json_unknown_key(const struct cJSON *obj, const char *const *known, int n_known, char *msg, size_t cap);

/* 1-based line and column of `at` in text (clamped to text's end). */
void rt_json_position(const char *text, size_t len, const char *at, int *line, int *col);

#endif /* RT_JSON_KEYS_H */
