/*
 * profile_trace.c - `inferctl profile --trace FILE`: the timed runs as a
 * Chrome trace (the Trace Event Format's JSON object form), for
 * chrome://tracing, ui.perfetto.dev or anything else that reads it.
 *
 *   {"traceEvents": [
 *      {"name": "process_name", "ph": "M", ...},            metadata: track names
 *      {"name": "run 0", "cat": "run", "ph": "X", "ts": 0.0, "dur": 251.3, "pid": 1, "tid": 1},
 *      {"name": "conv1", "cat": "conv2d", "ph": "X", "ts": 1.2, "dur": 20.4, "pid": 1, "tid": 2,
 *       "args": {"step": 0, "run": 0, "batch": 8, "epilogue": "bias+relu", "kernel": "..."}},
 *      ...],
 *    "displayTimeUnit": "ms", "otherData": {...}}
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "profile.h"

enum { TRACE_PID = 1, TID_RUNS = 1, TID_STEPS = 2 };

/* ns on the monotonic clock to the trace's microseconds from t0. */
static double trace_us(int64_t ns, int64_t t0) { return (double)(ns - t0) / 1e3; }

static cJSON *complete_event(const char *name, const char *cat, int tid, double ts, double dur)
{
    cJSON *e = cJSON_CreateObject();
    if (!e)
        return NULL;
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "cat", cat);
    cJSON_AddStringToObject(e, "ph", "X");
    cJSON_AddNumberToObject(e, "ts", ts);
    cJSON_AddNumberToObject(e, "dur", dur);
    cJSON_AddNumberToObject(e, "pid", TRACE_PID);
    cJSON_AddNumberToObject(e, "tid", tid);
    return e;
}

/* A metadata event naming the process (tid 0) or a track. */
static cJSON *name_event(const char *what, int tid, const char *name)
{
    cJSON *e = cJSON_CreateObject(), *args = cJSON_CreateObject();
    if (!e || !args) {
        cJSON_Delete(e);
        cJSON_Delete(args);
        return NULL;
    }
    cJSON_AddStringToObject(e, "name", what);
    cJSON_AddStringToObject(e, "ph", "M");
    cJSON_AddNumberToObject(e, "pid", TRACE_PID);
    cJSON_AddNumberToObject(e, "tid", tid);
    cJSON_AddStringToObject(args, "name", name);
    cJSON_AddItemToObject(e, "args", args);
    return e;
}

static cJSON *step_event(const struct ctl_profile_data *d, const struct ctl_step_event *ev, int64_t t0)
{
    const struct rt_step_desc *s = &d->steps[ev->step];
    cJSON *e = complete_event(s->name, s->op, TID_STEPS, trace_us(ev->begin_ns, t0), (double)ev->dur_ns / 1e3);
    cJSON *args = cJSON_CreateObject();
    if (!e || !args) {
        cJSON_Delete(e);
        cJSON_Delete(args);
        return NULL;
    }
    cJSON_AddNumberToObject(args, "step", ev->step);
    cJSON_AddNumberToObject(args, "run", ev->run);
    cJSON_AddNumberToObject(args, "batch", ev->batch);
    cJSON_AddStringToObject(args, "epilogue", s->epilogue);
    cJSON_AddStringToObject(args, "kernel", s->kernel);
    cJSON_AddItemToObject(e, "args", args);
    return e;
}

static cJSON *trace_json(const struct ctl_profile_data *d)
{
    int64_t t0 = d->runs > 0 ? d->run_spans[0].begin_ns : 0;
    cJSON *root = cJSON_CreateObject(), *events = cJSON_CreateArray(), *other = cJSON_CreateObject();
    if (!root || !events || !other) {
        cJSON_Delete(root);
        cJSON_Delete(events);
        cJSON_Delete(other);
        return NULL;
    }
    cJSON_AddItemToObject(root, "traceEvents", events);
    cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
    cJSON_AddItemToObject(root, "otherData", other);
    cJSON_AddStringToObject(other, "model", d->model);
    cJSON_AddStringToObject(other, "backend", d->backend);
    cJSON_AddNumberToObject(other, "batch", d->batch);
    cJSON_AddNumberToObject(other, "runs", d->runs);

    char process[RT_NAME_MAX + 32];
    snprintf(process, sizeof(process), "inferctl profile %s", d->model);
    bool ok = cJSON_AddItemToArray(events, name_event("process_name", 0, process)) &&
              cJSON_AddItemToArray(events, name_event("thread_name", TID_RUNS, "runs (host clock)")) &&
              cJSON_AddItemToArray(events, name_event("thread_name", TID_STEPS, d->device_clock
                                                                                   ? "steps (CUDA events)"
                                                                                   : "steps (host clock)"));
    for (int r = 0; ok && r < d->runs; r++) {
        char name[32];
        snprintf(name, sizeof(name), "run %d", r);
        ok = cJSON_AddItemToArray(events, complete_event(name, "run", TID_RUNS, trace_us(d->run_spans[r].begin_ns, t0),
                                                         (double)d->run_spans[r].dur_ns / 1e3));
    }
    for (int i = 0; ok && i < d->n_events; i++)
        ok = cJSON_AddItemToArray(events, step_event(d, &d->events[i], t0));
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

bool ctl_profile_write_trace(const char *path, const struct ctl_profile_data *d)
{
    cJSON *root = trace_json(d);
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        fprintf(stderr, "inferctl profile: out of memory writing the trace\n");
        return false;
    }
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = false;
    if (!ok)
        perror(path);
    free(text);
    return ok;
}
