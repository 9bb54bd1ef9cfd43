/*
 * bench_peer_inferd.c - inferd's side of `make bench-peers`: one model on
 * the CPU backend, driven line by line over stdin by
 * models/bench_peers.py, so that inferd is timed through its C API while
 * the driver interleaves its windows with onnxruntime's and OpenVINO's.
 *
 *   build/bench_peer_inferd MODEL_DIR [--threads N]
 *
 * Prints "ready IN OUT" (floats per sample of input and output), then
 * answers each command with one line:
 *
 *   load B IN_FILE OUT_FILE   reads B samples (raw float32) from IN_FILE,
 *                             runs them once and writes the B outputs to
 *                             OUT_FILE (raw float32); answers "ok"
 *   time N                    runs the loaded batch N times; answers the
 *                             seconds taken (CLOCK_MONOTONIC)
 *
 * and ends at end of input. Errors go to stderr and end the program with
 * status 1; the driver reports them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt_model.h"

struct peer {
    struct rt_session *s;
    const struct rt_model_config *cfg;
    float *x, *y;   /* [batch, in], [batch, out] */
    int batch;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int run_once(struct peer *p)
{
    const float *in[1] = {p->x};
    float *out[1] = {p->y};
    struct rt_error err;
    if (rt_session_run(p->s, p->batch, in, out, &err) != RT_OK) {
        fprintf(stderr, "bench_peer_inferd: run failed: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* n floats between path and buf; 0 on success. */
static int read_floats(const char *path, float *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    size_t done = f ? fread(buf, sizeof(float), n, f) : 0;
    if (f)
        fclose(f);
    if (done != n) {
        fprintf(stderr, "bench_peer_inferd: %s: cannot read %zu floats\n", path, n);
        return -1;
    }
    return 0;
}

static int write_floats(const char *path, const float *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    size_t done = f ? fwrite(buf, sizeof(float), n, f) : 0;
    if (f && fclose(f) != 0)
        done = 0;
    if (done != n) {
        fprintf(stderr, "bench_peer_inferd: %s: cannot write %zu floats\n", path, n);
        return -1;
    }
    return 0;
}

static int load_batch(struct peer *p, int batch, const char *in_path, const char *out_path)
{
    if (batch < 1 || batch > p->cfg->max_batch_size) {
        fprintf(stderr, "bench_peer_inferd: batch %d outside 1..%d\n", batch, p->cfg->max_batch_size);
        return -1;
    }
    size_t in_n = (size_t)batch * (size_t)p->cfg->inputs[0].sample_elems;
    size_t out_n = (size_t)batch * (size_t)p->cfg->outputs[0].sample_elems;
    free(p->x);
    free(p->y);
    p->x = malloc(sizeof(float) * in_n);
    p->y = malloc(sizeof(float) * out_n);
    p->batch = batch;
    if (!p->x || !p->y) {
        fprintf(stderr, "bench_peer_inferd: out of memory\n");
        return -1;
    }
    if (read_floats(in_path, p->x, in_n) != 0 || run_once(p) != 0)
        return -1;
    return write_floats(out_path, p->y, out_n);
}

/* Serves the commands of the header; 0 at end of input. */
static int serve(struct peer *p)
{
    char line[1200], in_path[512], out_path[512];
    while (fgets(line, sizeof(line), stdin)) {
        int batch = 0;
        long n = 0;
        if (sscanf(line, "load %d %511s %511s", &batch, in_path, out_path) == 3) { // NOLINT(cert-err34-c): the driver's own commands
            if (load_batch(p, batch, in_path, out_path) != 0)
                return -1;
            printf("ok\n");
        } else if (sscanf(line, "time %ld", &n) == 1 && n >= 1 && p->batch > 0) { // NOLINT(cert-err34-c): as above
            double t = now_s();
            for (long i = 0; i < n; i++)
                if (run_once(p) != 0)
                    return -1;
            printf("%.9f\n", now_s() - t);
        } else {
            fprintf(stderr, "bench_peer_inferd: bad command: %s", line);
            return -1;
        }
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int threads = 2;
    if (argc == 4 && strcmp(argv[2], "--threads") == 0)
        threads = (int)strtol(argv[3], NULL, 10);
    if ((argc != 2 && argc != 4) || threads < 1 || threads > 256) {
        fprintf(stderr, "usage: %s MODEL_DIR [--threads N]\n", argv[0]);
        return 2;
    }
    struct rt_error err;
    struct rt_backend *b = NULL;
    struct rt_model *m = NULL;
    struct peer p = {0};
    if (rt_backend_create(RT_BACKEND_CPU, &(struct rt_backend_options){.threads = threads}, &b, &err) != RT_OK ||
        rt_model_load(argv[1], b, &m, &err) != RT_OK || rt_session_create(m, &p.s, &err) != RT_OK) {
        fprintf(stderr, "bench_peer_inferd: %s: %s\n", argv[1], err.msg);
        rt_model_free(m);
        rt_backend_free(b);
        return 1;
    }
    p.cfg = rt_model_config(m);
    fprintf(stderr, "inferd: %s\n", rt_backend_describe(b));
    printf("ready %lld %lld\n", (long long)p.cfg->inputs[0].sample_elems, (long long)p.cfg->outputs[0].sample_elems);
    fflush(stdout);
    int rc = serve(&p) == 0 ? 0 : 1;
    free(p.x);
    free(p.y);
    rt_session_free(p.s);
    rt_model_free(m);
    rt_backend_free(b);
    return rc;
}
