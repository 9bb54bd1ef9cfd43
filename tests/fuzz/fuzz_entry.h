/*
 * fuzz_entry.h - the parser entry points the fuzz targets drive, shared with
 * the regression test (tests/test_fuzzreg.c) so a crash input found by a
 * fuzzer is replayed through exactly the code that crashed.
 *
 * Each takes arbitrary bytes, must never crash, leak or trip a sanitizer,
 * and returns 0 (libFuzzer's convention). Nothing touches the disk or the
 * network; the model config the request parsers check against is built in.
 */
#ifndef FUZZ_ENTRY_H
#define FUZZ_ENTRY_H

#include <stddef.h>
#include <stdint.h>

/* KServe v2 JSON inference request -> validated tensors -> response. */
int fuzz_infer_json(const uint8_t *data, size_t size);
/* Triton binary tensor extension: the first 2 bytes (LE) give
 * Inference-Header-Content-Length, the rest is the body. */
int fuzz_infer_binary(const uint8_t *data, size_t size);
/* multipart/form-data: the bytes up to the first '\n' are the Content-Type
 * header value, the rest is the body. */
int fuzz_multipart(const uint8_t *data, size_t size);
/* PNG / JPEG / PNM decode under the server's caps, then preprocessing. */
int fuzz_image(const uint8_t *data, size_t size);
/* A model from memory: 4 bytes (LE) give the safetensors length, then the
 * safetensors file, then model.json; parsed, validated and planned. */
int fuzz_model(const uint8_t *data, size_t size);

/* model.onnx bytes: parsed by the ONNX loader, validated and planned. */
int fuzz_onnx(const uint8_t *data, size_t size);

/* Dispatch by target name ("infer_json", ...); -1 for an unknown name. */
int fuzz_entry_run(const char *target, const uint8_t *data, size_t size);

#endif /* FUZZ_ENTRY_H */
