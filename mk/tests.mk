# mk/tests.mk - the test suites and the CPU benchmarks: test, test-readme, test-onnx,
# test-onnx-exports, test-large, accuracy, bench, bench-check, bench-server,
# bench-loadgen, bench-imagenet.
.PHONY: test test-readme test-onnx test-onnx-exports test-large test-emulated-avx512 accuracy bench bench-check bench-server bench-loadgen \
        bench-imagenet

# (CUDA builds first read the kernels' SASS and check the GPU bundle; the
# test runner's summary line stays last)
test: deps deps-client deps-ui all
ifeq ($(CUDA_ON)$(SANITIZE),1)
	@$(MAKE) --no-print-directory cuda-sass gpu-bundle-check
endif
	$(BUILD)/run-tests

# Every ```sh block of README.md, run as written in a scratch copy of the
# checkout (tests/readme/test_readme.py; about 2.5 minutes: evaluations,
# quantisation, the load generator, tune's 60 s budget), so not part of
# make test; .ci/run runs it.
test-readme: deps deps-client deps-python all
	timeout -k 10 1500 $(PYTHON) tests/readme/test_readme.py --build $(BUILD)

# The whole ONNX backend test suite, a table per folder (BACKEND=cuda on a GPU).
BACKEND ?= cpu
test-onnx: deps $(BUILD)/onnx-suite
	$(BUILD)/onnx-suite --backend $(BACKEND)

# torchvision models exported to ONNX by PyTorch and run against its
# outputs (tests/onnx/torchvision_exports.py; about 15 s). .ci/run runs it.
test-onnx-exports: deps deps-python $(BUILD)/onnx-suite
	$(PYTHON) tests/onnx/torchvision_exports.py --build $(BUILD)

# The large_ tests, on the ImageNet-scale models (mk/models.mk) generated
# when missing.
test-large: deps deps-python $(BUILD)/run-tests
	@ls $(IMAGENET_FILES) >/dev/null 2>&1 || $(MAKE) --no-print-directory models-imagenet
	$(BUILD)/run-tests --large large_

# The AVX-512 kernels checked on a CPU without AVX-512 (correctness only,
# never speed): every *_avx512.c built for AVX2 with SIMDe standing in
# (tests/emu/immintrin.h), kcpu_isa_hardware() reporting AVX-512 with VNNI,
# and the kernel and INT8 model tests run under every ISA, AVX-512 included.
# Unoptimised (-O0): SIMDe's inline lanes take GCC minutes a file at -O1.
# On an AVX-512 machine `make test` runs them natively as well.
EMU_BUILD ?= build-emu
test-emulated-avx512: deps deps-emu
	CFLAGS="-Itests/emu -DKCPU_EMULATED_AVX512 -Wno-psabi" $(MAKE) --no-print-directory BUILD=$(EMU_BUILD) CUDA=0 \
	    AVX512_FLAGS="-mavx2 -mfma -mf16c" OPT=-O0 $(EMU_BUILD)/run-tests
	$(EMU_BUILD)/run-tests '^int8_conv' '^int8_gemm' '^int8_linear' '^int8_pools' '^int8_elem' '^int8_concat' \
	    '^int8_model_matches' '^int8_shipped_models_identical' '^kernels_' '^backend_ops_' '^layout_nhwc'

bench: deps deps-python $(BUILD)/bench_models_cpu $(BUILD)/bench_int8_cpu $(BUILD)/bench_int8_layout \
       $(BUILD)/bench_winograd
	$(BUILD)/bench_models_cpu
	$(BUILD)/bench_int8_cpu
	$(BUILD)/bench_int8_layout
	$(BUILD)/bench_winograd

# The benchmarks that compare two kernels' outputs before timing them, one
# short round each (seconds): a benchmark left behind by a kernel's change
# (bench_winograd once packed the pixel tile's weights the old way, and
# every row failed) fails here, not in a measurement run. .ci/run runs it.
bench-check: deps $(BUILD)/bench_winograd $(BUILD)/bench_int8_layout
	$(BUILD)/bench_winograd --repeats 1
	$(BUILD)/bench_int8_layout --repeats 1

# Top-1 of FP32, FP16 and INT8 (each calibration method) on the test set (docs/quantization.md).
accuracy: deps $(BUILD)/inferctl
	$(BUILD)/inferctl accuracy model_repository/lenet5 model_repository/resnet-mini

bench-server: deps deps-wrk $(BUILD)/inferd $(BUILD)/bench_server
	$(BUILD)/bench_server

# "Check the checker": inferd-loadgen's request rate against wrk's on GET /v2/health/live.
bench-loadgen: deps deps-wrk all $(BUILD)/bench_loadgen_vs_wrk
	$(BUILD)/bench_loadgen_vs_wrk

bench-imagenet: deps deps-python $(BUILD)/bench_models_cpu
	@ls $(IMAGENET_FILES) >/dev/null 2>&1 || $(MAKE) --no-print-directory models-imagenet
	$(BUILD)/bench_models_cpu --models resnet50,mobilenet_v2 --batches 1,32 --repeats 5
