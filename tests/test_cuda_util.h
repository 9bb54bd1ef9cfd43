/*
 * test_cuda_util.h - shared by the CUDA tests (compiled only in CUDA
 * builds): whether a device is usable, and device buffers with poison and
 * guard elements for the kernel tests.
 *
 *     CUDA_REQUIRE();                                 // SKIPs with the reason
 *     void *x = dbuf_upload(host, n, KCUDA_F16);       // host FP32 -> device
 *     void *y = dbuf_poisoned(n, KCUDA_F16);           // NaN, plus a guard
 *     ... kernel ...
 *     dbuf_download(out, y, n, KCUDA_F16);             // -> FP32; false if the guard changed
 */
#ifndef TEST_CUDA_UTIL_H
#define TEST_CUDA_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/cuda/kcuda.h"
#include "runtime/image/dataset.h"
#include "runtime/rt_model.h"
#include "runtime/rt_status.h"
#include "test.h"

/* NULL when a CUDA device usable by this build is present (it is then the
 * current device, kernels initialised); else why not. */
const char *cuda_test_unusable(void);

#define CUDA_REQUIRE()                                           \
    do {                                                         \
        const char *why_ = cuda_test_unusable();                 \
        if (why_)                                                \
            SKIP("no usable CUDA device: %s", why_);             \
    } while (0)

/* Device buffers of n elements of type t, freed with dbuf_free. Uploads take
 * FP32 host data (rounded to half for F16). Poisoned buffers are all-ones
 * bytes (NaN in both types); every buffer is followed by DBUF_GUARD
 * poisoned elements, so any of them can be an output. */
#define DBUF_GUARD 64
void *dbuf_upload(const float *host, int64_t n, enum kcuda_dtype t);
void *dbuf_poisoned(int64_t n, enum kcuda_dtype t);
/* Copies n elements back as FP32 after a device synchronisation; false when
 * a CUDA call failed or a guard element past n was written. */
bool dbuf_download(float *host, const void *dev, int64_t n, enum kcuda_dtype t);
void dbuf_free(void *dev);

/* Rounds x to the nearest half in place (what an F16 kernel sees). */
void round_to_half(float *x, int64_t n);

/* Host buffers of n floats (at least one), aborting when memory runs out:
 * uniform in [lo, hi) (half-rounded for F16: what the kernel sees), or
 * uninitialised. */
float *rand_buf(int64_t n, float lo, float hi, enum kcuda_dtype t);
float *out_buf(int64_t n);

/* The GEMM kernel sets a conv2d / linear case runs through, as the sm_count
 * kcuda_gemm_plan weighs: the baseline tile by columns (0), the device's
 * choice (its SM count), and a GPU so wide that every GEMM leaves SMs idle,
 * so split-K (rows <= 64) or the smallest tile that divides the packing runs
 * whatever the device. gset_sms(ks) is that count. */
enum { GSET_BASELINE, GSET_DEVICE, GSET_WIDE, GSET_COUNT };
extern const char *const GSET_NAME[GSET_COUNT];
#define GSET_WIDE_SMS (1 << 20)
int gset_sms(int ks);

/* After a launch into dev (n values): the launch succeeded and dev matches
 * ref (cuda_check_close). */
bool check_launch(const char *what, const void *dev, const float *ref, int64_t n, enum kcuda_dtype t,
                  cudaError_t launch);
/* check_launch with the error measured against max |scale| (cuda_check_scaled). */
bool check_launch_scaled(const char *what, const void *dev, const float *ref, const float *scale, int64_t n,
                         enum kcuda_dtype t, cudaError_t launch);
/* The same launch made twice, into dev and again (fresh poisoned buffers):
 * the outputs are the same bit for bit (split-K adds its partial sums in a
 * fixed order). */
bool check_repeat(const char *what, const void *dev, const void *again, int64_t n, enum kcuda_dtype t,
                  cudaError_t launch);

/* Checks out (n values of an op in type t) against ref: every value written
 * and finite, relative error within 1e-5 (F32) or 2e-3 (F16). Prints the
 * error with `what`. */
bool cuda_check_close(const char *what, const float *out, const float *ref, int64_t n, enum kcuda_dtype t);
/* cuda_check_close with the error over max |scale| (test_scaled_error): a
 * conv or linear layer's pre-activation reference. */
bool cuda_check_scaled(const char *what, const float *out, const float *ref, const float *scale, int64_t n,
                       enum kcuda_dtype t);

/* The Fashion-MNIST test set (FASHION_MNIST_DIR, else Debian's folder),
 * its first INFERD_TEST_IMAGES images when that is set (gpu_check.sh quick
 * runs a few hundred); false with why when it cannot be read. */
bool cuda_test_dataset(struct rt_dataset *ds, char *why, size_t cap);

/* The images the model tests run a model on, through the model's own
 * preprocessing (cfg->pre): the Fashion-MNIST test set (cuda_test_dataset)
 * for a model that reads one gray channel, else CUDA_TEST_PICTURES random
 * RGB pictures (noise from the test's seed, 256x256: the ImageNet models
 * have no test set here, and their weights are random too). */
#define CUDA_TEST_PICTURES 10
struct cuda_test_inputs {
    int count;
    int64_t in_elems;
    float *x;                /* count * in_elems */
    const uint8_t *labels;   /* count, or NULL for the random pictures */
    struct rt_dataset ds;    /* the Fashion-MNIST set, when used */
};
bool cuda_test_inputs_make(const struct rt_model_config *cfg, struct cuda_test_inputs *in, char *why, size_t cap);
void cuda_test_inputs_free(struct cuda_test_inputs *in);

#endif /* TEST_CUDA_UTIL_H */
