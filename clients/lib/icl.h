/*
 * icl.h - the inferd client library: talks to inferd (or any KServe v2 /
 * Triton HTTP server) over libcurl.
 *
 *     struct icl_client *c;
 *     struct icl_error err;
 *     if (icl_client_create("http://127.0.0.1:8000", NULL, &c, &err) != ICL_OK) {
 *         fprintf(stderr, "%s\n", err.message);
 *         return 1;
 *     }
 *     uint8_t *png; size_t len;
 *     icl_file_read("shoe.png", &png, &len, &err);
 *     struct icl_image img = {.data = png, .len = len, .content_type = "image/png"};
 *     struct icl_classify_result res;
 *     if (icl_classify(c, "lenet5", &img, 1, 3, ICL_BODY_AUTO, &res, &err) == ICL_OK) {
 *         const struct icl_prediction *p = &res.results[0].predictions[0];
 *         printf("%s %.3f\n", p->label, p->score);
 *         icl_classify_result_free(&res);
 *     } else if (err.status == ICL_ERR_HTTP) {
 *         printf("server said %ld: %s\n", err.http_status, err.message);
 *     }
 *     free(png);
 *     icl_client_free(c);
 *
 * Conventions. Every call that can fail returns enum icl_status and, when
 * it is not ICL_OK, fills the caller's struct icl_error (which may be NULL):
 * ICL_ERR_HTTP carries the server's status code and its "error" message;
 * ICL_ERR_CONNECT means no server answered at that address. Results are
 * native structs (the JSON stays inside the library); a result that owns
 * memory has a *_free function, safe to call on a zeroed or failed result.
 * A client holds one connection that is kept alive between calls; use one
 * client per thread (clients share nothing). The library never prints and
 * never exits. Call curl_global_init() once before starting threads if more
 * than one thread creates clients (icl_client_create calls it otherwise).
 */
#ifndef ICL_H
#define ICL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ICL_DEFAULT_URL "http://127.0.0.1:8000"

#define ICL_STATUS_LIST(X)                                                            \
    X(ICL_OK, "ok")                                                                   \
    X(ICL_ERR_HTTP, "server error")           /* non-2xx answer: see http_status */  \
    X(ICL_ERR_CONNECT, "cannot connect")      /* refused, unresolvable, unreachable */\
    X(ICL_ERR_TIMEOUT, "timed out")           /* connected, but no answer in time */ \
    X(ICL_ERR_TRANSPORT, "connection failed") /* reset, empty reply, ... */          \
    X(ICL_ERR_PROTOCOL, "unexpected reply")   /* the answer breaks the API */        \
    X(ICL_ERR_INVALID, "invalid argument")    /* the caller's arguments */           \
    X(ICL_ERR_IO, "i/o error")                /* a local file */                     \
    X(ICL_ERR_NO_MEMORY, "out of memory")

enum icl_status {
#define ICL_STATUS_ENUM(name, text) name,
    ICL_STATUS_LIST(ICL_STATUS_ENUM)
#undef ICL_STATUS_ENUM
    ICL_STATUS_COUNT
};

struct icl_error {
    enum icl_status status;
    long http_status;        /* the server's status code; 0 when none arrived */
    char message[512];       /* the server's message for ICL_ERR_HTTP */
};

const char *icl_status_name(enum icl_status s);

/* ------------------------------------------------------------ client */

struct icl_options {
    long connect_timeout_ms; /* 0: 5000 */
    long timeout_ms;         /* whole request; 0: 60000 */
};

struct icl_client;

/* url: "http://host:port" (a missing "http://" is added; a trailing "/" is
 * dropped); NULL means ICL_DEFAULT_URL. opts may be NULL. No request is made:
 * a wrong address shows at the first call as ICL_ERR_CONNECT. Environment
 * proxies are not used: inference servers are reached directly. */
enum icl_status icl_client_create(const char *url, const struct icl_options *opts,
                                  struct icl_client **out, struct icl_error *err);
void icl_client_free(struct icl_client *c);
/* The normalised base URL, e.g. "http://127.0.0.1:8000" (owned by c). */
const char *icl_client_url(const struct icl_client *c);

/* A raw exchange, for endpoints without a wrapper. path starts with "/";
 * body may be NULL (GET when method is NULL and body is NULL, POST when
 * method is NULL and body is not). A non-2xx answer is ICL_ERR_HTTP, and
 * *resp still holds it. */
struct icl_response {
    long status;
    uint8_t *body;           /* len bytes, plus a NUL after them */
    size_t len;
    char content_type[128];
    int64_t header_len;      /* Inference-Header-Content-Length; -1 when absent */
};
enum icl_status icl_request(struct icl_client *c, const char *method, const char *path,
                            const void *body, size_t len, const char *content_type,
                            struct icl_response *resp, struct icl_error *err);
void icl_response_free(struct icl_response *resp);

/* ------------------------------------------------------------ health */

/* *ok is true on 200 and false on 503 (the call still returns ICL_OK; then
 * err->http_status is 503 and err->message says why). */
enum icl_status icl_server_live(struct icl_client *c, bool *ok, struct icl_error *err);
enum icl_status icl_server_ready(struct icl_client *c, bool *ok, struct icl_error *err);
enum icl_status icl_model_ready(struct icl_client *c, const char *model, bool *ok,
                                struct icl_error *err);

/* ------------------------------------------------------------ metadata */

#define ICL_NAME_MAX 128
#define ICL_MAX_DIMS 8
#define ICL_MAX_IO 16
#define ICL_MAX_EXTENSIONS 16

struct icl_server_metadata {
    char name[ICL_NAME_MAX];
    char version[64];
    int n_extensions;
    char extensions[ICL_MAX_EXTENSIONS][64];
};

/* A tensor: its description and, for inference, its data. Inputs point at
 * caller-owned data; outputs of a result point into memory the result owns.
 * data is row-major, little-endian; a BYTES tensor is serialised as Triton
 * does: each element a 4-byte little-endian length and then its bytes. */
struct icl_tensor {
    char name[ICL_NAME_MAX];
    char datatype[16];       /* "FP32", "INT64", "BYTES", ... */
    int rank;
    int64_t shape[ICL_MAX_DIMS]; /* metadata uses -1 for a variable dimension */
    const void *data;
    size_t byte_size;
};

struct icl_model_metadata {
    char name[ICL_NAME_MAX];
    char platform[64];
    int n_inputs, n_outputs;
    struct icl_tensor inputs[ICL_MAX_IO];  /* description only: data is NULL */
    struct icl_tensor outputs[ICL_MAX_IO];
};

enum icl_status icl_server_metadata(struct icl_client *c, struct icl_server_metadata *out,
                                    struct icl_error *err);
enum icl_status icl_model_metadata(struct icl_client *c, const char *model,
                                   struct icl_model_metadata *out, struct icl_error *err);

/* ------------------------------------------------------------ repository */

struct icl_model_entry {
    char name[ICL_NAME_MAX];
    char version[16];
    char state[32];          /* "READY", "UNAVAILABLE", "LOADING", ... */
    char reason[256];        /* why it is not ready; may be empty */
};

/* POST /v2/repository/index: *models is a malloc'd array of *n (free()). */
enum icl_status icl_repository_index(struct icl_client *c, struct icl_model_entry **models,
                                     int *n, struct icl_error *err);
/* The repository index where the server opens it, else (403: model
 * control off) the ready models from GET /v2/models/stats. */
enum icl_status icl_model_list(struct icl_client *c, struct icl_model_entry **models, int *n,
                               struct icl_error *err);
/* Both need a server started with model control on (403 otherwise). */
enum icl_status icl_model_load(struct icl_client *c, const char *model, struct icl_error *err);
enum icl_status icl_model_unload(struct icl_client *c, const char *model, struct icl_error *err);

/* ------------------------------------------------------------ inference */

struct icl_output_request {
    const char *name;
    int classification;      /* k > 0: the top k classes, BYTES "score:index:label" */
};

struct icl_infer_request {
    const char *id;                          /* echoed back; may be NULL */
    int n_inputs;
    const struct icl_tensor *inputs;
    int n_outputs;                           /* 0: every output, as tensors */
    const struct icl_output_request *outputs;
    bool binary_inputs;      /* send data with the binary tensor extension */
    bool binary_outputs;     /* ask for output data in binary */
    int64_t timeout_us;      /* 0: the model's default */
};

struct icl_infer_result {
    char model_name[ICL_NAME_MAX];
    char model_version[16];
    char id[256];
    int n_outputs;
    struct icl_tensor outputs[ICL_MAX_IO];   /* data owned by the result */
    void *storage;                           /* internal */
};

/* Encodes req as an HTTP body: JSON, then with binary_inputs the raw data.
 * *header_len is the JSON's length (the Inference-Header-Content-Length
 * value; equal to *len when nothing binary follows). *body is malloc'd. */
enum icl_status icl_infer_encode(const struct icl_infer_request *req, uint8_t **body,
                                 size_t *len, size_t *header_len, struct icl_error *err);

enum icl_status icl_infer(struct icl_client *c, const char *model,
                          const struct icl_infer_request *req, struct icl_infer_result *out,
                          struct icl_error *err);
/* Sends an already encoded body (header_len == len: plain JSON) and decodes
 * the answer, as icl_infer does. */
enum icl_status icl_infer_body(struct icl_client *c, const char *model, const void *body,
                               size_t len, size_t header_len, struct icl_infer_result *out,
                               struct icl_error *err);
void icl_infer_result_free(struct icl_infer_result *r);

/* Bytes of one element of a datatype; 0 for BYTES and unknown names. */
size_t icl_datatype_size(const char *datatype);
/* Element count of a shape (1 for rank 0); -1 when a dimension is negative. */
int64_t icl_shape_elements(const int64_t *shape, int rank);
/* Element i of a BYTES tensor: *s (not NUL-terminated) and *len. False
 * when t has fewer elements or is malformed. */
bool icl_tensor_string(const struct icl_tensor *t, int64_t i, const char **s, size_t *len);

/* ------------------------------------------------------------ images */

struct icl_image {
    const void *data;
    size_t len;
    const char *content_type; /* NULL: application/octet-stream (the server sniffs) */
    const char *filename;     /* for multipart; NULL: "image" */
};

enum icl_body_kind {
    ICL_BODY_AUTO = 0,       /* one image raw, several multipart */
    ICL_BODY_RAW,            /* the image as the body; one image only */
    ICL_BODY_MULTIPART,      /* multipart/form-data, one part per image */
};

struct icl_prediction {
    char label[ICL_NAME_MAX];
    int index;
    double score;            /* softmax probability */
};

struct icl_classification {
    int n_predictions;       /* sorted by score, highest first */
    struct icl_prediction *predictions;
    int64_t queue_us, compute_us, total_us; /* the server's timing; -1 if absent */
};

struct icl_classify_result {
    char model_name[ICL_NAME_MAX];
    char model_version[16];
    int n_results;           /* one per image, in request order */
    struct icl_classification *results;
};

/* Encodes images as a classify body; *content_type (owned by the caller,
 * cap bytes) gets the header value. *body is malloc'd. */
enum icl_status icl_classify_encode(const struct icl_image *images, int n, enum icl_body_kind kind,
                                    uint8_t **body, size_t *len, char *content_type, size_t cap,
                                    struct icl_error *err);
/* top_k 0: the server's default. */
enum icl_status icl_classify(struct icl_client *c, const char *model,
                             const struct icl_image *images, int n, int top_k,
                             enum icl_body_kind kind, struct icl_classify_result *out,
                             struct icl_error *err);
void icl_classify_result_free(struct icl_classify_result *r);

/* Reads a whole file into a malloc'd buffer (at most 1 GiB); "-" is stdin. */
enum icl_status icl_file_read(const char *path, uint8_t **data, size_t *len,
                              struct icl_error *err);
/* Media type from a file name's extension ("image/png", ...);
 * "application/octet-stream" when unknown. */
const char *icl_image_content_type(const char *path);

/* ------------------------------------------------------------ metrics */

/* GET /metrics: Prometheus text, malloc'd and NUL-terminated. */
enum icl_status icl_metrics(struct icl_client *c, char **text, struct icl_error *err);
/* Sum of every sample of metric name in text whose labels include
 * model="model" (every sample when model is NULL). False when none. */
bool icl_metrics_value(const char *text, const char *name, const char *model, double *value);

#endif /* ICL_H */
