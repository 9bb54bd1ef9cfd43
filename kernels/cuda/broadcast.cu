/*
 * broadcast.cu - the element-wise ops ONNX models bring beside the
 * activations: binary operations with numpy broadcasting (k_binary: add,
 * sub, mul, div, max, min, prelu, pow; EfficientNet's and MobileNetV3's
 * squeeze-excitation products) and functions of one operand (k_unary: abs,
 * exp, elu, hard sigmoid, ...). One thread per output element in a
 * grid-stride loop, arithmetic in float, rounded once to the tensor's type,
 * the formulas of kernels/ref (there in double). A binary op is one float
 * operation (pow: in double, rounded once), so FP32 results are the CPU's
 * and the reference's bit for bit; the unary functions are float libm's,
 * within 1e-5.
 *
 * Each operand is addressed by its stride per output dimension (0 along a
 * broadcast one) and per sample (0 for a constant every sample shares), as
 * kref_binary walks them. The math is host and device code: the host runs
 * the same functions over a whole tensor (kcuda_binary_host,
 * kcuda_unary_host), so the indexing and formulas are checked without a GPU.
 */
#include "common.cuh"

namespace kcuda {

__host__ __device__ __forceinline__ float bin_apply(enum k_binop op, float a, float b)
{
    switch (op) {
    case K_BIN_ADD: return a + b;
    case K_BIN_SUB: return a - b;
    case K_BIN_MUL: return a * b;
    case K_BIN_DIV: return a / b;
    /* NaN propagates, as numpy's maximum / minimum (and ONNX Max / Min) do */
    case K_BIN_MAX: return a != a || b != b ? a + b : a > b ? a : b;
    case K_BIN_MIN: return a != a || b != b ? a + b : a < b ? a : b;
    case K_BIN_PRELU: return a < 0.0f ? a * b : a;
    case K_BIN_POW: return (float)pow((double)a, (double)b);   /* as the CPU: one rounding */
    default: return NAN;
    }
}

/* Output element i (over all samples): the elements of a and b it reads. */
__host__ __device__ __forceinline__ void bin_offsets(const struct k_binary &p, int64_t per_sample, int64_t i,
                                                     int64_t *ao, int64_t *bo)
{
    const int64_t s = i / per_sample;
    int64_t rest = i - s * per_sample, a = s * p.a_sample, b = s * p.b_sample;
    for (int d = p.rank - 1; d >= 0; d--) {
        const int64_t idx = rest % p.dims[d];
        rest /= p.dims[d];
        a += idx * p.a_stride[d];
        b += idx * p.b_stride[d];
    }
    *ao = a;
    *bo = b;
}

__host__ __device__ __forceinline__ float un_apply(const struct k_unary &p, float x)
{
    const float a = p.alpha, b = p.beta;
    switch (p.op) {
    case K_UN_ABS: return fabsf(x);
    case K_UN_NEG: return -x;
    case K_UN_EXP: return expf(x);
    case K_UN_LOG: return logf(x);
    case K_UN_SQRT: return sqrtf(x);
    case K_UN_RECIPROCAL: return 1.0f / x;
    case K_UN_FLOOR: return floorf(x);
    case K_UN_CEIL: return ceilf(x);
    case K_UN_ERF: return erff(x);
    case K_UN_SOFTPLUS: return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));   /* no overflow for large x */
    case K_UN_SOFTSIGN: return x / (1.0f + fabsf(x));
    case K_UN_ELU: return x < 0.0f ? a * expm1f(x) : x;
    case K_UN_SELU: return b * (x <= 0.0f ? a * expm1f(x) : x);
    case K_UN_CELU: return x > 0.0f ? x : a * expm1f(x / a);
    case K_UN_LEAKY_RELU: return x < 0.0f ? a * x : x;
    case K_UN_HARD_SIGMOID: return fminf(fmaxf(a * x + b, 0.0f), 1.0f);
    case K_UN_THRESHOLDED_RELU: return x > a ? x : 0.0f;
    default: return NAN;
    }
}

template <typename T>
__global__ void binary_kernel(struct k_binary p, int64_t per_sample, int64_t count, const T *a, const T *b, T *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ao, bo;
        bin_offsets(p, per_sample, i, &ao, &bo);
        y[i] = from_f<T>(bin_apply(p.op, to_f(a[ao]), to_f(b[bo])));
    }
}

template <typename T> __global__ void unary_kernel(struct k_unary p, const T *x, T *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.count; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = from_f<T>(un_apply(p, to_f(x[i])));
}

static int64_t per_sample_of(const struct k_binary *p)
{
    int64_t n = 1;
    for (int d = 0; d < p->rank; d++)
        n *= p->dims[d];
    return n;
}

} // namespace kcuda

using namespace kcuda;

#define GRID(count) grid_for(count, ELEMWISE_THREADS), ELEMWISE_THREADS, 0, stream

extern "C" cudaError_t kcuda_binary(const struct k_binary *p, enum kcuda_dtype t, const void *a, const void *b,
                                    void *y, cudaStream_t stream)
{
    if (p->rank < 0 || p->rank > K_BINARY_MAX_DIMS || (unsigned)p->op >= K_BIN_COUNT)
        return cudaErrorInvalidValue;
    const int64_t per_sample = per_sample_of(p), count = per_sample * p->n;
    if (count <= 0)
        return cudaSuccess;
    return dispatch_dtype(t, [&](auto *tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        binary_kernel<T><<<GRID(count)>>>(*p, per_sample, count, static_cast<const T *>(a),
                                          static_cast<const T *>(b), static_cast<T *>(y));
        return cudaGetLastError();
    });
}

extern "C" cudaError_t kcuda_unary(const struct k_unary *p, enum kcuda_dtype t, const void *x, void *y,
                                   cudaStream_t stream)
{
    if ((unsigned)p->op >= K_UN_COUNT)
        return cudaErrorInvalidValue;
    if (p->count <= 0)
        return cudaSuccess;
    return dispatch_dtype(t, [&](auto *tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        unary_kernel<T><<<GRID(p->count)>>>(*p, static_cast<const T *>(x), static_cast<T *>(y));
        return cudaGetLastError();
    });
}

extern "C" void kcuda_binary_host(const struct k_binary *p, const float *a, const float *b, float *y)
{
    const int64_t per_sample = per_sample_of(p), count = per_sample * p->n;
    for (int64_t i = 0; i < count; i++) {
        int64_t ao, bo;
        bin_offsets(*p, per_sample, i, &ao, &bo);
        y[i] = bin_apply(p->op, a[ao], b[bo]);
    }
}

extern "C" void kcuda_unary_host(const struct k_unary *p, const float *x, float *y)
{
    for (int64_t i = 0; i < p->count; i++)
        y[i] = un_apply(*p, x[i]);
}
