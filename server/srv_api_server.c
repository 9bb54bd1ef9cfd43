/* srv_api_server.c - health (live, ready) and server metadata endpoints. */
#include "srv_handlers.h"

/* Draining requests never reach a handler: the HTTP layer answers them 503. */

void srv_handle_live(struct srv_request *r)
{
    struct srv_buf b = {0};
    srv_buf_puts(&b, "{\"live\":true}");
    srv_reply_json(r, 200, &b);
}

void srv_handle_ready(struct srv_request *r)
{
    if (atomic_load(&r->srv->shutting_down)) {
        srv_reply_error(r, 503, "the server is shutting down");
        return;
    }
    if (!atomic_load(&r->srv->models_loaded)) {
        srv_reply_error(r, 503, "models are loading");
        return;
    }
    char why[400];
    if (!srv_repo_all_ready(r->srv->repo, why, sizeof(why))) {
        srv_reply_error(r, 503, "not ready: %s", why);
        return;
    }
    struct srv_buf b = {0};
    srv_buf_puts(&b, "{\"ready\":true}");
    srv_reply_json(r, 200, &b);
}

void srv_handle_server_metadata(struct srv_request *r)
{
    struct srv_buf b = {0};
    srv_buf_puts(&b, "{\"name\":\"" SRV_NAME "\",\"version\":\"" SRV_VERSION "\",\"extensions\":["
                     "\"classification\",\"binary_tensor_data\",\"statistics\","
                     "\"schedule_policy\"");
    if (r->srv->cfg.enable_model_control)
        srv_buf_puts(&b, ",\"model_repository\"");
    srv_buf_puts(&b, "],\"backend\":");
    srv_buf_json_str(&b, rt_backend_name(r->srv->backend));
    srv_buf_putc(&b, '}');
    srv_reply_json(r, 200, &b);
}
