/*
 * backend_cuda_nvtx.c - NVTX ranges around timed steps, so Nsight Systems
 * shows layer names. The library is opened with dlopen on first use:
 * libnvtx3interop (CUDA 12.8 and later) or the older libnvToolsExt, both
 * of which forward to the tool Nsight injects. Neither is needed to build
 * or to run; without them the calls do nothing.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "runtime/backend/backend_cuda_impl.h"

typedef int (*nvtx_push_fn)(const char *message);
typedef int (*nvtx_pop_fn)(void);

static pthread_once_t nvtx_once = PTHREAD_ONCE_INIT;
static nvtx_push_fn nvtx_push;
static nvtx_pop_fn nvtx_pop;

static void nvtx_load(void)
{
    static const char *const LIBS[] = {"libnvtx3interop.so.1", "libnvToolsExt.so.1"};
    for (size_t i = 0; i < sizeof(LIBS) / sizeof(LIBS[0]); i++) {
        void *lib = dlopen(LIBS[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            continue;
        /* (POSIX: a dlsym result converts to a function pointer) */
        nvtx_push_fn push = (nvtx_push_fn)dlsym(lib, "nvtxRangePushA");
        nvtx_pop_fn pop = (nvtx_pop_fn)dlsym(lib, "nvtxRangePop");
        if (push && pop) {
            nvtx_push = push;   /* the library stays open for the process's life */
            nvtx_pop = pop;
            return;
        }
        dlclose(lib);
    }
}

void cuda_nvtx_push(const char *name)
{
    pthread_once(&nvtx_once, nvtx_load);
    if (nvtx_push)
        nvtx_push(name);
}

void cuda_nvtx_pop(void)
{
    pthread_once(&nvtx_once, nvtx_load);
    if (nvtx_pop)
        nvtx_pop();
}
