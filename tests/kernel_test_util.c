/* kernel_test_util.c - shared helpers of the CPU kernel tests (see the header). */
#include "kernel_test_util.h"
#include "kernels/ref/kref.h"

#include "runtime/rt_status.h"
#include "test.h"

void pools_open(struct pools *ps)
{
    ps->p[0] = NULL;
    for (int t = 1; t <= 3; t++) {
        ps->p[t] = kcpu_threads_create(t);
        RT_ASSERT(ps->p[t]);
    }
}

void pools_close(struct pools *ps)
{
    for (int t = 1; t <= 3; t++)
        kcpu_threads_free(ps->p[t]);
}

struct kcpu_threads *pick_pool(const struct pools *ps)
{
    return ps->p[test_rand_int(0, 3)];
}

void restore_isa(const int *saved)
{
    kcpu_isa_set((enum kcpu_isa)*saved);
}

int conv_out(int in, int pad_lead, int pad_trail, int k, int dil, int stride)
{
    int span = in + pad_lead + pad_trail - dil * (k - 1) - 1;
    return span < 0 ? 0 : span / stride + 1;
}

void test_to_nhwc(const void *src, void *dst, int64_t n, int64_t c, int64_t hw, size_t esize)
{
    const uint8_t *s = src;
    uint8_t *d = dst;
    for (int64_t i = 0; i < n; i++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t k = 0; k < hw; k++)
                memcpy(d + ((i * hw + k) * c + ch) * esize, s + ((i * c + ch) * hw + k) * esize, esize);
}

int64_t binary_operand_strides(const struct k_binary *p, unsigned ones, int missing, int64_t *stride)
{
    int64_t step = 1;
    for (int d = p->rank - 1; d >= 0; d--) {
        bool one = d < missing || (ones >> d & 1u);
        stride[d] = one ? 0 : step;
        step *= one ? 1 : p->dims[d];
    }
    return step;
}

int64_t first_float_difference(const float *got, const float *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!(got[i] == want[i] || (isnan(got[i]) && isnan(want[i]))))
            return i;
    return -1;
}

void ref_conv2d_and_pre(const struct k_conv2d *p, const float *x, const float *w, const float *bias,
                        const float *res, float *want, float *pre)
{
    struct k_conv2d no_act = *p;
    no_act.act = K_ACT_NONE;
    kref_conv2d_f32(p, x, w, bias, res, want);
    kref_conv2d_f32(&no_act, x, w, bias, res, pre);
}

void ref_linear_and_pre(const struct k_linear *p, const float *x, const float *w, const float *bias,
                        const float *res, float *want, float *pre)
{
    struct k_linear no_act = *p;
    no_act.act = K_ACT_NONE;
    kref_linear_f32(p, x, w, bias, res, want);
    kref_linear_f32(&no_act, x, w, bias, res, pre);
}
