/*
 * file_read.h - a whole small file into memory, for the model files read
 * at load (model.json, labels, model.onnx): a regular file of at most max
 * bytes, or a clear error naming it by label.
 */
#ifndef FILE_READ_H
#define FILE_READ_H

#include <stddef.h>

#include "runtime/rt_status.h"

/* *out (malloc'd, NUL-terminated) and *len on success. RT_ERR_NOT_FOUND
 * when path does not exist, RT_ERR_IO when it cannot be read, and
 * RT_ERR_BAD_MODEL when it is no regular file or larger than max. On
 * failure *out is NULL and *len 0. */
enum rt_status rt_read_file(const char *path, const char *label, size_t max, char **out, size_t *len,
                            struct rt_error *err);

#endif /* FILE_READ_H */
