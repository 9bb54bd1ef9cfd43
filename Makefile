# inferd - one Makefile for the daemon, the runtime, the kernels, tools and tests.
#
#   make run           install deps, build, start inferd on the shipped models
#   make test          install deps, build, run the whole no-GPU test suite
#   make test-readme   run every ```sh block of README.md as written (scratch copy; in .ci/run)
#   make fuzz          every libFuzzer target in tests/fuzz/ for FUZZ_SECONDS each (clang; -j2: two at once)
#   make fuzz-onnx     one libFuzzer target alone (fuzz-NAME for tests/fuzz/fuzz_NAME.c)
#   make lint          clang-tidy and cppcheck on the project's C, and the banned-call grep
#   make soak          a 10-minute load at 80% of the sustainable rate (docs/reliability.md)
#   make overload      open-loop load at 2x the sustainable rate: 503s, bounded queue and latency
#   make test-onnx     the ONNX backend test suite as a table (BACKEND=cuda on a GPU)
#   make test-deploy   deployment checks: compose, Dockerfile, Kubernetes, nginx scale-out (deploy/)
#   make bench         CPU benchmarks against PyTorch, and INT8 against FP32
#   make accuracy      FP32 / FP16 / INT8 top-1 of the shipped models (docs/quantization.md)
#   make bench-loadgen inferd-loadgen's request rate against wrk's (docs/performance.md)
#   make bench-server  inferd's HTTP throughput and latency against bare libmicrohttpd
#   make test-gpu      every GPU check (tests/gpu_check.sh full); skips with the reason without a GPU
#   make bench-gpu     GPU benchmarks against cuBLAS, cuDNN and PyTorch
#   make gpu-bundle    pack the GPU programs for a GPU machine (tests/gpu_check.sh runs them there)
#   make cuda-sass     read the kernels' SASS: tensor cores where meant (no GPU needed; in make test)
#   make cuda-report   ptxas resource report (registers, spills) per CUDA kernel
#   make models        retrain and export the shipped models (PyTorch)
#   make models-imagenet generate ResNet-50 and MobileNetV2 (seeded, not committed)
#   make test-large    generate them when missing, then their large_ tests against PyTorch
#   make bench-imagenet their CPU images/s against PyTorch
#   make bench-peers   the four models against onnxruntime and OpenVINO, FP32 and INT8 (PyPI; PEERS_ARGS=--quick)
#   make bench-onnx-exports  PyTorch's ONNX exports (segmentation, ConvNeXt, ...) against onnxruntime, batch 1
#
# Switches:
CUDA     ?= auto      # auto | 0 | 1 : compile the CUDA backend when nvcc is found
DEBUG    ?= 0         # 1: -O0, assertions on
SANITIZE ?=           # e.g. address,undefined  or  thread
PORT     ?= 8000
PYTHON   ?= /usr/bin/python3

BUILD    := build
CC       ?= cc
ifeq ($(origin CC),default)
CC       := gcc
endif

# The rest lives in mk/, one piece per concern. build.mk comes first: the
# others use its flags, source lists and CUDA_ON. (The pieces' rules are read
# before `all`, hence the explicit default goal.)
.DEFAULT_GOAL := all
include mk/build.mk      # flags, CUDA, sources; library, programs, test runner, benchmarks
include mk/deps.mk       # make deps*: the Debian packages
include mk/tests.mk      # test, test-onnx, test-large, accuracy, bench*
include mk/gpu.mk        # test-gpu, bench-gpu, gpu-bundle*, cuda-sass, cuda-report
include mk/deploy.mk     # test-deploy
include mk/models.mk     # models, models-imagenet
include mk/peers.mk      # bench-peers, bench-onnx-exports
include mk/hardening.mk  # fuzz*, lint, soak, overload

.PHONY: all run clean help
# bench_peer_inferd too: bench_peers.py run by hand times whatever binary is there
all: $(PROGRAMS) $(BUILD)/run-tests $(BUILD)/onnx-suite $(BUILD)/bench_peer_inferd

help:
	@sed -n '1,/^# Switches/p' Makefile | sed 's/^# \{0,1\}//'

run: deps all
	$(BUILD)/inferd --model-repository model_repository --http-port $(PORT)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
