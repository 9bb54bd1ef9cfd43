/*
 * test_fuzzreg.c - every input a fuzzer ever crashed on (tests/fuzz/
 * regressions/<target>/) and every seed (tests/fuzz/corpus/<target>/),
 * replayed through the same entry points the fuzz targets call. Under
 * make test SANITIZE=address,undefined a regression fails loudly; in the
 * plain build it must at least not crash.
 */
#include <dirent.h>
#include <stdlib.h>

#include "test.h"
#include "tests/fuzz/fuzz_entry.h"

/* Feeds every file of dir to target; the count fed, or -1 on a read error. */
static int replay_dir(const char *target, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0; /* no regressions yet for this target */
    int fed = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        uint8_t *buf = malloc(1 << 20);
        size_t n = buf ? fread(buf, 1, 1 << 20, f) : 0;
        fclose(f);
        if (!buf) {
            fed = -1;
            break;
        }
        /* An exact-size copy, as the fuzzer hands them, for ASan's sake. */
        uint8_t *exact = malloc(n ? n : 1);
        if (exact) {
            memcpy(exact, buf, n);
            fuzz_entry_run(target, exact, n);
            fed++;
        }
        free(exact);
        free(buf);
    }
    closedir(d);
    return fed;
}

static enum test_result replay(const char *target)
{
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", test_root(), target);
    int seeds = replay_dir(target, dir);
    snprintf(dir, sizeof(dir), "%s/tests/fuzz/regressions/%s", test_root(), target);
    int crashes = replay_dir(target, dir);
    TEST_FAIL_IF(seeds < 1 || crashes < 0, "%s: %d seeds, %d regressions read", target, seeds,
                 crashes);
    printf("  %d seeds, %d regression inputs\n", seeds, crashes);
    return TEST_PASS;
}

TEST(fuzzreg_infer_json) { return replay("infer_json"); }
TEST(fuzzreg_infer_binary) { return replay("infer_binary"); }
TEST(fuzzreg_multipart) { return replay("multipart"); }
TEST(fuzzreg_image) { return replay("image"); }
TEST(fuzzreg_model) { return replay("model"); }
TEST(fuzzreg_onnx) { return replay("onnx"); }
