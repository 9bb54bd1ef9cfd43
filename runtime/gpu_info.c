/*
 * gpu_info.c - rt_gpu_info.h: NVML through dlopen, cudaMemGetInfo as the
 * fallback for memory in CUDA builds. Compiled in every build (the server
 * calls it whatever the backend), so its name carries no "cuda".
 *
 * NVML numbers devices in PCI order, CUDA fastest first (and honours
 * CUDA_VISIBLE_DEVICES): in CUDA builds a device is matched by its PCI bus
 * id; CPU-only builds use NVML's order.
 */
#include "rt_gpu_info.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#ifdef INFERD_CUDA
#include <cuda_runtime_api.h>
#endif

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
    int (*count)(unsigned int *);
    int (*by_index)(unsigned int, nvml_device_t *);
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
    *(void **)&nvml.count = dlsym(lib, "nvmlDeviceGetCount_v2");
    *(void **)&nvml.by_index = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)&nvml.by_pci = dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&nvml.memory = dlsym(lib, "nvmlDeviceGetMemoryInfo");
    *(void **)&nvml.utilization = dlsym(lib, "nvmlDeviceGetUtilizationRates");
    nvml.ok = nvml.init && nvml.count && nvml.by_index && nvml.by_pci && nvml.memory && nvml.utilization &&
              nvml.init() == 0;
    if (!nvml.ok)
        dlclose(lib);   /* NVML stays loaded for the process's life when it works */
}

static bool nvml_device(int device, nvml_device_t *out)
{
    pthread_once(&nvml.once, nvml_open);
    if (!nvml.ok || device < 0)
        return false;
#ifdef INFERD_CUDA
    char bus[32];
    if (cudaDeviceGetPCIBusId(bus, (int)sizeof(bus), device) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return nvml.by_pci(bus, out) == 0;
#else
    return nvml.by_index((unsigned)device, out) == 0;
#endif
}

int rt_gpu_count(void)
{
#ifdef INFERD_CUDA
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
#else
    unsigned n = 0;
    pthread_once(&nvml.once, nvml_open);
    return nvml.ok && nvml.count(&n) == 0 ? (int)n : 0;
#endif
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
#ifdef INFERD_CUDA
    /* per-thread current device: this thread only, the backend's are untouched */
    size_t free_b, total_b;
    if (cudaSetDevice(device) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
        *used_bytes = total_b - free_b;
        *total_bytes = total_b;
        *util_percent = -1.0;
        return true;
    }
    (void)cudaGetLastError();
#endif
    return false;
}
