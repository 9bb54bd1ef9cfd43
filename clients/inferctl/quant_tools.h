/*
 * quant_tools.h - what inferctl's precision commands share (quantize,
 * convert, accuracy): calibration over a fixed subset of the Fashion-MNIST
 * training set, writing a model folder at another precision, and top-1
 * predictions over the test set.
 *
 * Every helper prints why it failed (on stderr) and returns false.
 */
#ifndef QUANT_TOOLS_H
#define QUANT_TOOLS_H

#include <stdint.h>

#include "image_source.h"
#include "inferctl.h"
#include "runtime/precision/calib.h"

/* Calibration images are the first N of the training set (or of the
 * user's folder) shuffled with this seed (xorshift64*, Fisher-Yates): a
 * fixed subset, never test images. */
#define CTL_CALIB_SEED 0x9e3779b97f4a7c15ull
#define CTL_CALIB_DEFAULT 1000

/* An FP32 model loaded without fusion and its activation statistics. */
struct ctl_calibration {
    struct rt_backend *backend;
    struct rt_model *model;
    char *json;                 /* the source model.json */
    size_t json_len;
    struct rt_calib stats;
    int images;
};

/* Runs the FP32 model in dir over `images` calibration images (two passes:
 * maxima, then histograms), with a progress bar when stderr is a terminal:
 * image files under calib_dir (any layout, labels unused), or Fashion-MNIST's
 * training split when calib_dir is NULL. */
bool ctl_calibrate(const char *dir, int images, const char *calib_dir, int threads, struct ctl_calibration *c);
void ctl_calibration_free(struct ctl_calibration *c);

/* Writes the INT8 model folder out_dir (created when missing) from the
 * calibration with the given method. */
bool ctl_write_int8(const struct ctl_calibration *c, enum rt_calib_method m, double percentile, const char *out_dir);

/* Writes out_dir as the FP32 model in dir stored at precision prec (fp32 or
 * fp16: batch norms folded, F16 weights for fp16). */
bool ctl_convert(const char *dir, enum rt_precision prec, const char *out_dir);

/* pred[i] = the top-1 class of test image i by the model in dir (CPU). */
bool ctl_predict(const char *dir, const struct ctl_images *test, int threads, int *pred);

/* Top-1 accuracy (%) of pred against test's labels, and how many
 * predictions differ between a and b. */
double ctl_top1(const struct ctl_images *test, const int *pred);
int ctl_disagree(const int *a, const int *b, int n);

/* False (with a message) when out is the folder src itself: writing over
 * the source folder would destroy the model being read. */
bool ctl_distinct_dirs(const char *src, const char *out);

/* Replaces "-o" by "--output" in a copy of argv (the commands take both). */
char **ctl_output_alias(int argc, char **argv);

#endif /* QUANT_TOOLS_H */
