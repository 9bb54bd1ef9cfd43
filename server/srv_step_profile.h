/*
 * srv_step_profile.h - per-step times of one model's batches, for
 * `inferd --profile-steps` and GET /v2/models/{m}/profile.
 *
 * With the flag, every worker's session times its steps
 * (rt_session_profile) and hands each step of each pass to
 * srv_step_profile_record. The profile keeps the last SRV_STEP_WINDOW
 * durations of every step per pass size, and the endpoint reports their
 * medians. A pass size gets its windows the first time it runs (one
 * allocation per size for the model's life, never per request). Without
 * the flag no profile exists and the executor's hook stays a NULL test.
 */
#ifndef SRV_STEP_PROFILE_H
#define SRV_STEP_PROFILE_H

#include "runtime/rt_model.h"
#include "srv_buf.h"

#define SRV_STEP_WINDOW 128

struct srv_step_profile;

/* A profile for m's plan (m must outlive it). */
enum rt_status srv_step_profile_create(const struct rt_model *m, struct srv_step_profile **out,
                                       struct rt_error *err);
void srv_step_profile_free(struct srv_step_profile *p);

/* An rt_step_timing_fn: user is the profile. Thread-safe (the model's
 * workers share one profile). */
void srv_step_profile_record(void *user, const struct rt_step_timing *t);

/* Appends the endpoint's JSON object (docs/http-api.md, "Step profile"). */
void srv_step_profile_write_json(struct srv_step_profile *p, const char *name, const char *version,
                                 const char *backend, struct srv_buf *out);

#endif /* SRV_STEP_PROFILE_H */
