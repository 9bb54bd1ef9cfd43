/*
 * lg_options.c - inferd-loadgen's options: one table (name, type, default,
 * bounds, help) from which parsing, defaults and --help all derive.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "clients/lib/icl.h"
#include "lg.h"

enum opt_type { OPT_STRING, OPT_INT, OPT_INT64, OPT_DOUBLE, OPT_KIND, OPT_MODE, OPT_LEVELS, OPT_FLAG };

struct opt {
    const char *name;
    enum opt_type type;
    size_t offset;           /* into struct lg_config */
    const char *def;         /* parsed like a command-line value; NULL: none */
    double min, max;
    const char *arg, *help;
};

#define OFF(f) offsetof(struct lg_config, f)

static const struct opt OPTS[] = {
    {"url", OPT_STRING, OFF(url), ICL_DEFAULT_URL, 0, 0, "URL", "the server (loopback by default)"},
    {"model", OPT_STRING, OFF(model), "lenet5", 0, 0, "NAME", "the model to send requests to"},
    {"kind", OPT_KIND, OFF(kind), "classify", 0, 0, "KIND",
     "classify (image bodies), infer-json, infer-binary (tensors; the binary extension both "
     "ways), or live (GET /v2/health/live, to measure the tool itself)"},
    {"images", OPT_STRING, OFF(images), NULL, 0, 0, "DIR",
     "image files (PNG, JPEG, PGM/PPM) to send; default: the Fashion-MNIST test set"},
    {"pool", OPT_INT, OFF(pool), "1000", 1, 100000, "N", "distinct requests prepared and cycled"},
    {"batch", OPT_INT, OFF(batch), "1", 1, 4096, "N", "images (rows) per request"},
    {"mode", OPT_MODE, OFF(mode), "closed", 0, 0, "MODE",
     "closed: a fixed number of requests in flight; open: Poisson arrivals at --rate, "
     "latency measured from each request's intended send time"},
    {"concurrency", OPT_INT, OFF(levels), "8", 1, 100000, "N", "closed loop: requests in flight"},
    {"rate", OPT_DOUBLE, OFF(levels), NULL, 0.001, 1e7, "R",
     "open loop: requests per second (implies --mode open)"},
    {"sweep", OPT_LEVELS, OFF(levels), NULL, 0.001, 1e7, "LIST",
     "comma-separated levels to measure in turn: concurrencies (closed) or rates (open); "
     "with --out, also plots latency percentiles against throughput"},
    {"duration", OPT_DOUBLE, OFF(duration_s), "10", 0.01, 86400, "SECONDS",
     "measured time per level"},
    {"warmup", OPT_DOUBLE, OFF(warmup_s), "1", 0, 3600, "SECONDS",
     "unmeasured load before each level"},
    {"requests", OPT_INT64, OFF(requests), "0", 0, 1e15, "N",
     "stop each level after N measured requests (0: duration only)"},
    {"threads", OPT_INT, OFF(threads), "0", 0, 1024, "N",
     "sending threads (0: one per core, at most one per connection)"},
    {"max-inflight", OPT_INT, OFF(max_inflight), "1000", 1, 100000, "N",
     "open loop: requests outstanding at once, one connection each (later arrivals wait, "
     "and their wait counts); the default stays under inferd's --max-connections (1024)"},
    {"timeout", OPT_DOUBLE, OFF(timeout_s), "10", 0.001, 3600, "SECONDS", "per request"},
    {"out", OPT_STRING, OFF(out), NULL, 0, 0, "PREFIX",
     "write PREFIX.json and PREFIX.csv (and PREFIX.png for a sweep)"},
    {"seed", OPT_INT64, OFF(seed), "1", 1, 1e15, "N", "seed of the arrival schedule"},
    {"no-progress", OPT_FLAG, OFF(progress), NULL, 0, 0, NULL,
     "no status line (it is drawn only when stderr is a terminal)"},
};
#define N_OPTS (int)(sizeof(OPTS) / sizeof(OPTS[0]))

static const char *const KINDS[] = {"classify", "infer-json", "infer-binary", "live"};
static const char *const MODES[] = {"closed", "open"};

const char *lg_kind_name(enum lg_kind k) { return KINDS[k]; }
const char *lg_mode_name(enum lg_mode m) { return MODES[m]; }

static bool parse_double(const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static int pick(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

/* Applies one value; false (with the reason in why) when it is invalid. */
static bool set(struct lg_config *cfg, const struct opt *o, const char *v, const char **why)
{
    void *field = (char *)cfg + o->offset;
    double d;
    int k;
    switch (o->type) {
    case OPT_STRING:
        *(const char **)field = v;
        return true;
    case OPT_FLAG:
        cfg->progress = false; /* the one flag */
        return true;
    case OPT_KIND:
    case OPT_MODE:
        k = o->type == OPT_KIND ? pick(v, KINDS, 4) : pick(v, MODES, 2);
        if (k < 0) {
            *why = o->type == OPT_KIND ? "is not classify, infer-json, infer-binary or live"
                                       : "is not closed or open";
            return false;
        }
        if (o->type == OPT_KIND)
            cfg->kind = (enum lg_kind)k;
        else
            cfg->mode = (enum lg_mode)k;
        return true;
    case OPT_LEVELS:
        cfg->n_levels = 0;
        for (const char *p = v; *p;) {
            char item[64];
            size_t n = strcspn(p, ",");
            bool ok = n > 0 && n < sizeof(item) && cfg->n_levels < LG_MAX_LEVELS;
            if (ok) {
                memcpy(item, p, n);
                item[n] = '\0';
                ok = parse_double(item, o->min, o->max, &d);
            }
            if (!ok) {
                *why = "must be a comma-separated list of positive numbers (at most 64)";
                return false;
            }
            cfg->levels[cfg->n_levels++] = d;
            p += n + (p[n] == ',');
        }
        if (cfg->n_levels == 0)
            *why = "is empty";
        return cfg->n_levels > 0;
    default:
        break;
    }
    if (!parse_double(v, o->min, o->max, &d) ||
        (o->type != OPT_DOUBLE && d != floor(d))) {
        *why = o->type == OPT_DOUBLE ? "is not a number in range" : "is not an integer in range";
        return false;
    }
    if (o->type == OPT_INT && o->offset == OFF(levels)) {
        cfg->levels[0] = d; /* --concurrency */
        cfg->n_levels = 1;
    } else if (o->type == OPT_DOUBLE && o->offset == OFF(levels)) {
        cfg->levels[0] = d; /* --rate */
        cfg->n_levels = 1;
        cfg->mode = LG_MODE_OPEN;
    } else if (o->type == OPT_INT) {
        *(int *)field = (int)d;
    } else if (o->type == OPT_INT64) {
        if (o->offset == OFF(seed))
            cfg->seed = (uint64_t)d;
        else
            *(int64_t *)field = (int64_t)d;
    } else {
        *(double *)field = d;
    }
    return true;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: inferd-loadgen [--option VALUE | --option=VALUE]...\n\n"
               "Sends inference requests to inferd and reports throughput and latency.\n\n");
    for (int i = 0; i < N_OPTS; i++) {
        char head[48];
        snprintf(head, sizeof(head), "--%s%s%s", OPTS[i].name, OPTS[i].arg ? " " : "",
                 OPTS[i].arg ? OPTS[i].arg : "");
        fprintf(f, "  %-26s %s", head, OPTS[i].help);
        if (OPTS[i].def && OPTS[i].type != OPT_FLAG)
            fprintf(f, " [%s]", OPTS[i].def);
        fprintf(f, "\n");
    }
    fprintf(f, "  %-26s %s\n\nExit status: 0 measured; 1 error; 2 usage; 3 cannot connect.\n",
            "--help", "print this and exit");
}

int lg_config_parse(int argc, char **argv, struct lg_config *cfg, FILE *out, FILE *err)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->progress = true;
    const char *why = NULL;
    for (int i = 0; i < N_OPTS; i++)
        if (OPTS[i].def && OPTS[i].type != OPT_FLAG && !set(cfg, &OPTS[i], OPTS[i].def, &why))
            abort(); /* a default that does not parse is a bug in the table */
    bool mode_given = false;
    const struct opt *level_opt = NULL; /* --concurrency, --rate or --sweep */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(out);
            return -1;
        }
        const struct opt *o = NULL;
        const char *v = NULL;
        for (int k = 0; k < N_OPTS && !o && strncmp(a, "--", 2) == 0; k++) {
            size_t n = strlen(OPTS[k].name);
            if (strncmp(a + 2, OPTS[k].name, n) == 0 && (a[2 + n] == '\0' || a[2 + n] == '=')) {
                o = &OPTS[k];
                v = a[2 + n] == '=' ? a + 3 + n : NULL;
            }
        }
        if (!o) {
            fprintf(err, "inferd-loadgen: unknown argument '%s' (see --help)\n", a);
            return 2;
        }
        if (o->type != OPT_FLAG && !v) {
            if (i + 1 == argc) {
                fprintf(err, "inferd-loadgen: --%s needs a value\n", o->name);
                return 2;
            }
            v = argv[++i];
        }
        if (!set(cfg, o, v ? v : "", &why)) {
            fprintf(err, "inferd-loadgen: --%s: '%s' %s\n", o->name, v, why);
            return 2;
        }
        mode_given |= o->type == OPT_MODE;
        if (o->offset == OFF(levels))
            level_opt = o;
    }
    bool open = cfg->mode == LG_MODE_OPEN;
    if (mode_given && open && (!level_opt || level_opt->type == OPT_INT)) {
        fprintf(err, "inferd-loadgen: --mode open needs --rate or --sweep (of rates)\n");
        return 2;
    }
    if (!open && level_opt && level_opt->type == OPT_DOUBLE) {
        fprintf(err, "inferd-loadgen: --rate is for the open loop, not --mode closed\n");
        return 2;
    }
    for (int i = 0; cfg->mode == LG_MODE_CLOSED && i < cfg->n_levels; i++) {
        if (cfg->levels[i] != floor(cfg->levels[i]) || cfg->levels[i] > 100000) {
            fprintf(err, "inferd-loadgen: concurrency levels must be integers in 1..100000\n");
            return 2;
        }
    }
    if (cfg->kind == LG_KIND_LIVE && cfg->batch != 1) {
        fprintf(err, "inferd-loadgen: --batch does not apply to --kind live\n");
        return 2;
    }
    return 0;
}
