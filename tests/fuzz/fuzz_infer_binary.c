/* fuzz_infer_binary.c - libFuzzer target: the infer_binary parser (see fuzz_entry.h). */
#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_infer_binary(data, size);
}
