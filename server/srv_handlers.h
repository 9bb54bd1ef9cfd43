/*
 * srv_handlers.h - the endpoint handlers the route table points at, and the
 * helpers they share. Each handler answers (srv_reply_*) or defers.
 */
#ifndef SRV_HANDLERS_H
#define SRV_HANDLERS_H

#include "srv_http.h"
#include "srv_model.h"

/* srv_api_server.c: health and server metadata. */
void srv_handle_live(struct srv_request *r);
void srv_handle_ready(struct srv_request *r);
void srv_handle_server_metadata(struct srv_request *r);

/* srv_api_model.c: model metadata, readiness, statistics, repository. */
void srv_handle_model_metadata(struct srv_request *r);
void srv_handle_model_config(struct srv_request *r);
void srv_handle_model_ready(struct srv_request *r);
void srv_handle_model_stats(struct srv_request *r);
void srv_handle_repo_index(struct srv_request *r);
void srv_handle_repo_load(struct srv_request *r);
void srv_handle_repo_unload(struct srv_request *r);

/* srv_api_profile.c: per-step medians (--profile-steps). */
void srv_handle_model_profile(struct srv_request *r);

/* srv_api_infer.c and srv_api_classify.c. */
void srv_handle_infer(struct srv_request *r);
void srv_handle_classify(struct srv_request *r);

/* srv_metrics.c. */
void srv_handle_metrics(struct srv_request *r);

/* srv_api_ui.c: the web page, GET / and GET /ui/{file} (404 with --no-ui). */
void srv_handle_ui(struct srv_request *r);

/* The ready model the route names (checking {version}), referenced; on
 * failure answers the request (404 / 503) and returns NULL. */
struct srv_model *srv_request_model(struct srv_request *r);

/* Records the outcome of an inference request in the model's statistics;
 * call once, after the answer is decided. */
void srv_record_outcome(struct srv_request *r, struct srv_model *m,
                        const struct srv_request_times *t);

#endif /* SRV_HANDLERS_H */
