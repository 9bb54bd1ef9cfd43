/* json_keys.c - unknown keys with a suggestion, and parse error positions (json_keys.h). */
#include "runtime/format/json_keys.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

/* Levenshtein distance of a and b, capped at 64 characters each (keys are short). */
static int edit_distance(const char *a, const char *b)
{
    enum { CAP = 64 };
    int la = (int)strnlen(a, CAP), lb = (int)strnlen(b, CAP);
    int row[CAP + 1];
    for (int j = 0; j <= lb; j++)
        row[j] = j;
    for (int i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

bool rt_json_unknown_key(const cJSON *obj, const char *const *known, int n_known, char *msg, size_t cap)
{
    for (const cJSON *item = obj ? obj->child : NULL; item; item = item->next) {
        const char *key = item->string ? item->string : "";
        bool found = false;
        for (int k = 0; k < n_known && !found; k++)
            found = strcmp(key, known[k]) == 0;
        if (found)
            continue;
        /* the nearest known key, when it is near: a typo, a dropped
         * suffix ("max_batch" for "max_batch_size"), a spelling */
        const char *best = NULL;
        int best_d = 1 << 30;
        for (int k = 0; k < n_known; k++) {
            int d = edit_distance(key, known[k]);
            bool prefix = strlen(key) >= 3 && strncmp(key, known[k], strlen(key)) == 0;
            if (prefix)
                d = 1;
            if (d < best_d) {
                best_d = d;
                best = known[k];
            }
        }
        size_t len = strlen(key);
        int near = len <= 4 ? 1 : len <= 8 ? 2 : 3;
        if (best && best_d <= near)
            snprintf(msg, cap, "unknown key '%.40s' (did you mean '%s'?)", key, best);
        else
            snprintf(msg, cap, "unknown key '%.40s'", key);
        return true;
    }
    return false;
}

void rt_json_position(const char *text, size_t len, const char *at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    if (!at || at < text)
        return;
    size_t end = (size_t)(at - text) < len ? (size_t)(at - text) : len;
    for (size_t i = 0; i < end; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}
