# mk/gpu.mk - the GPU targets: test-gpu, bench-gpu, gpu-bundle,
# gpu-bundle-check, cuda-sass, cuda-report. Without the CUDA build each says
# why it cannot run (test-gpu skips, the others fail).
#
# tests/gpu_check.sh runs the GPU checks in steps (quick | full | bench
# | STEP...); make test-gpu runs `full` on the programs in $(BUILD). A
# machine without a usable GPU skips every GPU step with the reason.
.PHONY: test-gpu bench-gpu gpu-bundle gpu-bundle-check cuda-sass cuda-report
BUNDLE_PROGRAMS = $(PROGRAMS) $(BUILD)/run-tests $(BUILD)/bench_gpu
CUDA_TOOLS     := $(BUILD)/cuda-tools   # cuobjdump and nvdisasm from PyPI, when not installed
ifeq ($(CUDA_ON),1)
test-gpu: deps all
	tests/gpu_check.sh --bin $(BUILD) --logs $(BUILD)/gpu-logs full

bench-gpu: deps $(BUILD)/bench_gpu
	$(BUILD)/bench_gpu

# Everything tests/gpu_check.sh needs on a GPU machine without our -dev
# packages, in .bundle/: the programs (stripped, RPATH to the bundle's
# libraries), the libraries, the Fashion-MNIST test split, the ONNX cases
# the CPU passes; checked, size included (docs/performance.md, "Running the
# GPU checks").
gpu-bundle: deps deps-bundle all $(BUILD)/bench_gpu
	SUITE=$(BUILD)/onnx-suite tests/gpu_bundle.sh .bundle $(BUNDLE_PROGRAMS)
	tests/gpu_bundle_check.sh .bundle

# The same bundle made and checked in a scratch folder (part of make test).
gpu-bundle-check: deps deps-bundle all $(BUILD)/bench_gpu
	@SUITE=$(BUILD)/onnx-suite tests/gpu_bundle.sh $(BUILD)/bundle-check $(BUNDLE_PROGRAMS)
	@tests/gpu_bundle_check.sh $(BUILD)/bundle-check
	@rm -rf $(BUILD)/bundle-check

# The kernels' machine code read without a GPU: tensor cores where meant,
# none for FP32 (part of make test).
cuda-sass: $(CU_OBJ)
	CUDA_ARCHS="$(CUDA_ARCHS)" tests/cuda_sass_check.sh $(CUDA_TOOLS) $(CU_OBJ)

cuda-report:
	@for f in $(CU_SRC); do echo "== $$f"; \
	  $(NVCC) $(NVCCFLAGS) -Xptxas -v -c $$f -o /dev/null 2>&1 | grep -E 'Compiling entry|registers|spill'; done
else
test-gpu:
	@echo "make test-gpu: skipped: this build has no CUDA backend (nvcc was not found, or CUDA=0)"
bench-gpu gpu-bundle gpu-bundle-check cuda-sass cuda-report:
	@echo "make $@ needs the CUDA build (nvcc was not found, or CUDA=0)"; exit 1
endif
