/*
 * kcpu_isa.c - run-time choice of the instruction set for the CPU kernels.
 *
 * The binary is built for baseline x86-64; per-ISA files (*_avx2.c,
 * *_avx512.c) are only entered after this check says the CPU and the OS
 * (XSAVE state, which __builtin_cpu_supports verifies) support them.
 *
 * The choice is one process-wide value: kernels read it on every call and
 * take no context to carry a per-caller one. Callers that want another ISA
 * (the CPU backend's cpu_isa option, tests) set it with kcpu_isa_set; the
 * kernels read no environment.
 */
#include <stdatomic.h>
#include <string.h>

#include "kcpu_impl.h"

static atomic_int chosen = -1;  /* cached kcpu_isa(), -1 until first asked */

static enum kcpu_isa detect(void)
{
#if defined(KCPU_EMULATED_AVX512)
    return KCPU_ISA_AVX512;   /* make test-emulated-avx512: SIMDe stands in for it */
#elif defined(__x86_64__) || defined(__i386__)
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

/* Found once: kcpu_wino_applies asks on every convolution. */
enum kcpu_isa kcpu_isa_hardware(void)
{
    static atomic_int found = -1;
    int isa = atomic_load_explicit(&found, memory_order_relaxed);
    if (isa < 0) {
        isa = (int)detect();
        atomic_store_explicit(&found, isa, memory_order_relaxed);
    }
    return (enum kcpu_isa)isa;
}

enum kcpu_isa kcpu_isa(void)
{
    int isa = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (isa < 0) {
        int expected = -1, hw = (int)kcpu_isa_hardware();
        /* Only the unset value is replaced: a racing kcpu_isa_set wins. */
        isa = atomic_compare_exchange_strong(&chosen, &expected, hw) ? hw : expected;
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

bool kcpu_isa_from_name(const char *name, enum kcpu_isa *out)
{
    for (int isa = KCPU_ISA_SCALAR; isa <= KCPU_ISA_AVX512; isa++) {
        if (strcmp(name, kcpu_isa_name((enum kcpu_isa)isa)) == 0) {
            *out = (enum kcpu_isa)isa;
            return true;
        }
    }
    return false;
}

int kcpu_isa_set(enum kcpu_isa isa)
{
    if (isa > kcpu_isa_hardware())
        return -1;
    atomic_store_explicit(&chosen, (int)isa, memory_order_relaxed);
    return 0;
}
