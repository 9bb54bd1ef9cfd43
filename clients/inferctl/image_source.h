/*
 * image_source.h - the images inferctl's offline commands run a model on
 * (eval, quantize, accuracy): Fashion-MNIST from the IDX files, or the
 * user's own folder of image files.
 *
 * A folder in the ImageFolder layout (DIR/CLASS/IMAGE: png, jpg, pgm...) is
 * labelled: each sub-folder names a class of the model's labels (matched
 * ignoring case, and '_' / '-' / ' ' alike). A folder of images without
 * sub-folders is unlabelled (for calibration). Files are decoded when an
 * image is asked for, through the model's whole preprocessing (resize,
 * inversion, normalisation), as the server does; Fashion-MNIST images are
 * already upright 28x28, so only normalised (and resized to the model's
 * input when it differs).
 *
 *     struct ctl_images src;
 *     if (ctl_images_folder("photos", m.cfg, true, &src)) {
 *         for (int i = 0; i < src.count; i++)
 *             ctl_images_preprocess(&src, i, &m.cfg->pre, x);   // label: src.labels[i]
 *         ctl_images_free(&src);
 *     }
 */
#ifndef CTL_IMAGE_SOURCE_H
#define CTL_IMAGE_SOURCE_H

#include <stdbool.h>

#include "runtime/image/dataset.h"
#include "runtime/rt_model.h"

struct ctl_images {
    int count;
    int *labels;              /* count class indices of the model, or NULL (unlabelled) */
    struct rt_dataset ds;     /* Fashion-MNIST; ds.images NULL for a folder */
    char **paths;             /* a folder's files, count of them */
};

/* Fashion-MNIST's split ("test" or "train"); when cfg is given, refuses a
 * model whose outputs are not its 10 classes (a clear error, not 0%). */
bool ctl_images_fashion_mnist(const char *split, const struct rt_model_config *cfg, struct ctl_images *out);

/* The image files under dir: labelled (ImageFolder, every sub-folder a
 * class of cfg's labels) when need_labels, else every image file in dir
 * and its sub-folders. Prints why and returns false on failure. */
bool ctl_images_folder(const char *dir, const struct rt_model_config *cfg, bool need_labels, struct ctl_images *out);

/* Image i through pre into dst (the model's input sample). */
bool ctl_images_preprocess(const struct ctl_images *src, int i, const struct rt_preprocess *pre, float *dst);

void ctl_images_free(struct ctl_images *src);

/* Decodes one image file and preprocesses it into dst; prints why not. */
bool ctl_image_file_preprocess(const char *path, const struct rt_preprocess *pre, float *dst);

#endif /* CTL_IMAGE_SOURCE_H */
