/*
 * embed.c - the build-time generator that embeds the web page in inferd.
 *
 *     embed server/ui/index.html server/ui/app.js ... > build/gen/ui_assets.c
 *
 * Writes one C file holding every asset's bytes, its Content-Type (from the
 * file's extension) and a strong ETag (FNV-1a of the bytes), as the table
 * declared in server/srv_ui_assets.h. A generator in C rather than xxd keeps
 * the build to gcc alone and computes the ETag where the bytes are read.
 * Not part of the daemon: the Makefile builds and runs it.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const struct {
    const char *ext, *type;
} TYPES[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
};

static const char *content_type(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof(TYPES) / sizeof(TYPES[0]); i++) {
        size_t e = strlen(TYPES[i].ext);
        if (n > e && strcmp(name + n - e, TYPES[i].ext) == 0)
            return TYPES[i].type;
    }
    return NULL;
}

/* Writes one asset's array; its length and ETag through the pointers. */
static int emit_bytes(int idx, const char *path, size_t *len, uint64_t *hash)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "embed: cannot open %s\n", path);
        return -1;
    }
    printf("static const unsigned char ASSET_%d[] = {", idx);
    *len = 0;
    *hash = 0xcbf29ce484222325ULL;
    int c;
    while ((c = getc(f)) != EOF) {
        printf("%s0x%02x,", *len % 16 ? "" : "\n    ", (unsigned)c);
        *hash = (*hash ^ (uint64_t)c) * 0x100000001b3ULL;
        (*len)++;
    }
    int bad = ferror(f);
    fclose(f);
    printf("\n};\n");
    if (bad || *len == 0) {
        fprintf(stderr, "embed: cannot read %s (or it is empty)\n", path);
        return -1;
    }
    return 0;
}

enum { MAX_ASSETS = 64 };

int main(int argc, char **argv)
{
    static size_t lens[MAX_ASSETS];
    static uint64_t hashes[MAX_ASSETS];
    int n = argc - 1;
    if (n < 1 || n > MAX_ASSETS) {
        fprintf(stderr, "usage: embed FILE... > assets.c  (1 to %d files)\n", MAX_ASSETS);
        return 2;
    }
    printf("/* Generated at build time by server/ui/embed.c: do not edit. */\n"
           "#include \"server/srv_ui_assets.h\"\n\n");
    for (int i = 0; i < n; i++) {
        if (!content_type(argv[i + 1])) {
            fprintf(stderr, "embed: %s: no Content-Type known for this extension\n", argv[i + 1]);
            return 1;
        }
        if (emit_bytes(i, argv[i + 1], &lens[i], &hashes[i]) != 0)
            return 1;
    }
    printf("\nconst struct srv_ui_asset SRV_UI_ASSETS[] = {\n");
    for (int i = 0; i < n; i++) {
        const char *slash = strrchr(argv[i + 1], '/');
        printf("    {\"%s\", \"%s\", \"\\\"%016llx\\\"\", ASSET_%d, %zu},\n",
               slash ? slash + 1 : argv[i + 1], content_type(argv[i + 1]),
               (unsigned long long)hashes[i], i, lens[i]);
    }
    printf("};\nconst int SRV_UI_N_ASSETS = %d;\n", n);
    return fflush(stdout) == 0 ? 0 : 1;
}
