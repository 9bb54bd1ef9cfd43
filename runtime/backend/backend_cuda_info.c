/*
 * backend_cuda_info.c - backend/backend_cuda_info.h: NVML through dlopen, cudaMemGetInfo
 * as the fallback for memory. Built with the CUDA backend only (its
 * device_info answers /metrics through rt_backend_device_info).
 *
 * NVML numbers devices in PCI order, CUDA fastest first (and honours
 * CUDA_VISIBLE_DEVICES): a device is matched by its PCI bus id.
 */
#include "runtime/backend/backend_cuda_info.h"

#include <dlfcn.h>
#include <pthread.h>
#include <cuda_runtime_api.h>
#include <stddef.h>

/* The few NVML declarations used (nvml.h is not needed to build). */
typedef struct nvml_device *nvml_device_t;
struct nvml_memory {
    unsigned long long total, free, used;
};
struct nvml_utilization {
    unsigned int gpu, memory;
};

static struct {
    pthread_once_t once;
    bool ok;
    int (*init)(void);
    int (*by_pci)(const char *, nvml_device_t *);
    int (*memory)(nvml_device_t, struct nvml_memory *);
    int (*utilization)(nvml_device_t, struct nvml_utilization *);
} nvml = {.once = PTHREAD_ONCE_INIT};

static void nvml_open(void)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
    *(void **)&nvml.init = dlsym(lib, "nvmlInit_v2");
    *(void **)&nvml.by_pci = dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&nvml.memory = dlsym(lib, "nvmlDeviceGetMemoryInfo");
    *(void **)&nvml.utilization = dlsym(lib, "nvmlDeviceGetUtilizationRates");
    nvml.ok = nvml.init && nvml.by_pci && nvml.memory && nvml.utilization &&
              nvml.init() == 0;
    if (!nvml.ok)
        dlclose(lib);   /* NVML stays loaded for the process's life when it works */
}

static bool nvml_device(int device, nvml_device_t *out)
{
    pthread_once(&nvml.once, nvml_open);
    if (!nvml.ok || device < 0)
        return false;
    char bus[32];
    if (cudaDeviceGetPCIBusId(bus, (int)sizeof(bus), device) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return nvml.by_pci(bus, out) == 0;
}

int rt_gpu_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

bool rt_gpu_info(int device, uint64_t *used_bytes, uint64_t *total_bytes, double *util_percent)
{
    nvml_device_t dev;
    struct nvml_memory mem;
    if (nvml_device(device, &dev) && nvml.memory(dev, &mem) == 0) {
        struct nvml_utilization u;
        *used_bytes = mem.used;
        *total_bytes = mem.total;
        *util_percent = nvml.utilization(dev, &u) == 0 ? (double)u.gpu : -1.0;
        return true;
    }
    /* per-thread current device: this thread only, the backend's are untouched */
    size_t free_b, total_b;
    if (cudaSetDevice(device) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
        *used_bytes = total_b - free_b;
        *total_bytes = total_b;
        *util_percent = -1.0;
        return true;
    }
    (void)cudaGetLastError();
    return false;
}
