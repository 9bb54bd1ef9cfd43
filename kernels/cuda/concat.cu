/*
 * concat.cu - concatenation along one axis: inputs [outer, len_i, inner]
 * into y [outer, sum(len), inner], one launch for all inputs (their
 * pointers and offsets travel in the kernel's parameter block).
 */
#include "common.cuh"

namespace kcuda {

struct ConcatArgs {
    const void *in[KCUDA_CONCAT_MAX];
    int64_t run[KCUDA_CONCAT_MAX];    /* len_i * inner: contiguous elements per outer index */
    int64_t start[KCUDA_CONCAT_MAX];  /* where input i's run begins inside a row of y */
    int64_t row;                      /* sum(len) * inner */
    int64_t outer;
    int count;
};

template <typename T> __global__ void concat_kernel(ConcatArgs a, T *y)
{
    int64_t total = a.outer * a.row;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t o = i / a.row, r = i % a.row;
        int k = 0;
        while (k + 1 < a.count && r >= a.start[k + 1])
            k++;
        y[i] = static_cast<const T *>(a.in[k])[o * a.run[k] + r - a.start[k]];
    }
}

} // namespace kcuda

using namespace kcuda;

extern "C" cudaError_t kcuda_concat(const struct k_concat *p, enum kcuda_dtype t, const void *const *inputs,
                                    const int64_t *lens, void *y, cudaStream_t stream)
{
    if (p->count < 1 || p->count > KCUDA_CONCAT_MAX)
        return cudaErrorInvalidValue;
    ConcatArgs a = {};
    a.count = p->count;
    a.outer = p->outer;
    for (int i = 0; i < p->count; i++) {
        a.in[i] = inputs[i];
        a.run[i] = lens[i] * p->inner;
        a.start[i] = a.row;
        a.row += a.run[i];
    }
    int64_t total = a.outer * a.row;
    if (total <= 0)
        return cudaSuccess;
    return dispatch_dtype(t, [&](auto *tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        concat_kernel<T><<<grid_for(total, ELEMWISE_THREADS), ELEMWISE_THREADS, 0, stream>>>(a, static_cast<T *>(y));
        return cudaGetLastError();
    });
}
