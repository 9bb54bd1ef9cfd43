/* fuzz_model.c - libFuzzer target: the model parser (see fuzz_entry.h). */
#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_model(data, size);
}
