/*
 * srv_config.c - the option table and everything derived from it: defaults,
 * command-line parsing, the JSON config file, validation and --help.
 */
#include "srv_config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_model.h"
#include "srv_log.h"

/* OPT_BACKEND: an enum rt_backend_kind, named and parsed by the runtime. */
enum srv_opt_type { OPT_STRING, OPT_INT, OPT_SIZE, OPT_BOOL, OPT_ENUM, OPT_BACKEND };

struct srv_option {
    const char *name;
    enum srv_opt_type type;
    size_t offset;            /* into struct srv_config */
    const char *def;          /* default, as text */
    int64_t min, max;         /* OPT_INT / OPT_SIZE bounds */
    const char *const *values;/* OPT_ENUM names, NULL-terminated */
    const char *arg;          /* placeholder shown by --help */
    const char *help;
};

/* Indexed by enum rt_cuda_graphs. */
static const char *const CUDA_GRAPHS[] = {"auto", "on", "off", NULL};
/* Indexed by enum rt_cuda_kernels. */
static const char *const CUDA_KERNELS[] = {"auto", "new", "baseline", NULL};

#define OFF(field) offsetof(struct srv_config, field)
#define GIB (INT64_C(1) << 30)

static const struct srv_option OPTIONS[] = {
    {"model-repository", OPT_STRING, OFF(model_repository), "model_repository", 0, 0, NULL, "DIR",
     "folder holding one sub-folder per model"},
    {"http-port", OPT_INT, OFF(http_port), "8000", 0, 65535, NULL, "N",
     "TCP port to listen on (0 picks a free one; see --port-file)"},
    {"host", OPT_STRING, OFF(host), "127.0.0.1", 0, 0, NULL, "ADDR",
     "address to bind (0.0.0.0 for every IPv4 interface, :: for IPv6)"},
    {"backend", OPT_BACKEND, OFF(backend), "auto", 0, 0, NULL, "KIND",
     "where models run: auto (CUDA when usable, else CPU), cpu or cuda"},
    {"threads", OPT_INT, OFF(threads), "0", 0, 1024, NULL, "N",
     "compute threads per model instance, on CUDA the ones copying through pinned memory (0: half the cores, "
     "the rest serve HTTP)"},
    {"cpu-batch-chunk", OPT_INT, OFF(cpu_batch_chunk), "0", 0, RT_MAX_BATCH, NULL, "N",
     "CPU backend: samples per pass through the model (0: $INFERD_CPU_BATCH_CHUNK if set, "
     "else as many as fit in L2)"},
    {"cpu-isa", OPT_STRING, OFF(cpu_isa), "", 0, 0, NULL, "NAME",
     "CPU kernels' instruction set: scalar, avx2 or avx512 (default: $INFERD_CPU_ISA if set, "
     "else the best the CPU has)"},
    {"cuda-graphs", OPT_ENUM, OFF(cuda_graphs), "auto", 0, 0, CUDA_GRAPHS, "WHEN",
     "CUDA backend: capture a CUDA graph per batch size (auto: on unless $INFERD_CUDA_GRAPHS=0)"},
    {"cuda-kernels", OPT_ENUM, OFF(cuda_kernels), "auto", 0, 0, CUDA_KERNELS, "SET",
     "CUDA backend's kernel set: new (INT8 conv / linear on tensor cores from sm_80; FP32 / FP16 "
     "split-K for few rows, channels-last convolutions) or baseline (dp4a; tiles by output "
     "channels; NCHW), for comparison; auto: $INFERD_CUDA_KERNELS if set, else new"},
    {"http-threads", OPT_INT, OFF(http_threads), "0", 0, 1024, NULL, "N",
     "HTTP threads (0: one per core)"},
    {"log-level", OPT_ENUM, OFF(log_level), "info", 0, 0, SRV_LOG_LEVEL_NAMES, "LEVEL",
     "error, warn, info (start-up, errors) or debug (every request)"},
    {"enable-model-control", OPT_BOOL, OFF(enable_model_control), "false", 0, 0, NULL, NULL,
     "allow POST /v2/repository/index and .../load, .../unload"},
    {"exit-on-error", OPT_BOOL, OFF(exit_on_error), "true", 0, 0, NULL, NULL,
     "exit when a model fails to load at start-up; false serves the others (not ready)"},
    {"batching", OPT_BOOL, OFF(batching), "true", 0, 0, NULL, NULL,
     "dynamic batching; false runs every request alone (for comparison)"},
    {"inline-batch-us", OPT_INT, OFF(inline_batch_us), "200", 0, 1000000, NULL, "US",
     "a batch expected to take at most this long runs on the thread that submits it when an "
     "instance is idle, saving two thread hand-offs (0: always on the instance's worker)"},
    {"no-ui", OPT_BOOL, OFF(no_ui), "false", 0, 0, NULL, NULL,
     "do not serve the web page (GET / and /ui/...: 404)"},
    {"profile-steps", OPT_BOOL, OFF(profile_steps), "false", 0, 0, NULL, NULL,
     "time every step of every batch (a clock read per step; CUDA: no graphs) and serve per-step "
     "medians at GET /v2/models/{m}/profile"},
    {"max-body-bytes", OPT_SIZE, OFF(max_body_bytes), "64M", 1024, 4 * GIB, NULL, "BYTES",
     "largest request body accepted (413 above); k, M, G suffixes"},
    {"max-buffered-bytes", OPT_SIZE, OFF(max_buffered_bytes), "1G", 1024, 256 * GIB, NULL, "BYTES",
     "most bytes of request bodies held at once, over all requests (503 with Retry-After above)"},
    {"max-image-pixels", OPT_SIZE, OFF(max_image_pixels), "16M", 1, GIB, NULL, "N",
     "largest width x height an image may declare (413 above)"},
    {"max-tensor-elements", OPT_SIZE, OFF(max_tensor_elements), "16M", 1, GIB, NULL,
     "N", "most tensor elements one request may carry (413 above)"},
    {"max-json-depth", OPT_INT, OFF(max_json_depth), "32", 4, 1000, NULL, "N",
     "deepest JSON nesting accepted (400 above), checked before parsing"},
    {"idle-timeout", OPT_INT, OFF(idle_timeout_s), "30", 1, 86400, NULL, "SECONDS",
     "close a connection that sends nothing for this long"},
    {"min-body-rate", OPT_SIZE, OFF(min_body_rate), "500", 0, GIB, NULL, "BYTES",
     "after 2 s, a request body must arrive at this many bytes a second on average (the connection is closed below; 0: no minimum)"},
    {"header-timeout", OPT_INT, OFF(header_timeout_s), "30", 1, 86400, NULL, "SECONDS",
     "longest a client may take to send a request head, however it trickles it (the connection is closed above)"},
    {"request-timeout", OPT_INT, OFF(request_timeout_s), "60", 1, 86400, NULL, "SECONDS",
     "longest a client may take to send one request body (the connection is closed above)"},
    {"max-connections", OPT_INT, OFF(max_connections), "1024", 1, 1000000, NULL, "N",
     "most simultaneous client connections; past it requests get 503 (health and metrics still answered on up to 64 more)"},
    {"max-connections-per-ip", OPT_INT, OFF(max_connections_per_ip), "0", 0, 1000000, NULL, "N",
     "most simultaneous connections from one client address; past it requests get 503 (0: no per-address limit: a load balancer is one address)"},
    {"cors-origin", OPT_STRING, OFF(cors_origin), "", 0, 0, NULL, "ORIGIN",
     "let web pages from ORIGIN (e.g. https://app.example.com, or *) call the API: CORS headers and preflight answers; off when empty"},
    {"api-key", OPT_STRING, OFF(api_key), "", 0, 0, NULL, "KEY",
     "when set, the repository endpoints need the header 'Authorization: Bearer KEY' (401 otherwise)"},
    {"tls-cert", OPT_STRING, OFF(tls_cert), "", 0, 0, NULL, "FILE",
     "PEM certificate: serve HTTPS (with --tls-key)"},
    {"tls-key", OPT_STRING, OFF(tls_key), "", 0, 0, NULL, "FILE",
     "PEM private key of --tls-cert"},
    {"drain-timeout", OPT_INT, OFF(drain_timeout_s), "30", 0, 86400, NULL, "SECONDS",
     "on SIGTERM, SIGINT or SIGHUP, how long to wait for accepted requests before giving up"},
    {"port-file", OPT_STRING, OFF(port_file), "", 0, 0, NULL, "FILE",
     "write the bound port here once serving (useful with --http-port 0)"},
    {"config", OPT_STRING, OFF(config_file), "", 0, 0, NULL, "FILE",
     "JSON object of option names to values; command-line flags win"},
};
#define N_OPTIONS (sizeof(OPTIONS) / sizeof(OPTIONS[0]))

static const struct srv_option *find_option(const char *name, size_t len)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const char *o = OPTIONS[i].name;
        if (strlen(o) != len)
            continue;
        size_t k = 0;
        /* Config files may spell names with '_' (http_port) as JSON keys often are. */
        while (k < len && (o[k] == name[k] || (o[k] == '-' && name[k] == '_')))
            k++;
        if (k == len)
            return &OPTIONS[i];
    }
    return NULL;
}

static bool parse_int(const char *text, bool size_suffix, int64_t *out)
{
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (end == text || errno)
        return false;
    int64_t mult = 1;
    if (size_suffix && *end) {
        switch (*end++) {
        case 'k': case 'K': mult = INT64_C(1) << 10; break;
        case 'm': case 'M': mult = INT64_C(1) << 20; break;
        case 'g': case 'G': mult = INT64_C(1) << 30; break;
        default: return false;
        }
    }
    if (*end)
        return false;
    int64_t r;
    if (__builtin_mul_overflow((int64_t)v, mult, &r))
        return false;
    *out = r;
    return true;
}

/* The one setter: every source of a value goes through here. */
static bool set_option(struct srv_config *cfg, const struct srv_option *o, const char *text,
                       char *err, size_t err_len)
{
    char *field = (char *)cfg + o->offset;
    switch (o->type) {
    case OPT_STRING:
        if (strlen(text) >= SRV_CONFIG_STR_MAX) {
            snprintf(err, err_len, "--%s: value too long", o->name);
            return false;
        }
        memcpy(field, text, strlen(text) + 1);
        return true;
    case OPT_INT:
    case OPT_SIZE: {
        int64_t v;
        if (!parse_int(text, o->type == OPT_SIZE, &v)) {
            snprintf(err, err_len, "--%s: '%s' is not %s", o->name, text,
                     o->type == OPT_SIZE ? "a size (e.g. 4096, 64k, 16M)" : "an integer");
            return false;
        }
        if (v < o->min || v > o->max) {
            snprintf(err, err_len, "--%s: %" PRId64 " is outside %" PRId64 "..%" PRId64, o->name, v,
                     o->min, o->max);
            return false;
        }
        memcpy(field, &v, sizeof(v));
        return true;
    }
    case OPT_BOOL: {
        bool v;
        if (strcmp(text, "true") == 0 || strcmp(text, "1") == 0 || strcmp(text, "yes") == 0 ||
            strcmp(text, "on") == 0)
            v = true;
        else if (strcmp(text, "false") == 0 || strcmp(text, "0") == 0 ||
                 strcmp(text, "no") == 0 || strcmp(text, "off") == 0)
            v = false;
        else {
            snprintf(err, err_len, "--%s: '%s' is not true or false", o->name, text);
            return false;
        }
        memcpy(field, &v, sizeof(v));
        return true;
    }
    case OPT_ENUM:
        for (int i = 0; o->values[i]; i++) {
            if (strcmp(text, o->values[i]) == 0) {
                memcpy(field, &i, sizeof(i));
                return true;
            }
        }
        snprintf(err, err_len, "--%s: '%s' is not one of the accepted values (see --help)",
                 o->name, text);
        return false;
    case OPT_BACKEND: {
        struct rt_error e;
        enum rt_backend_kind kind;
        if (rt_backend_kind_parse(text, &kind, &e) != RT_OK) {
            snprintf(err, err_len, "--%s: %s", o->name, e.msg);
            return false;
        }
        int v = (int)kind;
        memcpy(field, &v, sizeof(v));
        return true;
    }
    }
    return false;
}

static bool apply_json_value(struct srv_config *cfg, const struct srv_option *o,
                             const cJSON *v, char *err, size_t err_len)
{
    char text[64];
    if (cJSON_IsString(v))
        return set_option(cfg, o, v->valuestring, err, err_len);
    if (cJSON_IsBool(v) && o->type == OPT_BOOL)
        return set_option(cfg, o, cJSON_IsTrue(v) ? "true" : "false", err, err_len);
    if (cJSON_IsNumber(v) && (o->type == OPT_INT || o->type == OPT_SIZE)) {
        if (v->valuedouble != (double)(int64_t)v->valuedouble) {
            snprintf(err, err_len, "config file: \"%s\" must be an integer", o->name);
            return false;
        }
        snprintf(text, sizeof(text), "%" PRId64, (int64_t)v->valuedouble);
        return set_option(cfg, o, text, err, err_len);
    }
    snprintf(err, err_len, "config file: \"%s\" has the wrong type", o->name);
    return false;
}

static bool load_config_file(struct srv_config *cfg, const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "--config: cannot open %s: %s", path, strerror(errno));
        return false;
    }
    char *text = malloc(1 << 20);
    size_t n = text ? fread(text, 1, 1 << 20, f) : 0;
    bool too_big = text && n == (1 << 20);
    fclose(f);
    if (!text || too_big) {
        free(text);
        snprintf(err, err_len, "--config: %s is too large", path);
        return false;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, false);
    bool ok = root && cJSON_IsObject(root);
    if (!ok)
        snprintf(err, err_len, "--config: %s is not a JSON object (error near byte %zu)", path,
                 end ? (size_t)(end - text) : (size_t)0);
    for (const cJSON *it = ok ? root->child : NULL; it && ok; it = it->next) {
        const struct srv_option *o = find_option(it->string, strlen(it->string));
        if (!o || strcmp(o->name, "config") == 0) {
            snprintf(err, err_len, "--config: unknown option \"%s\"", it->string);
            ok = false;
        } else {
            ok = apply_json_value(cfg, o, it, err, err_len);
        }
    }
    cJSON_Delete(root);
    free(text);
    return ok;
}

/* Walks argv; with only_config, applies just --config (the first pass). */
static enum srv_config_result walk_args(int argc, char **argv, struct srv_config *cfg,
                                        bool only_config, char *err, size_t err_len)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
            return SRV_CONFIG_HELP;
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, err_len, "unexpected argument '%s' (see --help)", a);
            return SRV_CONFIG_ERROR;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const struct srv_option *o = find_option(name, len);
        if (!o) {
            snprintf(err, err_len, "unknown option '%s' (see --help)", a);
            return SRV_CONFIG_ERROR;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value && o->type == OPT_BOOL) {
            /* "--flag" alone is true; "--flag false" takes the next word when it is a bool. */
            static const char *const WORDS[] = {"true", "false", "1", "0", "yes", "no", "on", "off"};
            value = "true";
            for (size_t w = 0; i + 1 < argc && w < sizeof(WORDS) / sizeof(WORDS[0]); w++) {
                if (strcmp(argv[i + 1], WORDS[w]) == 0) {
                    value = argv[++i];
                    break;
                }
            }
        }
        if (!value) {
            if (i + 1 >= argc) {
                snprintf(err, err_len, "--%s needs a value", o->name);
                return SRV_CONFIG_ERROR;
            }
            value = argv[++i];
        }
        if (only_config != (strcmp(o->name, "config") == 0))
            continue;
        if (!set_option(cfg, o, value, err, err_len))
            return SRV_CONFIG_ERROR;
    }
    return SRV_CONFIG_OK;
}

enum srv_config_result srv_config_parse(int argc, char **argv, struct srv_config *cfg, char *err,
                                        size_t err_len)
{
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < N_OPTIONS; i++) {
        if (!set_option(cfg, &OPTIONS[i], OPTIONS[i].def, err, err_len))
            return SRV_CONFIG_ERROR; /* a bad default is a bug caught by the first run */
    }
    enum srv_config_result r = walk_args(argc, argv, cfg, true, err, err_len);
    if (r != SRV_CONFIG_OK)
        return r;
    if (cfg->config_file[0] && !load_config_file(cfg, cfg->config_file, err, err_len))
        return SRV_CONFIG_ERROR;
    return walk_args(argc, argv, cfg, false, err, err_len);
}

void srv_config_usage(FILE *out, const char *prog)
{
    fprintf(out, "usage: %s [--option value | --option=value]...\n\n"
                 "inferd serves the models of a repository over HTTP (KServe v2).\n\n",
            prog);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const struct srv_option *o = &OPTIONS[i];
        char head[64];
        snprintf(head, sizeof(head), "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(out, "  %-30s %s", head, o->help);
        if (o->type == OPT_ENUM) {
            fprintf(out, " {");
            for (int k = 0; o->values[k]; k++)
                fprintf(out, "%s%s", k ? "|" : "", o->values[k]);
            fprintf(out, "}");
        }
        if (o->type == OPT_BACKEND) {
            fprintf(out, " {");
            for (int k = 0; k < RT_BACKEND_KIND_COUNT; k++)
                fprintf(out, "%s%s", k ? "|" : "", rt_backend_kind_name((enum rt_backend_kind)k));
            fprintf(out, "}");
        }
        if (o->def[0])
            fprintf(out, " [%s]", o->def);
        fprintf(out, "\n");
    }
    fprintf(out, "  %-30s %s\n", "--help", "print this and exit");
}
