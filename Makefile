# inferd - one Makefile for the daemon, the runtime, the kernels, tools and tests.
#
#   make run           install deps, build, start inferd on the shipped models
#   make test          install deps, build, run the whole no-GPU test suite
#   make bench         CPU benchmarks against PyTorch
#   make bench-loadgen inferd-loadgen's request rate against wrk's (docs/performance.md)
#   make bench-server  inferd's HTTP throughput and latency against bare libmicrohttpd
#   make test-gpu      the GPU suite, then once more under compute-sanitizer memcheck
#   make bench-gpu     GPU benchmarks against cuBLAS, cuDNN and PyTorch
#   make gpu-bundle    pack the GPU programs for a GPU machine (tests/gpu_check.sh runs them there)
#   make cuda-report   ptxas resource report (registers, spills) per CUDA kernel
#   make models        retrain and export the shipped models (PyTorch)
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
RUNTIME_SRC := $(wildcard runtime/*.c)
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
CLIENT_LIB_SRC := $(wildcard clients/lib/*.c)
INFERCTL_SRC   := $(wildcard clients/inferctl/*.c)
LOADGEN_SRC    := $(wildcard clients/loadgen/*.c)
# The load generator's parts, without its main, are linked into the tests too.
LOADGEN_PARTS  := $(filter-out clients/loadgen/main.c,$(LOADGEN_SRC))
TEST_SRC    := $(wildcard tests/*.c)
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

.PHONY: all deps deps-python deps-client deps-wrk bench-loadgen bench-server run test test-gpu bench bench-gpu gpu-bundle cuda-report models clean help
all: $(PROGRAMS) $(BUILD)/run-tests

help:
	@sed -n '1,/^# Switches/p' Makefile | sed 's/^# \{0,1\}//'

# ---------------------------------------------------------------- deps
# Debian packages the build and the tests need; only missing ones are installed.
DEBS        := gcc make pkg-config zlib1g-dev libpng-dev libjpeg62-turbo-dev libcjson-dev \
               libmicrohttpd-dev libcurl4-openssl-dev dataset-fashion-mnist curl \
               libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata
DEBS_PYTHON := python3-torch python3-numpy
DEBS_CLIENT := gnuplot-nox python3  # loadgen --sweep plots, the Python example (both tested)
DEBS_WRK    := wrk            # bench-loadgen's yardstick
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

# ---------------------------------------------------------------- build rules
# Objects depend on a stamp of the flags, so switching CUDA, DEBUG or
# SANITIZE rebuilds what they affect.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_TEXT  := $(CC) $(CFLAGS) CUDA=$(CUDA_ON)
$(shell mkdir -p $(BUILD) && (echo '$(FLAGS_TEXT)' | cmp -s - $(FLAGS_STAMP) || echo '$(FLAGS_TEXT)' > $(FLAGS_STAMP)))

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	@$(CC) $(CFLAGS) $(if $(findstring _avx512,$<),$(AVX512_FLAGS),$(if $(findstring _avx2,$<),$(AVX2_FLAGS),)) -c $< -o $@

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
$(BUILD)/obj/runtime/onnx_%.o: | $(ONNX_PB_C)

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/inferctl: $(INFERCTL_SRC:%.c=$(BUILD)/obj/%.o) $(CLIENT_LIB_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(if $(CLIENT_LIB_SRC),-lcurl,)

$(BUILD)/inferd: $(SERVER_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
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

$(SERVER_LIB): $(filter-out %/srv_main.o,$(SERVER_SRC:%.c=$(BUILD)/obj/%.o))
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/run-tests: $(TEST_SRC:%.c=$(BUILD)/obj/%.o) $(CLIENT_LIB_SRC:%.c=$(BUILD)/obj/%.o) \
                    $(LOADGEN_PARTS:%.c=$(BUILD)/obj/%.o) $(SERVER_LIB) $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lcurl

# Each tests/bench/bench_NAME.c is one benchmark program, build/bench_NAME.
$(BUILD)/bench_%: $(BUILD)/obj/tests/bench/bench_%.o $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# The HTTP benchmark: its own rule, for the bare libmicrohttpd server beside it.
$(BUILD)/bench_server: $(BUILD)/obj/tests/bench/bench_server.o $(BUILD)/obj/tests/bench/server_bare.o $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lmicrohttpd

# ---------------------------------------------------------------- commands
run: deps all
	$(BUILD)/inferd --model-repository model_repository --http-port $(PORT)

test: deps deps-client all
	$(BUILD)/run-tests

bench: deps deps-python $(BUILD)/bench_models_cpu
	$(BUILD)/bench_models_cpu

bench-server: deps deps-wrk $(BUILD)/inferd $(BUILD)/bench_server
	$(BUILD)/bench_server

# "Check the checker": inferd-loadgen's request rate against wrk's on GET /v2/health/live.
bench-loadgen: deps deps-wrk all $(BUILD)/bench_loadgen_vs_wrk
	$(BUILD)/bench_loadgen_vs_wrk

ifeq ($(CUDA_ON),1)
COMPUTE_SANITIZER ?= $(or $(shell command -v compute-sanitizer 2>/dev/null),$(CUDA_HOME)/bin/compute-sanitizer)
test-gpu: deps all
	$(BUILD)/run-tests --gpu
	$(COMPUTE_SANITIZER) --tool memcheck --error-exitcode 1 $(BUILD)/run-tests --gpu cuda_op_ cuda_session_ cuda_model_

bench-gpu: deps $(BUILD)/bench_gpu
	$(BUILD)/bench_gpu

# Everything tests/gpu_check.sh needs on a GPU machine without our -dev
# packages: the programs, their libraries and the Fashion-MNIST test split.
gpu-bundle: deps all $(BUILD)/bench_gpu
	@mkdir -p .git/info   # bundle.sh records .bundle/ there; a fresh clone may lack the folder
	../shared/tools/bundle.sh $(PROGRAMS) $(BUILD)/run-tests $(BUILD)/bench_gpu
	mkdir -p .bundle/data && cp /usr/share/datasets/fashion-mnist/t10k-* .bundle/data/

cuda-report:
	@for f in $(CU_SRC); do echo "== $$f"; \
	  $(NVCC) $(NVCCFLAGS) -Xptxas -v -c $$f -o /dev/null 2>&1 | grep -E 'Compiling entry|registers|spill'; done
else
test-gpu bench-gpu gpu-bundle cuda-report:
	@echo "make $@ needs the CUDA build (nvcc was not found, or CUDA=0)"; exit 1
endif

models: deps-python
	$(PYTHON) models/train.py --model lenet5 --out model_repository/lenet5
	$(PYTHON) models/train.py --model resnet-mini --out model_repository/resnet-mini

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
