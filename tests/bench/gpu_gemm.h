/*
 * gpu_gemm.h - bench_gpu's GEMM tables (tests/bench/gpu_gemm.c), at
 * 4096^3 and at the GEMM shapes of the four models' layers at batch 256:
 *
 *   FP16: our kcuda_linear against cuBLAS (cublasGemmEx, FP16 in and out,
 *         FP32 accumulation), TFLOP/s and their ratio;
 *   INT8: our IMMA kernel (kcuda_linear_q8_mma, sm_80 and later), our dp4a
 *         baseline (kcuda_linear_q8) and cuBLAS INT8 (cublasGemmEx, s8 in,
 *         s32 out), TOP/s, against each other and our FP16 of the first
 *         table; the three int32 outputs compared bit for bit.
 *
 * cuBLAS is opened with dlopen (libcublas.so.13 or .12), as the GPU machine
 * provides it.
 */
#ifndef GPU_GEMM_H
#define GPU_GEMM_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

/* A failed CUDA call in the benchmark: the call and the error, then exit. */
#define GPU_CHECK(call)                                                                                \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));    \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

#define GPU_MAX_REPEATS 31

/* Prints both tables for the current device (kcuda_init done), each figure
 * the median of `repeats` timed loops (1 .. GPU_MAX_REPEATS). Returns our
 * FP16 TFLOP/s at 4096^3 over cuBLAS's; 0 when cuBLAS cannot be loaded
 * (the tables are then left out, with a line saying so). */
double gpu_gemm_tables(const struct cudaDeviceProp *prop, int repeats);

#endif /* GPU_GEMM_H */
