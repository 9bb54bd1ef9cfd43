# mk/hardening.mk - fuzzing (fuzz, fuzz-NAME), static checks (lint), and the
# long load runs (soak, overload); none of them is part of make test.

# ---------------------------------------------------------------- fuzz
# Each tests/fuzz/fuzz_NAME.c is a libFuzzer program, built by clang with
# ASan and UBSan into build-fuzz/ and run for FUZZ_SECONDS from its checked-in
# seeds (tests/fuzz/corpus/NAME); new inputs go to build-fuzz/corpus/NAME,
# crashes to build-fuzz/crashes/ (they belong in tests/fuzz/regressions/NAME/).
FUZZ_SECONDS  ?= 60
FUZZ_BUILD    := build-fuzz
# The parsers need no optimised kernels (whose ISA dispatch uses gcc-only builtins).
FUZZ_KERNEL_SRC := $(call find_src,kernels/ref,*.c)
FUZZ_NAMES    := $(patsubst tests/fuzz/fuzz_%.c,%,$(filter-out tests/fuzz/fuzz_entry.c,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_RUNS     := $(FUZZ_NAMES:%=fuzz-%)
.PHONY: fuzz fuzz-build fuzz-build-all $(FUZZ_RUNS) lint lint-tidy soak overload
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

# ---------------------------------------------------------------- lint
# clang-tidy (checks in .clang-tidy) on every C file of the project, tests
# included, with the flags it is built with; one stamp per file, so a second
# `make lint` re-checks only what changed (any header change re-checks all).
# Then cppcheck over the same files, and a grep for calls and constructs the
# project bans (VLAs are -Wvla errors).
LINT_SRC  := $(call find_src,runtime server,*.c) $(wildcard clients/*/*.c) \
             $(call find_src,kernels/ref kernels/cpu,*.c) $(wildcard tests/*.c tests/*/*.c)
LINT_HDR  := $(call find_src,runtime server kernels,*.h) $(wildcard clients/*/*.h tests/*.h tests/*/*.h)
LINT_DIR  := $(BUILD)/lint
LINT_DEFS := $(CSTD) -I. -I$(GEN) -I$(BUILD)
ifeq ($(CUDA_ON),1)
  LINT_DEFS += -DINFERD_CUDA=1 -DINFERD_CUDA_MIN_SM=$(firstword $(CUDA_ARCHS)) -I$(CUDA_HOME)/include
else
  LINT_SRC  := $(call no_cuda,$(LINT_SRC))
endif
BANNED    := \b(alloca|atoi|atol|atoll|sprintf|vsprintf|strcpy|strcat|gets)[[:space:]]*\(
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

# ---------------------------------------------------------------- load
# A 10-minute soak at 80% of the rate the shipped model sustains here: zero
# errors and RSS growth under 1% (tests/soak.sh prints the figures).
SOAK_SECONDS ?= 600
soak: deps deps-client all
	BUILD=$(BUILD) SOAK_SECONDS=$(SOAK_SECONDS) tests/soak.sh

# Open-loop Poisson load at twice the rate resnet-mini sustains here: excess
# refused with 503, the queue bounded, accepted latency not growing
# (tests/overload.sh prints the figures; the load generator draws its sweep
# with gnuplot, deps-client). A minute or so; not in `make test`.
OVERLOAD_SECONDS ?= 30
overload: deps deps-client all
	BUILD=$(BUILD) OVERLOAD_SECONDS=$(OVERLOAD_SECONDS) tests/overload.sh
