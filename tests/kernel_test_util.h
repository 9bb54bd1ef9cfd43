/*
 * kernel_test_util.h - what the CPU kernel tests share: the thread pools
 * every op runs under, iteration over the instruction sets this CPU has,
 * and the output length of a sliding window.
 */
#ifndef KERNEL_TEST_UTIL_H
#define KERNEL_TEST_UTIL_H

#include "kernels/cpu/kcpu.h"
#include "kernels/cpu/kcpu_impl.h"

/* p[0] is NULL (the calling thread only), p[t] a pool of t threads. */
struct pools {
    struct kcpu_threads *p[4];
};

void pools_open(struct pools *ps);
void pools_close(struct pools *ps);
/* One of the four, at random. */
struct kcpu_threads *pick_pool(const struct pools *ps);

/* Cleanup handler: puts back the instruction set saved in *saved. */
void restore_isa(const int *saved);

/* Iterates isa over every instruction set the CPU has. The run-time choice
 * comes back when the loop ends, also through a failed assertion's return,
 * so later tests run under the ISA they expect. */
#define FOR_EACH_ISA(isa)                                                                \
    for (int saved_isa_ __attribute__((cleanup(restore_isa))) = (int)kcpu_isa(),         \
             isa = KCPU_ISA_SCALAR;                                                      \
         isa <= (int)kcpu_isa_hardware() && kcpu_isa_set((enum kcpu_isa)isa) == 0; \
         isa++)

/* Operand strides of binary op p for per-sample dims where the operand has
 * size 1 along the dims in `ones` (bit mask) and lacks the leading
 * `missing` dims; returns the operand's elements per sample. */
int64_t binary_operand_strides(const struct k_binary *p, unsigned ones, int missing, int64_t *stride);

/* kref's convolution or linear layer into want, and again without its
 * activation into pre: the values test_scaled_error measures against. */
void ref_conv2d_and_pre(const struct k_conv2d *p, const float *x, const float *w, const float *bias,
                        const float *res, float *want, float *pre);
void ref_linear_and_pre(const struct k_linear *p, const float *x, const float *w, const float *bias,
                        const float *res, float *want, float *pre);

/* Index of the first of n floats where got and want differ (NaN equal to
 * NaN, whatever its payload), or -1. */
int64_t first_float_difference(const float *got, const float *want, int64_t n);

/* Output length of a convolution window along one axis (0 if none fits). */
int conv_out(int in, int pad_lead, int pad_trail, int k, int dil, int stride);

/* NCHW -> NHWC, elements of esize bytes: each of n images' [c][hw]
 * matrix transposed to [hw][c]. Swapping c and hw turns NHWC back. */
void test_to_nhwc(const void *src, void *dst, int64_t n, int64_t c, int64_t hw, size_t esize);

#endif /* KERNEL_TEST_UTIL_H */
