/*
 * srv_json.h - reading JSON request bodies safely.
 *
 * Bodies are checked for nesting depth by a byte scan before cJSON sees
 * them (cJSON recurses per level), then parsed with the length-taking,
 * thread-safe cJSON_ParseWithLengthOpts. JSON stays at the HTTP edge: the
 * handlers turn the tree into native structs right away.
 */
#ifndef SRV_JSON_H
#define SRV_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/rt_status.h"

/* Whether no object or array in text[0..len) nests deeper than max_depth
 * (strings and escapes are skipped correctly; the rest is not validated). */
bool srv_json_depth_ok(const char *text, size_t len, int max_depth);

/* An upper bound on the values (cJSON nodes) parsing text[0..len) would
 * allocate: one per ',' '[' '{' outside strings, plus one. A byte scan, so
 * a body can be refused before cJSON spends ~80 bytes on each of its values. */
int64_t srv_json_value_bound(const char *text, size_t len);

#define SRV_JSON_MAX_CUTS 16

/* Ranges cut out of a text before it is parsed (srv_json_numbers_take cuts
 * tensor data out), so error offsets can name bytes of the text as sent:
 * len[i] bytes were removed at offset at[i] of the cut text (ascending). */
struct srv_json_cuts {
    int n;
    size_t at[SRV_JSON_MAX_CUTS];
    size_t len[SRV_JSON_MAX_CUTS];
};

/* Depth check, then parse. NULL with err (RT_ERR_INVALID) on failure. */
cJSON *srv_json_parse(const char *text, size_t len, int max_depth, struct rt_error *err);
/* The parse alone, for text whose depth the caller has already checked;
 * cuts (or NULL) map error offsets back to the uncut text. */
cJSON *srv_json_parse_checked(const char *text, size_t len, const struct srv_json_cuts *cuts,
                              struct rt_error *err);

/* Typed field access: *out is the item, or NULL when absent. False (with
 * err) when the item is present with a type outside type_mask. */
bool srv_json_get(const cJSON *obj, const char *key, int type_mask, const char *what,
                  const cJSON **out, struct rt_error *err);

/* An integer number (exactly), within [lo, hi]; false with err otherwise. */
bool srv_json_int(const cJSON *item, int64_t lo, int64_t hi, const char *what, int64_t *out,
                  struct rt_error *err);

#endif /* SRV_JSON_H */
