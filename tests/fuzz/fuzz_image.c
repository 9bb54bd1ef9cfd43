/* fuzz_image.c - libFuzzer target: the image parser (see fuzz_entry.h). */
#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_image(data, size);
}
