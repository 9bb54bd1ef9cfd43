/*
 * srv_api_ui.c - GET / and GET /ui/{file}: the web page of server/ui/,
 * served from the table embedded at build time (srv_ui_assets.h).
 *
 * The page only calls read-only endpoints and classify; it never offers model
 * control. --no-ui answers these paths exactly as unknown ones (404).
 */
#include <string.h>

#include "srv_handlers.h"
#include "srv_ui_assets.h"

/* Everything the page needs comes from this server; nothing else may load,
 * and no other site may frame it. Picked images are shown as blob: URLs. */
static const char CSP[] = "default-src 'none'; script-src 'self'; style-src 'self'; "
                          "img-src 'self' blob:; connect-src 'self'; base-uri 'none'; "
                          "form-action 'none'; frame-ancestors 'none'";

static const struct srv_ui_asset *find_asset(const char *name)
{
    for (int i = 0; i < SRV_UI_N_ASSETS; i++) {
        if (strcmp(SRV_UI_ASSETS[i].name, name) == 0)
            return &SRV_UI_ASSETS[i];
    }
    return NULL;
}

void srv_handle_ui(struct srv_request *r)
{
    static const char PREFIX[] = "/ui/";
    const char *name = strncmp(r->path, PREFIX, sizeof(PREFIX) - 1) == 0
                           ? r->path + sizeof(PREFIX) - 1
                           : "index.html";
    const struct srv_ui_asset *a = r->srv->cfg.no_ui ? NULL : find_asset(name);
    if (!a) {
        srv_reply_error(r, 404, "no such endpoint");
        return;
    }
    /* Asset names carry no version, so browsers revalidate every time
     * (no-cache) and the ETag turns that into a 304 until the binary changes. */
    srv_reply_header_static(r, "ETag", a->etag);
    srv_reply_header_static(r, "Cache-Control", "no-cache");
    srv_reply_header_static(r, "Content-Security-Policy", CSP);
    srv_reply_header_static(r, "X-Content-Type-Options", "nosniff");
    srv_reply_header_static(r, "Referrer-Policy", "no-referrer");
    struct srv_buf b = {0};
    const char *inm = srv_request_header(r, "If-None-Match");
    if (inm && (strstr(inm, a->etag) || strcmp(inm, "*") == 0)) {
        srv_reply(r, 304, a->content_type, &b);
        return;
    }
    srv_buf_append(&b, a->data, a->len);
    srv_reply(r, 200, a->content_type, &b);
}
