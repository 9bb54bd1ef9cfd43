/* server_bare.c - a fixed-body libmicrohttpd server (see server_bare.h). */
#include "server_bare.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* About the size of a LeNet-5 infer answer. */
static const char BODY[] =
    "{\"model_name\":\"bare\",\"model_version\":\"1\",\"outputs\":[{\"name\":\"logits\","
    "\"datatype\":\"FP32\",\"shape\":[1,10],\"data\":[-4.1,-7.3,-2.2,-3.8,-6.0,5.5,-2.9,"
    "9.7,1.2,11.4]}]}";

struct server_bare {
    struct MHD_Daemon *daemon;
    struct MHD_Response *response;
    int port;
};

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls)
{
    struct server_bare *s = cls;
    if (!*con_cls) {
        *con_cls = s;   /* first call: headers only */
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;  /* a body, if any, is read and dropped */
        return MHD_YES;
    }
    return MHD_queue_response(conn, MHD_HTTP_OK, s->response);
}

struct server_bare *server_bare_start(int threads)
{
    struct server_bare *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->response = MHD_create_response_from_buffer(sizeof(BODY) - 1, (void *)BODY,
                                                  MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(s->response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    struct sockaddr_in addr = {.sin_family = AF_INET};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL,
                                 on_access, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                 MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads,
                                 MHD_OPTION_CONNECTION_LIMIT, 1024u,
                                 MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
    if (!s->daemon) {
        MHD_destroy_response(s->response);
        free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : 0;
    return s;
}

int server_bare_port(const struct server_bare *s) { return s->port; }

void server_bare_stop(struct server_bare *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->daemon);
    MHD_destroy_response(s->response);
    free(s);
}
