#!/usr/bin/env bash
# The GPU checks in steps, each with its own time limit and log, and a
# summary table last. Made for a GPU machine that has the NVIDIA driver,
# CUDA libraries and PyTorch but none of our build dependencies, and gives
# a command 10 minutes.
#
#   here:             make gpu-bundle     (programs, libraries, test data in .bundle/)
#   on the GPU host:  tests/gpu_check.sh [--logs DIR] [--bin DIR] quick|full|bench|STEP...
#
#   quick   under 3 minutes: is the rest worth the time?
#           device, bundle, unit, ops, models-quick (300 test images), http-smoke
#   full    everything but bench; longer than one 10-minute command, so on
#           the device run it as `models onnx sticky`, `http racecheck` and
#           `memcheck` (docs/performance.md, "Running the GPU checks")
#   bench   the benchmarks against cuBLAS, cuDNN and PyTorch
#   STEP    any step by name (the table below)
#
# Binaries come from --bin (default .bundle/bin, after sourcing
# .bundle/env.sh; `make test-gpu` passes build). Logs go to --logs (default
# $OUT, else tests/artifacts/gpu), one NAME.log per step plus summary.txt.
#
# A step PASSes, FAILs, times out (a FAIL), or SKIPs with its reason. Where
# nvidia-smi sees a GPU, a GPU step that skips is a FAIL: the checks did
# not run. Exit status: 0 when nothing failed (without a GPU every GPU step
# skips and the rest pass), else 1.
set -uo pipefail
cd "$(dirname "$0")/.."

logs=${OUT:-tests/artifacts/gpu}
bin=
while [ $# -gt 0 ]; do
  case $1 in
    --logs) logs=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || set -- quick
if [ -z "$bin" ]; then
  [ -f .bundle/env.sh ] || { echo "no .bundle/: run 'make gpu-bundle' on the build machine first (or pass --bin build)" >&2; exit 2; }
  # shellcheck disable=SC1091
  source .bundle/env.sh
  bin=.bundle/bin
  [ -d .bundle/data ] && export FASHION_MNIST_DIR="$PWD/.bundle/data"
  [ -d .bundle/onnx ] && export INFERD_ONNX_TESTDATA="$PWD/.bundle/onnx"
fi
export INFERD_BIN="$PWD/$bin/inferd"
mkdir -p "$logs"
tests="$bin/run-tests"

# The kernel-level tests: what the sanitizers run (never the 10k-image model checks).
# Both CUDA kernel sets are covered where they differ (INT8 conv2d / linear:
# IMMA on sm_80+, dp4a baseline): cuda_q8_conv2d / cuda_q8_linear run every
# case through each, backend_ops_ runs a "cuda" and a "cuda-baseline"
# backend, and cuda_q8_model_ compares the models under both with the CPU.
# The channels-last kernels (new set only) are cuda_op_*_nhwc*, the "nhwc:"
# cases of backend_ops_ and the new-set runs of cuda_model_.
KERNEL_TESTS="backend_ops_ cuda_op_ cuda_pack_ cuda_q8_conv2d cuda_q8_linear cuda_q8_pool cuda_q8_elementwise cuda_q8_concat cuda_session_"
GEMM_TESTS="cuda_op_linear_f16 cuda_op_conv2d_f16 cuda_op_conv2d_nhwc_f16 cuda_op_linear_f32 cuda_q8_linear cuda_q8_conv2d"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)

sanitize() {   # sanitize TOOL TESTS...: compute-sanitizer on the kernel tests
  local tool=$1; shift
  [ -n "$sanitizer" ] || { echo "skip: compute-sanitizer is not installed"; return 77; }
  # CUDA API errors returned inside libraries (cuDNN probing, say) are not memory errors.
  # Tests run many times slower under the sanitizer: the step's limit bounds
  # them, not run-tests' per-test one.
  INFERD_TEST_TIMEOUT=0 "$sanitizer" --tool "$tool" --report-api-errors no --error-exitcode 1 "$tests" --gpu "$@"
  local rc=$?
  if [ $rc -ne 0 ] && grep -q 'Device not supported' "$logs/$current.log"; then
    echo "skip: compute-sanitizer does not support this device or runtime (gVisor refuses it)"; return 77
  fi
  return $rc
}

bundle_check() {
  if [ "$bin" != .bundle/bin ]; then echo "skip: the programs come from $bin, not a bundle"; return 77; fi
  tests/gpu_bundle_check.sh .bundle
}

device() {
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  else
    echo "nvidia-smi: not installed"
  fi
  "$tests" --gpu cuda_device_query cuda_gpu_info cuda_rates
}

# name | timeout (s) | needs a GPU | command
STEPS=(
  "device|60|1|device"
  "bundle|60|0|bundle_check"
  "unit|60|0|$tests cuda_graph_ cuda_dnn_ cuda_backend_error cuda_conv_engine fp16_bound layout_nhwc_ cuda_nhwc_"
  "ops|300|1|$tests --gpu $KERNEL_TESTS"
  "models-quick|120|1|env INFERD_TEST_IMAGES=300 $tests --gpu cuda_model_ cuda_q8_model_"
  "http-smoke|90|1|tests/gpu_http_smoke.sh $bin"
  "models|450|1|$tests --gpu cuda_model_ cuda_q8_model_"
  "onnx|120|1|$tests --gpu cuda_onnx_suite"
  "sticky|60|1|$tests --gpu cuda_sticky_error"
  "http|240|1|env INFERD_TEST_BACKEND=cuda $tests http_"
  "racecheck|600|1|sanitize racecheck $GEMM_TESTS"
  "memcheck|540|1|sanitize memcheck $KERNEL_TESTS"
  "bench|570|1|$bin/bench_gpu"
)
declare -A GROUP=(
  [quick]="device bundle unit ops models-quick http-smoke"
  [full]="device bundle unit ops http-smoke models onnx sticky http racecheck memcheck"
  [bench]="device bench"
)

gpu_present=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then gpu_present=1; fi
# Whether this build can use a GPU here; without one, GPU steps skip at once
# (where nvidia-smi sees one they fail instead: the checks did not run).
nodev=$("$tests" --gpu cuda_device_query 2>&1 | grep -m1 -E '^ *skip: no usable CUDA device' | sed 's/^ *skip: //')

want=()
for arg in "$@"; do
  if [ -n "${GROUP[$arg]:-}" ]; then want+=(${GROUP[$arg]}); continue; fi
  found=0
  for s in "${STEPS[@]}"; do [ "${s%%|*}" = "$arg" ] && found=1; done
  [ $found -eq 1 ] || { echo "unknown step or group '$arg' (groups: ${!GROUP[*]})" >&2; exit 2; }
  want+=("$arg")
done

: > "$logs/summary.txt"
printf '%-13s %-8s %6s  %s\n' step result seconds detail >> "$logs/summary.txt"
failed=0 skipped=0 current=
for name in "${want[@]}"; do
  for s in "${STEPS[@]}"; do
    IFS='|' read -r sname limit gpu cmd <<<"$s"
    [ "$sname" = "$name" ] || continue
    current=$name
    log="$logs/$name.log"
    echo "== $name (limit ${limit}s): $cmd" | tee "$log"
    t0=$SECONDS
    if [ "$gpu" = 1 ] && [ -n "$nodev" ]; then
      echo "skip: $nodev" >> "$log"; rc=77
    elif declare -F "${cmd%% *}" >/dev/null; then
      # shellcheck disable=SC2086
      (timeout -k 10 "$limit" bash -c "$(declare -f device sanitize bundle_check); tests=$tests bin=$bin sanitizer=$sanitizer logs=$logs current=$current; $cmd") >> "$log" 2>&1
      rc=$?
    else
      # shellcheck disable=SC2086
      timeout -k 10 "$limit" $cmd >> "$log" 2>&1
      rc=$?
    fi
    secs=$((SECONDS - t0))
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$log" | tail -n 1)
    # a GPU step skips when its tests found no device (one such skip says it)
    step_nodev=$(grep -m1 -E '^ *skip: no usable CUDA device' "$log")
    reason=$(grep -m1 -E '^ *skip: ' "$log" | sed 's/^ *skip: //')
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      result=TIMEOUT; detail="killed after ${limit}s; see $log"
    elif [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
      result=FAIL; detail="exit $rc; ${last:-$(tail -n 1 "$log")}"
    elif [ $rc -eq 77 ] || { [ "$gpu" = 1 ] && [ -n "$step_nodev" ]; } || [[ $last =~ ^0\ passed,\ 0\ failed,\ [1-9] ]]; then
      result=SKIP; detail=${reason:-skipped}
      if [ "$gpu" = 1 ] && [ $gpu_present -eq 1 ]; then result=FAIL; detail="a GPU is present, yet: $detail"; fi
    else
      result=PASS; detail=${last:-$(tail -n 1 "$log")}
    fi
    case $result in FAIL|TIMEOUT) failed=$((failed + 1)) ;; SKIP) skipped=$((skipped + 1)) ;; esac
    printf '%-13s %-8s %6s  %s\n' "$name" "$result" "$secs" "$detail" >> "$logs/summary.txt"
    echo "   $result in ${secs}s"
  done
done

echo
echo "== device: $(sed -n 2p "$logs/device.log" 2>/dev/null || echo 'not queried')"
cat "$logs/summary.txt"
[ -f "$logs/bench.log" ] && grep -A4 '^goals' "$logs/bench.log"
echo "steps: $(( ${#want[@]} - failed - skipped )) passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
