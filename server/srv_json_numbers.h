/*
 * srv_json_numbers.h - the fast path for tensor data in JSON requests.
 *
 * cJSON turns every number into a heap node and parses it with strtod; a
 * 28x28 image is 784 of each, which dominated the cost of a JSON infer.
 * Before cJSON sees the body, this scanner finds the arrays at
 * inputs[i].data, converts their numbers - exactly the values strtod gives,
 * so both paths agree to the bit - and cuts the arrays' insides out,
 * leaving cJSON an empty array and a short text. Where the input's
 * "datatype" (before its "data", as KServe clients write it) is FP32 or
 * BF16, the numbers go straight into floats: the buffer the caller keeps as
 * the input tensor. Other datatypes take doubles, which the caller checks
 * against the datatype's range as it converts them.
 *
 * It takes only what cJSON would pick itself - the first "inputs" key of
 * the top object and the first "data" (and "datatype") key of each object
 * in that array, with no escaped key before them that could decode to the
 * same name - and only arrays holding nothing but (nested arrays of)
 * JSON-grammar numbers and the NaN / Infinity tokens (which cJSON would
 * refuse); for floats, only numbers within FP32's range.
 * Anything else is left in place for cJSON and the normal path, which
 * reports the errors.
 */
#ifndef SRV_JSON_NUMBERS_H
#define SRV_JSON_NUMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "srv_json.h"

#define SRV_JSON_NUMBERS_MAX_INPUTS 16

struct srv_json_numbers {
    /* By position in the "inputs" array: floats when its datatype said FP32
     * or BF16 (each number rounded once, as (float) of strtod's double),
     * else doubles; both NULL when not taken. The caller may keep a floats
     * buffer (its size is at least count floats) and set the pointer NULL. */
    float *floats[SRV_JSON_NUMBERS_MAX_INPUTS];
    double *doubles[SRV_JSON_NUMBERS_MAX_INPUTS];
    int64_t count[SRV_JSON_NUMBERS_MAX_INPUTS];
    /* Every "data" array cJSON would read was taken: what cJSON still sees
     * is the request's small change (names, shapes, parameters). */
    bool complete;
    struct srv_json_cuts cuts;  /* where the taken arrays' insides were cut out */
    int depth;                  /* the deepest nesting inside them, counted from the top */
};

/* Scans and edits text[0..len) in place: the inside of each array taken is
 * cut out ("[]" stays), and the text's new length returned, so the later
 * scans and cJSON see only the request's small change. At most max_elems
 * numbers are taken in all. Never fails: what it cannot take stays for
 * cJSON. */
size_t srv_json_numbers_take(char *text, size_t len, int64_t max_elems,
                             struct srv_json_numbers *out);
void srv_json_numbers_free(struct srv_json_numbers *n);

/* The number at text[0..len) (JSON grammar, the whole token) as strtod
 * would read it, or one of the tokens NaN, Inf, Infinity (each with an
 * optional '-') that Triton's parser accepts; false when it is neither, or
 * when the literal is past the range of a double (so every infinity it
 * returns was spelled as one). For tests of the fast path. */
bool srv_json_number(const char *text, size_t len, double *out);

#endif /* SRV_JSON_NUMBERS_H */
