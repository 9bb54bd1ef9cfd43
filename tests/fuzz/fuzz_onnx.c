/* fuzz_onnx.c - libFuzzer target: the ONNX loader (see fuzz_entry.h).
 * Seeds: tests/fuzz/corpus/onnx (small models of the ONNX test suite). */
#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_onnx(data, size);
}
