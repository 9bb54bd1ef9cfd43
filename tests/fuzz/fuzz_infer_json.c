/* fuzz_infer_json.c - libFuzzer target: the infer_json parser (see fuzz_entry.h). */
#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_infer_json(data, size);
}
