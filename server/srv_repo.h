/*
 * srv_repo.h - the model repository: which models exist in the folder, which
 * of their versions are loaded, and lookup by name and version for requests.
 *
 * A model is a sub-folder holding model.json (or model.onnx), or Triton's
 * layout: numeric version folders and a config.pbtxt (srv_repo_layout.h).
 * Names are folder names made of letters, digits, '.', '_' and '-'. The
 * repository never reads outside its folder: a model folder or file that is
 * a symlink resolving elsewhere makes that model unavailable. Lookups hand
 * out a counted reference (release it with srv_model_unref); load and
 * unload are serialised with each other and never wait for running requests.
 */
#ifndef SRV_REPO_H
#define SRV_REPO_H

#include <stdbool.h>

#include "srv_buf.h"
#include "srv_model.h"
#include "srv_triton_config.h"

struct srv_repo;

enum srv_model_state { SRV_MODEL_UNAVAILABLE = 0, SRV_MODEL_LOADING, SRV_MODEL_READY };

/* A model name: one path segment (not "." or ".."; "..my_model" and
 * "model..1" are fine) of letters, digits, '.', '_', '-', below RT_NAME_MAX. */
bool srv_repo_valid_name(const char *name);

/* Opens dir and lists its models, none loaded yet. */
enum rt_status srv_repo_open(const char *dir, struct rt_backend *be,
                             const struct srv_batcher_options *opt, struct srv_repo **out,
                             struct rt_error *err);
/* Unloads everything (waiting for running requests) and frees the repository. */
void srv_repo_free(struct srv_repo *r);

/* Loads every listed model; reports the first failure (the others are
 * logged and stay UNAVAILABLE with their reason). */
enum rt_status srv_repo_load_all(struct srv_repo *r, struct rt_error *err);
/* Loads (or reloads) one model by name: the versions its version policy
 * picks. config, when not NULL, stands in for the folder's config.pbtxt
 * (the load API's parameters.config, as Triton's). RT_ERR_NOT_FOUND when
 * no such folder; else the first failure (the versions that loaded serve; a
 * version that fails to reload keeps its old model). */
enum rt_status srv_repo_load(struct srv_repo *r, const char *name, const struct srv_triton_config *config,
                             struct rt_error *err);
/* Unloads one model; requests already holding it finish normally. */
enum rt_status srv_repo_unload(struct srv_repo *r, const char *name, struct rt_error *err);

/* A referenced, ready version of a model: version names the folder ("2");
 * NULL or "" takes the highest ready one. RT_ERR_NOT_FOUND (unknown name,
 * then unknown version) or RT_ERR_UNAVAILABLE (known but not loaded, with
 * the reason). */
enum rt_status srv_repo_acquire(struct srv_repo *r, const char *name, const char *version,
                                struct srv_model **out, struct rt_error *err);
/* References to every ready model version, in name and version order (*out
 * malloc'd; unref each). */
int srv_repo_ready_models(struct srv_repo *r, struct srv_model ***out);
/* True when every model that should be loaded (all at start-up, minus those
 * unloaded on request since) is ready and there is at least one; else
 * false with the reason in why (the first model not ready, or that there is
 * no model at all). */
bool srv_repo_all_ready(struct srv_repo *r, char *why, size_t cap);

/* Reads the folder again (models added since appear, not loaded; removed
 * ones go unless loaded) and appends the repository index: one
 * {"name", "version", "state", "reason"} per version the policy picked, and
 * {"name", "state", "reason"} for a model with none (not loaded, or its
 * load failed before a version was picked). ready_only lists only ready
 * versions. */
void srv_repo_write_index(struct srv_repo *r, bool ready_only, struct srv_buf *out);
/* Appends the ready versions of model name as a JSON array of strings. */
void srv_repo_write_versions(struct srv_repo *r, const char *name, struct srv_buf *out);

#endif /* SRV_REPO_H */
