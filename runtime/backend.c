/* backend.c - picking a backend (see rt_backend_create in rt_model.h). */
#include <stdio.h>
#include <string.h>

#include "rt_backend_impl.h"
#include "rt_model.h"

bool rt_backend_kind_parse(const char *text, enum rt_backend_kind *out)
{
    static const struct {
        const char *name;
        enum rt_backend_kind kind;
    } KINDS[] = {{"auto", RT_BACKEND_AUTO}, {"cpu", RT_BACKEND_CPU}, {"cuda", RT_BACKEND_CUDA}};
    for (size_t i = 0; i < sizeof(KINDS) / sizeof(KINDS[0]); i++) {
        if (strcmp(text, KINDS[i].name) == 0) {
            *out = KINDS[i].kind;
            return true;
        }
    }
    return false;
}

enum rt_status rt_backend_create(enum rt_backend_kind kind, const struct rt_backend_options *opt,
                                 struct rt_backend **out, struct rt_error *err)
{
    struct rt_backend_options defaults = {.threads = 0, .device = -1};
    if (!opt)
        opt = &defaults;
    if (kind == RT_BACKEND_CPU)
        return rt_backend_cpu_create(opt, out, err);
#ifdef INFERD_CUDA
    enum rt_status s = rt_backend_cuda_create(opt, out, err);
    if (s == RT_OK || kind == RT_BACKEND_CUDA)
        return s;
    fprintf(stderr, "inferd: no usable CUDA device (%s); using the CPU backend\n", err->msg);
#else
    if (kind == RT_BACKEND_CUDA)
        return rt_error_set(err, RT_ERR_UNSUPPORTED, "this build has no CUDA backend (nvcc was not found)");
#endif
    return rt_backend_cpu_create(opt, out, err);
}

void rt_backend_free(struct rt_backend *b)
{
    if (b)
        b->iface->free(b);
}

const char *rt_backend_name(const struct rt_backend *b) { return b->iface->name; }

const char *rt_backend_describe(const struct rt_backend *b) { return b->description; }
