/*
 * backend_cpu_impl.h - the CPU backend's INT8 steps (backend_cpu_q8.c),
 * called by backend_cpu.c for every step with step->q8 set, and its
 * answers to a profiler (backend_cpu_profile.c). Internal.
 */
#ifndef BACKEND_CPU_IMPL_H
#define BACKEND_CPU_IMPL_H

#include "kernels/cpu/kcpu_threads.h"
#include "runtime/backend/backend.h"

/* Whether op has an INT8 kernel. */
bool rt_cpu_q8_supports(enum rt_op op);
/* For profiles: ", nhwc", ", x nhwc" or ", y nhwc" where the step's
 * tensors are channels last, else "". */
const char *rt_cpu_q8_layouts(const struct rt_step *s);
/* s->prep becomes the step's rt_q8_step plus packed weights. */
enum rt_status rt_cpu_q8_prepare(const struct rt_plan *p, struct rt_step *s, int max_batch,
                                 struct rt_error *err);
void rt_cpu_q8_release(struct rt_step *s);
/* Scratch the step needs with parameters k (at the model's max batch) and `threads` threads. */
size_t rt_cpu_q8_scratch_bytes(const struct rt_step *s, const union rt_step_params *k, int threads);
void rt_cpu_q8_run(struct kcpu_threads *threads, void *scratch, const struct rt_step *s, int batch,
                   const struct rt_step_io *io);

/* describe_step of the CPU backend: the kernel and the instruction set. */
void rt_cpu_describe_step(struct rt_backend *b, const struct rt_plan *p, const struct rt_step *s, int batch,
                          char *out, size_t cap);
/* measure_rates with `threads` threads (FP32 whatever the precision: the
 * CPU computes FP16 models in FP32). */
enum rt_status rt_cpu_measure_rates(int threads, struct rt_backend_rates *out, struct rt_error *err);

#endif /* BACKEND_CPU_IMPL_H */
