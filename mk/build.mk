# mk/build.mk - flags, CUDA detection, source lists, and the compile and link
# rules of the library, the programs, the test runner and the benchmarks.
# Included first by the Makefile: the other pieces use its variables.

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
LDLIBS   += -lm -lz -lpng -ljpeg -lwebp -lcjson -lprotobuf-c

# Per-file instruction sets: foo_avx2.c and foo_avx512.c are compiled for that
# ISA only and called after a run-time CPU check (kernels/cpu/kcpu_isa.c).
AVX2_FLAGS   := -mavx2 -mfma -mf16c
# AMX too: only kernels that kq8_amx() let run use its tile instructions (the
# compiler itself never emits them).
AVX512_FLAGS := -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni -mfma -mf16c -mamx-tile -mamx-int8
isa_flags     = $(if $(findstring _avx512,$1),$(AVX512_FLAGS),$(if $(findstring _avx2,$1),$(AVX2_FLAGS),))

# Files named $2 anywhere under each folder of $1, sub-folders included,
# sorted (C order) folder by folder: runtime/ and kernels/ grow sub-folders
# that name their parts, and a one-level wildcard would miss them.
find_src = $(foreach d,$1,$(shell find $d -type f -name '$2' 2>/dev/null | LC_ALL=C sort))
# $1 without the files whose path names CUDA (not built without nvcc).
no_cuda  = $(strip $(foreach f,$1,$(if $(findstring cuda,$f),,$f)))

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
ifeq ($(call find_src,runtime,backend_cuda*.c),)
  CUDA_ON := 0
endif

# ---------------------------------------------------------------- sources
KERNEL_SRC  := $(call find_src,kernels/ref kernels/cpu,*.c)
RUNTIME_SRC := $(call find_src,runtime,*.c)
ifneq ($(CUDA_ON),1)
  RUNTIME_SRC := $(call no_cuda,$(RUNTIME_SRC))
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

# (server/ui/ holds the web page and embed.c, a build-time tool, below)
SERVER_SRC  := $(filter-out server/ui/%,$(call find_src,server,*.c))
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
# inferctl tune's choice rules, called by tests/test_tune.c.
TUNE_PARTS     := $(wildcard clients/inferctl/tune_frontier.c)
TEST_SRC    := $(wildcard tests/*.c)
# The parsers' fuzz entry points, for the fuzzreg_ tests that replay
# tests/fuzz/regressions/ through exactly the fuzzed code.
TEST_SRC    += tests/fuzz/fuzz_entry.c
ifneq ($(CUDA_ON),1)
  TEST_SRC  := $(filter-out tests/test_cuda%.c,$(TEST_SRC))
endif

ifeq ($(CUDA_ON),1)
  NVCC       := $(if $(shell command -v nvcc 2>/dev/null),nvcc,/usr/local/cuda/bin/nvcc)
  CUDA_HOME  := $(patsubst %/bin/nvcc,%,$(realpath $(NVCC_FOUND)))
  CU_SRC     := $(call find_src,kernels/cuda,*.cu)
  CU_OBJ     := $(CU_SRC:%.cu=$(BUILD)/obj/%.o)
  # A fat binary: SASS for T4 (sm_75), A100 (80), A10G / RTX 30 (86),
  # L4 / RTX 40 (89) and H100 / H200 (90), plus sm_90 PTX that newer GPUs
  # compile at load. CUDA_ARCHS="90" builds one for a quicker edit cycle.
  # Ascending: the first is the oldest GPU accepted, the last gets the PTX.
  CUDA_ARCHS ?= 75 80 86 89 90
  # The fat binary compressed: five targets with line info would be 8 MB
  # per program uncompressed, too large for the GPU bundle. How depends on
  # the nvcc found (its major version, read here at build time):
  #  - CUDA 13 and later: --compress-mode=size (1.1 MB); any driver that
  #    runs a CUDA 13 runtime (R580+) reads it.
  #  - CUDA 12.x (the Docker image's toolkit, so that R535 drivers run it):
  #    -Xfatbin=-compress-all, the compression every CUDA 12 driver
  #    (R525.60.13+) reads. 12.x nvcc before 12.8 has no --compress-mode,
  #    and its size mode would need an R550 driver.
  NVCC_MAJOR := $(shell $(NVCC) --version 2>/dev/null | sed -n 's/.*release \([0-9][0-9]*\)\..*/\1/p' | head -n 1)
  NVCC_COMPRESS := $(if $(shell [ 0$(NVCC_MAJOR) -ge 13 ] && echo y),--compress-mode=size,-Xfatbin=-compress-all)
  NVCCFLAGS  := -std=c++17 -O3 -I. -lineinfo $(NVCC_COMPRESS) -Xcompiler -fPIC,-Wall \
                $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
                -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS)) \
                -Werror all-warnings
  CFLAGS     += -DINFERD_CUDA=1 -DINFERD_CUDA_MIN_SM=$(firstword $(CUDA_ARCHS)) -I$(CUDA_HOME)/include
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

# ---------------------------------------------------------------- build rules
# Objects depend on a stamp of the flags, so switching CUDA, DEBUG or
# SANITIZE rebuilds what they affect.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_TEXT  := $(CC) $(CFLAGS) CUDA=$(CUDA_ON) $(NVCCFLAGS)
$(shell mkdir -p $(BUILD) && (echo '$(FLAGS_TEXT)' | cmp -s - $(FLAGS_STAMP) || echo '$(FLAGS_TEXT)' > $(FLAGS_STAMP)))

# (objects mirror the source tree: $(BUILD)/obj/runtime/a/b.o for runtime/a/b.c)
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

# Only the loader (runtime's onnx_*.c, in whatever sub-folder) sees the
# generated header; it must exist before they compile.
ONNX_RT_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(foreach f,$(RUNTIME_SRC),$(if $(filter onnx_%,$(notdir $f)),$f)))
$(ONNX_RT_OBJ): CFLAGS += -I$(GEN)
$(ONNX_RT_OBJ): | $(ONNX_PB_C)

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

# (inferctl tune drives inferd-loadgen's engine: the loadgen's parts are linked in)
$(BUILD)/inferctl: $(INFERCTL_SRC:%.c=$(BUILD)/obj/%.o) $(CLIENT_LIB_SRC:%.c=$(BUILD)/obj/%.o) \
                   $(LOADGEN_PARTS:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) $(if $(CLIENT_LIB_SRC),-lcurl,)

$(BUILD)/inferd: $(SERVER_SRC:%.c=$(BUILD)/obj/%.o) $(UI_OBJ) $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lmicrohttpd

$(BUILD)/inferd-loadgen: $(LOADGEN_SRC:%.c=$(BUILD)/obj/%.o) $(CLIENT_LIB_SRC:%.c=$(BUILD)/obj/%.o) $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lcurl

# The test registry is generated from the TEST(name) lines of tests/*.c;
# which files those are depends on CUDA (the flags stamp), so a build
# switched to CUDA=1 lists the CUDA tests again.
$(BUILD)/test_list.h: $(TEST_SRC) $(FLAGS_STAMP)
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
# over the generated protobuf code (the runner also rewrites models with it).
ONNX_SUITE_OBJ := $(BUILD)/obj/tests/onnx/suite.o
ONNX_TEST_OBJ  := $(ONNX_SUITE_OBJ) $(BUILD)/obj/tests/onnx/builder.o
$(BUILD)/obj/tests/onnx/%.o: CFLAGS += -I$(GEN)
$(BUILD)/obj/tests/onnx/builder.o $(ONNX_SUITE_OBJ): | $(ONNX_PB_C)

$(BUILD)/run-tests: $(TEST_SRC:%.c=$(BUILD)/obj/%.o) $(CLIENT_LIB_SRC:%.c=$(BUILD)/obj/%.o) \
                    $(LOADGEN_PARTS:%.c=$(BUILD)/obj/%.o) $(TUNE_PARTS:%.c=$(BUILD)/obj/%.o) $(ONNX_TEST_OBJ) \
                    $(SERVER_LIB) $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lcurl

$(BUILD)/onnx-suite: $(BUILD)/obj/tests/onnx/main.o $(ONNX_SUITE_OBJ) $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# Each tests/bench/bench_NAME.c is one benchmark program, build/bench_NAME.
$(BUILD)/bench_%: $(BUILD)/obj/tests/bench/bench_%.o $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# The GPU benchmark writes model variants as the GPU tests do; its GEMM
# tables are a file of their own.
$(BUILD)/bench_gpu: $(BUILD)/obj/tests/model_variant.o $(BUILD)/obj/tests/bench/gpu_gemm.o

# The HTTP benchmark: its own rule, for the bare libmicrohttpd server beside it.
$(BUILD)/bench_server: $(BUILD)/obj/tests/bench/bench_server.o $(BUILD)/obj/tests/bench/server_bare.o $(LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lmicrohttpd
