/*
 * kcpu_isa.c - run-time choice of the instruction set for the CPU kernels.
 *
 * The binary is built for baseline x86-64; per-ISA files (*_avx2.c,
 * *_avx512.c) are only entered after this check says the CPU and the OS
 * (XSAVE state, which __builtin_cpu_supports verifies) support them.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kcpu_impl.h"

static atomic_int chosen = -1;  /* cached kcpu_isa(), -1 until first asked */

enum kcpu_isa kcpu_isa_hardware(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("fma"))
        return KCPU_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return KCPU_ISA_AVX2;
#endif
    return KCPU_ISA_SCALAR;
}

static enum kcpu_isa env_cap(void)
{
    const char *v = getenv("INFERD_CPU_ISA");
    if (!v || !*v)
        return KCPU_ISA_AVX512;
    for (int isa = KCPU_ISA_SCALAR; isa <= KCPU_ISA_AVX512; isa++)
        if (strcmp(v, kcpu_isa_name((enum kcpu_isa)isa)) == 0)
            return (enum kcpu_isa)isa;
    return KCPU_ISA_AVX512;  /* unknown names do not cap */
}

enum kcpu_isa kcpu_isa(void)
{
    int isa = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (isa < 0) {
        enum kcpu_isa hw = kcpu_isa_hardware(), cap = env_cap();
        isa = (int)(hw < cap ? hw : cap);
        /* Racing first callers compute the same value. */
        atomic_store_explicit(&chosen, isa, memory_order_relaxed);
    }
    return (enum kcpu_isa)isa;
}

const char *kcpu_isa_name(enum kcpu_isa isa)
{
    switch (isa) {
    case KCPU_ISA_SCALAR:
        return "scalar";
    case KCPU_ISA_AVX2:
        return "avx2";
    case KCPU_ISA_AVX512:
        return "avx512";
    }
    return "unknown";
}

int kcpu_isa_set_for_testing(enum kcpu_isa isa)
{
    if (isa > kcpu_isa_hardware())
        return -1;
    atomic_store_explicit(&chosen, (int)isa, memory_order_relaxed);
    return 0;
}
