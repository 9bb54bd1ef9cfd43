/* srv_step_profile.c - per-step medians of a model's batches (see srv_step_profile.h). */
#include "srv_step_profile.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* One pass size's windows: the last SRV_STEP_WINDOW durations of each step. */
struct pass_windows {
    uint64_t *count;                /* [n_steps]: durations recorded so far */
    int64_t *ns;                    /* [n_steps][SRV_STEP_WINDOW], a ring per step */
};

struct srv_step_profile {
    pthread_mutex_t mu;
    int n_steps, max_batch;
    struct rt_step_desc *steps;     /* [n_steps], at batch 1: names, ops, epilogues */
    struct pass_windows *by_batch;  /* [max_batch + 1]; empty until that size runs */
    uint64_t dropped;               /* durations lost to a failed allocation */
};

enum rt_status srv_step_profile_create(const struct rt_model *m, struct srv_step_profile **out,
                                       struct rt_error *err)
{
    struct srv_step_profile *p = calloc(1, sizeof(*p));
    if (!p)
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    p->n_steps = rt_model_plan_steps(m);
    p->max_batch = rt_model_config(m)->max_batch_size;
    p->steps = calloc((size_t)p->n_steps + 1, sizeof(*p->steps));
    p->by_batch = calloc((size_t)p->max_batch + 1, sizeof(*p->by_batch));
    if (!p->steps || !p->by_batch || pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->steps);
        free(p->by_batch);
        free(p);
        return rt_error_set(err, RT_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < p->n_steps; i++)
        rt_model_step_desc(m, i, 1, &p->steps[i], err);   /* in range: cannot fail */
    *out = p;
    return RT_OK;
}

void srv_step_profile_free(struct srv_step_profile *p)
{
    if (!p)
        return;
    for (int b = 0; b <= p->max_batch; b++) {
        free(p->by_batch[b].count);
        free(p->by_batch[b].ns);
    }
    pthread_mutex_destroy(&p->mu);
    free(p->by_batch);
    free(p->steps);
    free(p);
}

void srv_step_profile_record(void *user, const struct rt_step_timing *t)
{
    struct srv_step_profile *p = user;
    RT_ASSERT(t->batch >= 1 && t->batch <= p->max_batch && t->step >= 0 && t->step < p->n_steps);
    pthread_mutex_lock(&p->mu);
    struct pass_windows *w = &p->by_batch[t->batch];
    if (!w->ns) {
        w->count = calloc((size_t)p->n_steps, sizeof(*w->count));
        w->ns = malloc((size_t)p->n_steps * SRV_STEP_WINDOW * sizeof(*w->ns));
        if (!w->count || !w->ns) {
            free(w->count);
            free(w->ns);
            w->count = NULL;
            w->ns = NULL;
        }
    }
    if (w->ns) {
        uint64_t *n = &w->count[t->step];
        w->ns[(size_t)t->step * SRV_STEP_WINDOW + *n % SRV_STEP_WINDOW] = t->dur_ns;
        (*n)++;
    } else {
        p->dropped++;
    }
    pthread_mutex_unlock(&p->mu);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Median of a step's window (n values, copied to tmp and sorted). */
static double window_median_ns(const int64_t *ring, int n, int64_t *tmp)
{
    memcpy(tmp, ring, (size_t)n * sizeof(*tmp));
    qsort(tmp, (size_t)n, sizeof(*tmp), cmp_i64);
    int mid = n / 2;
    return n % 2 ? (double)tmp[mid] : ((double)tmp[mid - 1] + (double)tmp[mid]) / 2.0;
}

/* Passes whose every step is recorded: the last step's count (a pass's
 * steps arrive one by one, so a reader may see its first ones already). */
static uint64_t passes(const struct srv_step_profile *p, const struct pass_windows *w)
{
    return w->ns && p->n_steps > 0 ? w->count[p->n_steps - 1] : 0;
}

static void write_pass(const struct srv_step_profile *p, int batch, const struct pass_windows *w, int64_t *tmp,
                       struct srv_buf *out)
{
    uint64_t done = passes(p, w);
    double total = 0;
    srv_buf_printf(out, "{\"batch_size\":%d,\"passes\":%llu,\"window\":%d,\"median_us\":[", batch,
                   (unsigned long long)done, done < SRV_STEP_WINDOW ? (int)done : SRV_STEP_WINDOW);
    for (int i = 0; i < p->n_steps; i++) {
        int n = w->count[i] < SRV_STEP_WINDOW ? (int)w->count[i] : SRV_STEP_WINDOW;
        double med = n > 0 ? window_median_ns(w->ns + (size_t)i * SRV_STEP_WINDOW, n, tmp) / 1e3 : 0;
        total += med;
        srv_buf_printf(out, "%s%.3f", i ? "," : "", med);
    }
    srv_buf_printf(out, "],\"total_us\":%.3f}", total);
}

void srv_step_profile_write_json(struct srv_step_profile *p, const char *name, const char *version,
                                 const char *backend, struct srv_buf *out)
{
    int64_t *tmp = malloc(SRV_STEP_WINDOW * sizeof(*tmp));
    if (!tmp) {
        out->failed = true;
        return;
    }
    srv_buf_puts(out, "{\"name\":");
    srv_buf_json_str(out, name);
    srv_buf_puts(out, ",\"version\":");
    srv_buf_json_str(out, version);
    srv_buf_puts(out, ",\"backend\":");
    srv_buf_json_str(out, backend);
    srv_buf_printf(out, ",\"window\":%d,\"steps\":[", SRV_STEP_WINDOW);
    for (int i = 0; i < p->n_steps; i++) {
        srv_buf_printf(out, "%s{\"index\":%d,\"name\":", i ? "," : "", i);
        srv_buf_json_str(out, p->steps[i].name);
        srv_buf_puts(out, ",\"op\":");
        srv_buf_json_str(out, p->steps[i].op);
        srv_buf_puts(out, ",\"epilogue\":");
        srv_buf_json_str(out, p->steps[i].epilogue);
        srv_buf_putc(out, '}');
    }
    srv_buf_puts(out, "],\"batch_sizes\":[");
    pthread_mutex_lock(&p->mu);
    bool first = true;
    for (int b = 1; b <= p->max_batch; b++) {
        const struct pass_windows *w = &p->by_batch[b];
        if (passes(p, w) == 0)
            continue;
        if (!first)
            srv_buf_putc(out, ',');
        first = false;
        write_pass(p, b, w, tmp, out);
    }
    srv_buf_printf(out, "],\"dropped\":%llu}", (unsigned long long)p->dropped);
    pthread_mutex_unlock(&p->mu);
    free(tmp);
}
