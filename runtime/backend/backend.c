/* backend.c - picking a backend and asking it what it is (rt_model.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu/kcpu.h"
#include "runtime/backend/backend.h"
#include "runtime/rt_model.h"

/* Indexed by enum rt_backend_kind. */
static const char *const KIND_NAMES[RT_BACKEND_KIND_COUNT] = {"auto", "cpu", "cuda"};

const char *rt_backend_kind_name(enum rt_backend_kind kind)
{
    return (unsigned)kind < RT_BACKEND_KIND_COUNT ? KIND_NAMES[kind] : NULL;
}

enum rt_status rt_backend_kind_parse(const char *text, enum rt_backend_kind *out, struct rt_error *err)
{
    char valid[64] = "";
    for (int k = 0; k < RT_BACKEND_KIND_COUNT; k++) {
        if (strcmp(text, KIND_NAMES[k]) == 0) {
            *out = (enum rt_backend_kind)k;
            return RT_OK;
        }
        snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s", k ? ", " : "", KIND_NAMES[k]);
    }
    return rt_error_set(err, RT_ERR_INVALID, "unknown backend '%.64s' (valid: %s)", text, valid);
}

/* The environment variables that predate the options (tuning scripts and
 * docs/performance.md recipes set them) fill what the caller left unset;
 * this is the only place that reads them. Then every value is checked, so a
 * bad one is refused whichever backend the kind picks. */
static enum rt_status complete_options(struct rt_backend_options *o, struct rt_error *err)
{
    const char *v = getenv("INFERD_CPU_BATCH_CHUNK");
    if (o->cpu_batch_chunk == 0 && v && *v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 1 || n > RT_MAX_BATCH)
            return rt_error_set(err, RT_ERR_INVALID, "INFERD_CPU_BATCH_CHUNK '%.32s' is not in 1..%d", v,
                                RT_MAX_BATCH);
        o->cpu_batch_chunk = (int)n;
    }
    if ((!o->cpu_isa || !*o->cpu_isa) && (v = getenv("INFERD_CPU_ISA")) && *v)
        o->cpu_isa = v;
    if (o->cuda_graphs == RT_CUDA_GRAPHS_AUTO && (v = getenv("INFERD_CUDA_GRAPHS")) && *v)
        o->cuda_graphs = strcmp(v, "0") == 0 ? RT_CUDA_GRAPHS_OFF : RT_CUDA_GRAPHS_ON;
    if (o->cuda_kernels == RT_CUDA_KERNELS_AUTO && (v = getenv("INFERD_CUDA_KERNELS")) && *v) {
        if (strcmp(v, "baseline") == 0)
            o->cuda_kernels = RT_CUDA_KERNELS_BASELINE;
        else if (strcmp(v, "new") == 0)
            o->cuda_kernels = RT_CUDA_KERNELS_NEW;
        else if (strcmp(v, "auto") != 0)
            return rt_error_set(err, RT_ERR_INVALID, "INFERD_CUDA_KERNELS '%.32s' is not auto, new or baseline", v);
    }
    if ((unsigned)o->cuda_kernels >= RT_CUDA_KERNELS_COUNT)
        return rt_error_set(err, RT_ERR_INVALID, "CUDA kernel set %d is not auto, new or baseline",
                            (int)o->cuda_kernels);

    if (o->cpu_batch_chunk < 0 || o->cpu_batch_chunk > RT_MAX_BATCH)
        return rt_error_set(err, RT_ERR_INVALID, "CPU batch chunk %d is not in 0..%d", o->cpu_batch_chunk,
                            RT_MAX_BATCH);
    enum kcpu_isa isa;
    if (o->cpu_isa && *o->cpu_isa && !kcpu_isa_from_name(o->cpu_isa, &isa)) {
        char valid[64] = "";
        for (int i = KCPU_ISA_SCALAR; i <= KCPU_ISA_AVX512; i++)
            snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s", i ? ", " : "",
                     kcpu_isa_name((enum kcpu_isa)i));
        return rt_error_set(err, RT_ERR_INVALID, "unknown CPU instruction set '%.64s' (valid: %s)", o->cpu_isa,
                            valid);
    }
    return RT_OK;
}

enum rt_status rt_backend_create(enum rt_backend_kind kind, const struct rt_backend_options *opt,
                                 struct rt_backend **out, struct rt_error *err)
{
    struct rt_backend_options o = opt ? *opt : (struct rt_backend_options){.threads = 0, .device = -1};
    enum rt_status s = complete_options(&o, err);
    if (s != RT_OK)
        return s;
    if (kind == RT_BACKEND_CPU)
        return rt_backend_cpu_create(&o, out, err);
#ifdef INFERD_CUDA
    s = rt_backend_cuda_create(&o, out, err);
    if (s == RT_OK || kind == RT_BACKEND_CUDA)
        return s;
    fprintf(stderr, "inferd: no usable CUDA device (%s); using the CPU backend\n", err->msg);
#else
    if (kind == RT_BACKEND_CUDA)
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "this build has no CUDA backend (nvcc was not found)");
#endif
    return rt_backend_cpu_create(&o, out, err);
}

void rt_backend_free(struct rt_backend *b)
{
    if (b)
        b->iface->free(b);
}

const char *rt_backend_name(const struct rt_backend *b) { return b->iface->name; }

const char *rt_backend_describe(const struct rt_backend *b) { return b->description; }

enum rt_device_kind rt_backend_device_kind(const struct rt_backend *b) { return b->iface->device_kind; }

int rt_backend_device_count(const struct rt_backend *b)
{
    return b->iface->device_count ? b->iface->device_count(b) : 0;
}

bool rt_backend_device_info(const struct rt_backend *b, int i, struct rt_device_info *out)
{
    return i >= 0 && i < rt_backend_device_count(b) && b->iface->device_info(b, i, out);
}

enum rt_status rt_backend_measure_rates(struct rt_backend *b, enum rt_precision prec, struct rt_backend_rates *out,
                                        struct rt_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!b->iface->measure_rates)
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "the %s backend cannot measure its rates", b->iface->name);
    return b->iface->measure_rates(b, prec, out, err);
}

int64_t rt_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

enum rt_status rt_backend_host_mark(void *ctx, int step, bool end, struct rt_step_timing *slot, struct rt_error *err)
{
    int64_t now = rt_clock_ns();
    if (end)
        slot->dur_ns = now - slot->begin_ns;
    else
        slot->begin_ns = now;
    return RT_OK;
}
