/*
 * test_model_util.h - helpers that build model folders on disk for tests:
 * a temporary directory, a tiny valid model ("conv -> bn -> relu -> pool ->
 * flatten -> linear") with random weights, and text substitution to break it.
 */
#ifndef TEST_MODEL_UTIL_H
#define TEST_MODEL_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/format/safetensors.h"

#define TINY_IN_ELEMS 36   /* [1, 6, 6] */
#define TINY_CLASSES 5

/* The tiny model's weights (random, filled by tiny_weights_init). */
struct tiny_weights {
    float conv_w[4 * 1 * 3 * 3];
    float bn_w[4], bn_b[4], bn_mean[4], bn_var[4];
    float fc_w[TINY_CLASSES * 36], fc_b[TINY_CLASSES];
};

extern const char TINY_MODEL_JSON[];

void tiny_weights_init(struct tiny_weights *w);
/* The reference forward pass with kref kernels: x [n, 36] -> y [n, 5]. */
void tiny_forward_ref(const struct tiny_weights *w, int n, const float *x, float *y);

/* mkdtemp under /tmp; returns false on failure. */
bool tmp_dir_make(char *out, size_t cap);
/* Removes the files inside dir (one level) and dir itself. */
void tmp_dir_remove(const char *dir);
bool write_file(const char *dir, const char *name, const void *data, size_t len);

/* Writes model.json (json) and model.safetensors (tiny weights) into dir. */
bool tiny_model_write(const char *dir, const char *json, const struct tiny_weights *w);

/* Returns a malloc'd copy of text with the first occurrence of from replaced
 * by to (aborts if from is absent: a broken test). */
char *str_replace_once(const char *text, const char *from, const char *to);

#endif /* TEST_MODEL_UTIL_H */
