/*
 * model_variant.h - a shipped model folder with a few model.json fields
 * changed, for the GPU tests (tests/test_cuda_models.c) and the GPU
 * benchmark (tests/bench/bench_gpu.c): precision, convolution engine and
 * max_batch_size set, "name" set to the new folder's (the loader checks
 * it), the weights and labels linked, not copied.
 *
 *     char dir[64];
 *     model_variant_make("model_repository/lenet5", dir, sizeof(dir), "\"fp16\"", "\"cudnn\"", 256);
 *     ... rt_model_load(dir, ...) ...
 *     model_variant_remove(dir);
 */
#ifndef MODEL_VARIANT_H
#define MODEL_VARIANT_H

#include <stdbool.h>
#include <stddef.h>

/* A malloc'd copy of model.json text with `"key": value` set (replaced,
 * or added at the top); value is JSON text ("\"fp16\"", "256"). */
char *json_field_set(const char *json, const char *key, const char *value);

/* A new folder under /tmp (its path in dir, cap >= 32) holding model
 * folder src with "precision" and "conv_engine" set (JSON text) and
 * max_batch_size. False when src cannot be read or the folder written. */
bool model_variant_make(const char *src, char *dir, size_t cap, const char *precision, const char *engine,
                        int max_batch);

/* Removes what model_variant_make wrote, and the folder. */
void model_variant_remove(const char *dir);

#endif /* MODEL_VARIANT_H */
