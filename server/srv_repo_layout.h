/*
 * srv_repo_layout.h - what one model folder of the repository holds: its
 * config.pbtxt (when there) and which version folders to load.
 *
 * Two layouts are read. Flat (inferd's own): model.json (+ safetensors) or
 * model.onnx directly in the model folder, served as version "1". Triton's:
 * numeric sub-folders (1/, 2/, ...) each holding one version's files, picked
 * by config.pbtxt's version_policy (default: the latest one only). Files
 * directly in the folder win over version folders.
 */
#ifndef SRV_REPO_LAYOUT_H
#define SRV_REPO_LAYOUT_H

#include <stdbool.h>

#include "srv_triton_config.h"

#define SRV_VERSION_NAME_MAX 24

struct srv_layout {
    bool has_config;             /* a config.pbtxt was read into cfg */
    struct srv_triton_config cfg;
    bool flat;
    int n;                       /* versions picked, ascending */
    char versions[SRV_MAX_VERSIONS][SRV_VERSION_NAME_MAX];
    bool present[SRV_MAX_VERSIONS];   /* false: the specific policy names a folder that is not there */
};

/* Whether folder name of repository dir is a model: model files, a
 * config.pbtxt or a numeric sub-folder in it. */
bool srv_layout_is_model(const char *dir, const char *name);

/* Reads model folder model_dir (of model `name`): its config.pbtxt (or
 * override instead, when not NULL: the load API's parameters.config) and
 * the versions to load. RT_ERR_BAD_MODEL, with the reason, for a
 * config.pbtxt that does not parse or a folder with no version to load;
 * RT_ERR_IO when the folder cannot be read. */
enum rt_status srv_layout_read(const char *model_dir, const char *name, const struct srv_triton_config *override,
                               struct srv_layout *out, struct rt_error *err);

#endif /* SRV_REPO_LAYOUT_H */
