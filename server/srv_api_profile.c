/*
 * srv_api_profile.c - GET /v2/models/{m}[/versions/1]/profile: the model's
 * per-step medians (srv_step_profile.h), collected when inferd runs with
 * --profile-steps; 403 without it, as the repository endpoints answer
 * while model control is off.
 */
#include "srv_handlers.h"

void srv_handle_model_profile(struct srv_request *r)
{
    struct srv_model *m = srv_request_model(r);
    if (!m)
        return;
    if (!m->stats.steps) {
        srv_model_unref(m);
        srv_reply_error(r, 403, "step profiling is off (start inferd with --profile-steps)");
        return;
    }
    struct srv_buf b = {0};
    srv_step_profile_write_json(m->stats.steps, m->name, m->version, rt_backend_name(r->srv->backend), &b);
    srv_model_unref(m);
    srv_reply_json(r, 200, &b);
}
