/*
 * dataset.h - the Fashion-MNIST IDX files (gzip-compressed or plain), for
 * evaluation, calibration, tests and the load generator.
 *
 *     struct rt_dataset ds;
 *     rt_dataset_load_fashion_mnist("test", &ds, &err);
 *     // ds.count images of ds.rows x ds.cols bytes at ds.images + i * rows * cols
 *     rt_dataset_free(&ds);
 */
#ifndef RT_DATASET_H
#define RT_DATASET_H

#include <stdint.h>

#include "runtime/rt_status.h"

/* Debian's folder (package dataset-fashion-mnist); the environment variable
 * FASHION_MNIST_DIR names another, as models/fashion_mnist.py reads it (the
 * GPU bundle carries its own copy). */
#define RT_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

struct rt_dataset {
    int count, rows, cols;
    uint8_t *images;         /* count * rows * cols */
    uint8_t *labels;         /* count, or NULL when no label file was given */
};

/* labels_path may be NULL. */
enum rt_status rt_dataset_load_idx(const char *images_path, const char *labels_path,
                                   struct rt_dataset *out, struct rt_error *err);
/* "test" or "train" split of Fashion-MNIST from FASHION_MNIST_DIR, else
 * RT_FASHION_MNIST_DIR. */
enum rt_status rt_dataset_load_fashion_mnist(const char *split, struct rt_dataset *out,
                                             struct rt_error *err);
void rt_dataset_free(struct rt_dataset *ds);

#endif /* RT_DATASET_H */
