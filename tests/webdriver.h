/*
 * webdriver.h - a minimal W3C WebDriver client for the browser tests: it
 * starts Debian's chromedriver on a free loopback port, opens a headless
 * chromium session and speaks the protocol's JSON over libcurl, so the
 * tests need no Selenium and no network.
 *
 *     struct wd w;
 *     if (!wd_start(&w, 1200, 900)) SKIP("%s", w.error);   // no chromium here
 *     wd_navigate(&w, "http://127.0.0.1:8000/");
 *     char ids[4][WD_ID_MAX];
 *     int n = wd_find_all(&w, NULL, "#results .result", ids, 4);
 *     wd_text(&w, ids[0], text, sizeof(text));
 *     wd_stop(&w);
 *
 * Every call returns false (or -1) on failure with the driver's message in
 * w->error. The driver runs in its own process group and dies with the
 * test runner; wd_stop closes the browser and ends that group.
 */
#ifndef WEBDRIVER_H
#define WEBDRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define WD_ID_MAX 96

struct wd {
    pid_t driver;                 /* chromedriver, leader of its process group */
    int port;
    char session[WD_ID_MAX];
    char log[256];                /* chromedriver's output, shown when it fails */
    char error[512];              /* why the last call failed */
};

/* A plain HTTP exchange (also for tests that need response headers). */
struct wd_http_resp {
    long status;                  /* 0 when no answer came */
    char *headers;                /* the raw header lines, NUL-terminated */
    char *body;                   /* NUL-terminated */
    size_t len;
};
/* extra_headers: NULL-ended "Name: value" strings, may be NULL; body may be
 * NULL. Free the answer with wd_http_free. */
bool wd_http(const char *method, const char *url, const char *const *extra_headers,
             const char *body, struct wd_http_resp *out);
void wd_http_free(struct wd_http_resp *r);

/* Starts chromedriver and a headless chromium with that window size; false
 * (w->error says why) when either cannot start: the caller skips. */
bool wd_start(struct wd *w, int width, int height);
/* Ends the session and the driver; safe after a failed wd_start. */
void wd_stop(struct wd *w);

bool wd_navigate(struct wd *w, const char *url);
/* Up to max element ids matching a CSS selector, inside the element `from`
 * or the whole document (from NULL); the count, or -1 on error. */
int wd_find_all(struct wd *w, const char *from, const char *css, char ids[][WD_ID_MAX], int max);
/* Types text into the element; for <input type=file>, text is the files'
 * paths, one per line. */
bool wd_send_keys(struct wd *w, const char *elem, const char *text);
/* The element's rendered text. */
bool wd_text(struct wd *w, const char *elem, char *out, size_t cap);
/* Saves a PNG screenshot of the window. */
bool wd_screenshot(struct wd *w, const char *png_path);

#endif /* WEBDRIVER_H */
