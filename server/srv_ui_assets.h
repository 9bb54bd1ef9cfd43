/*
 * srv_ui_assets.h - the web page's files (server/ui/), embedded in the
 * binary at build time: server/ui/embed.c generates the table into the build
 * folder, so the page works offline and no file is read at run time.
 */
#ifndef SRV_UI_ASSETS_H
#define SRV_UI_ASSETS_H

#include <stddef.h>

struct srv_ui_asset {
    const char *name;           /* file name, served as /ui/<name> ("index.html" also as /) */
    const char *content_type;
    const char *etag;           /* quoted, strong: a hash of the bytes */
    const unsigned char *data;
    size_t len;
};

extern const struct srv_ui_asset SRV_UI_ASSETS[];
extern const int SRV_UI_N_ASSETS;

#endif /* SRV_UI_ASSETS_H */
