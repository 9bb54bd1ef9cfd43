/* kernel_test_util.c - shared helpers of the CPU kernel tests (see the header). */
#include "kernel_test_util.h"

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
