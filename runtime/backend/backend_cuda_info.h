/*
 * backend_cuda_info.h - GPU memory and utilisation (backend_cuda_info.c), behind
 * the CUDA backend's rt_backend_device_info. CUDA builds only.
 *
 *     int n = rt_gpu_count();
 *     for (int d = 0; d < n; d++) {
 *         uint64_t used, total;
 *         double util;
 *         if (rt_gpu_info(d, &used, &total, &util))
 *             ... nv_gpu_memory_used_bytes{gpu="d"} used ...; util < 0: unknown
 *     }
 *
 * Device indices are CUDA ordinals (as rt_backend_options.device). NVML
 * (libnvidia-ml.so.1, part of the driver) is opened with dlopen on first use;
 * without it, memory comes from cudaMemGetInfo and utilisation is unknown.
 * Thread-safe.
 */
#ifndef RT_BACKEND_CUDA_INFO_H
#define RT_BACKEND_CUDA_INFO_H

#include <stdbool.h>
#include <stdint.h>

/* Number of GPUs visible to this process; 0 when none or no driver. */
int rt_gpu_count(void);

/* Memory in use and in total (bytes) and utilisation in percent over the
 * driver's last sample period (-1 when unknown) of device `device`. False,
 * leaving the outputs untouched, when nothing is known about it. */
bool rt_gpu_info(int device, uint64_t *used_bytes, uint64_t *total_bytes, double *util_percent);

#endif /* RT_BACKEND_CUDA_INFO_H */
