/*
 * profile.h - what `inferctl profile` measured, as its trace writer
 * (profile_trace.c) reads it. Times are CLOCK_MONOTONIC nanoseconds.
 */
#ifndef CTL_PROFILE_H
#define CTL_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/rt_model.h"

/* One step of one pass of one timed run. */
struct ctl_step_event {
    int step, run, batch;
    int64_t begin_ns, dur_ns;
};

/* One timed rt_session_run, measured on the host around the call. */
struct ctl_run_span {
    int64_t begin_ns, dur_ns;
};

struct ctl_profile_data {
    const char *model;
    const char *backend;              /* rt_backend_describe */
    bool device_clock;                /* steps timed on a GPU (CUDA events), not the host clock */
    int batch, n_steps;
    const struct rt_step_desc *steps; /* [n_steps] */
    int runs;
    const struct ctl_run_span *run_spans;   /* [runs] */
    int n_events;
    const struct ctl_step_event *events;    /* [n_events] */
};

/* Writes d as a Chrome trace (the JSON object format: "traceEvents" of
 * complete "X" events, ts and dur in microseconds from the first timed
 * run), which chrome://tracing and ui.perfetto.dev open: the runs on one
 * track, the steps named after their nodes on another. Prints why and
 * returns false on failure. */
bool ctl_profile_write_trace(const char *path, const struct ctl_profile_data *d);

#endif /* CTL_PROFILE_H */
