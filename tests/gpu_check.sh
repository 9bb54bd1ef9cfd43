#!/usr/bin/env bash
# The GPU checks in steps, each with its own time limit and log, and a
# summary table last. Made for a GPU machine that has the NVIDIA driver,
# CUDA libraries and PyTorch but none of our build dependencies, and gives
# a command 10 minutes.
#
#   here:             make gpu-bundle     (programs, libraries, test data in .bundle/)
#   on the GPU host:  tests/gpu_check.sh [--logs DIR] [--bin DIR] [--budget S] GROUP|STEP...
#
#   quick   under 3 minutes: is the rest worth the time?
#           device, bundle, unit, ops, models-quick (300 test images), http-smoke
#   lease   the first call of a 15-minute device lease (--budget 480): quick,
#           then the ImageNet models (generated there: imagenet-export,
#           imagenet), bench and http-bench; what does not fit is NOTRUN
#   lease2  the second call, if the lease has time left: profile (each
#           step against its floor), the full model checks, onnx, sticky,
#           the HTTP suite, the sanitizers
#   all     lease, then lease2: every step; 357 s and 366 s on an H200 (2026-12-04),
#           so one call of a lease (--budget 560)
#   full    everything but bench
#   bench   the benchmarks against cuBLAS, cuDNN and PyTorch, and HTTP on the GPU
#   STEP    any step by name (the table below)
#
# --budget S: the whole run's seconds. Each step gets its own limit or what
# is left of S, whichever is less; a step that would start with under 20 s
# left does not run (NOTRUN in the summary, and the command that runs the
# rest is printed). Without it, only the steps' own limits apply.
#
# Binaries come from --bin (default .bundle/bin, after sourcing
# .bundle/env.sh; `make test-gpu` passes build). Logs go to --logs (default
# tests/artifacts/gpu), one NAME.log per step plus summary.txt. Where $OUT
# is set (the device tool), summary.txt and all logs in one gpu-logs.tgz
# are copied there after every step (the tool brings back at most 8 files,
# and a run killed at its limit still brings back what is there).
#
# A step PASSes, FAILs, times out (a FAIL), or SKIPs with its reason. Where
# nvidia-smi sees a GPU, a GPU step that skips is a FAIL: the checks did
# not run. Exit status: 0 when every step ran and nothing failed (without a
# GPU every GPU step skips and the rest pass), else 1.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

logs=tests/artifacts/gpu
bin=
budget=0
while [ $# -gt 0 ]; do
  case $1 in
    --logs) logs=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || set -- quick
[[ $budget =~ ^[0-9]+$ ]] || { echo "--budget takes whole seconds, not '$budget'" >&2; exit 2; }
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

# ResNet-50's weights (100 MB) cannot travel with the bundle: the GPU
# machine's own PyTorch and torchvision generate both ImageNet models
# (seeded, as make models-imagenet does here), and inferctl quantizes them
# (max calibration over the test pictures in tests/data/images).
imagenet_export() {
  local m
  if [ ! -f model_repository/resnet50/model.safetensors ] || [ ! -f model_repository/mobilenet_v2/model.safetensors ]; then
    python3 models/export_imagenet.py --threads "$(nproc)" || return 1
  fi
  for m in resnet50 mobilenet_v2; do
    [ -f "model_repository/$m-int8/model.safetensors" ] && continue
    "$bin/inferctl" quantize "model_repository/$m" -o "model_repository/$m-int8" --method max --calib 16 \
      --calib-data tests/data/images || return 1
  done
}

# Each step's time, its FLOPs and bytes, and its share of the backend's
# measured GEMM and stream rates (inferctl profile's table), for the three
# goals the benchmark judges on models (issue 19, item 4: the gaps' floors):
# lenet5 FP32 at batch 1, resnet-mini FP16 and ResNet-50 INT8 (when
# generated) at their model.json's largest batch (64 and 32; the goals'
# 256 is over it).
profile_gaps() {
  "$bin/inferctl" profile model_repository/lenet5 --backend cuda --batch 1 --runs 200 --warmup 20 || return 1
  "$bin/inferctl" profile model_repository/resnet-mini --backend cuda --precision fp16 --batch 64 --runs 50 \
    --warmup 5 || return 1
  if [ -f model_repository/resnet50-int8/model.json ]; then
    "$bin/inferctl" profile model_repository/resnet50-int8 --backend cuda --batch 32 --runs 20 --warmup 3 || return 1
  fi
  # MobileNetV2's depthwise steps on the direct kernel, then on the GEMM
  # (the baseline set): the gap the first run found (docs/performance.md)
  if [ -f model_repository/mobilenet_v2/model.json ]; then
    "$bin/inferctl" profile model_repository/mobilenet_v2 --backend cuda --batch 32 --runs 20 --warmup 3 || return 1
    INFERD_CUDA_KERNELS=baseline "$bin/inferctl" profile model_repository/mobilenet_v2 --backend cuda --batch 32 \
      --runs 20 --warmup 3 || return 1
  fi
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
  "unit|60|0|$tests cuda_graph_ cuda_dnn_ cuda_backend_error cuda_conv_engine fp16_bound layout_nhwc_ cuda_nhwc_ \
cuda_depthwise_host cuda_broadcast_host"
  "ops|300|1|$tests --gpu $KERNEL_TESTS"
  "models-quick|120|1|env INFERD_TEST_IMAGES=300 $tests --gpu cuda_model_ cuda_q8_model_"
  "http-smoke|90|1|tests/gpu_http_smoke.sh $bin"
  "models|450|1|$tests --gpu cuda_model_ cuda_q8_model_"
  "imagenet-export|120|1|imagenet_export"
  "imagenet|240|1|$tests --gpu cuda_imagenet_"
  "onnx|120|1|$tests --gpu cuda_onnx_suite"
  "sticky|60|1|$tests --gpu cuda_sticky_error"
  "http|240|1|env INFERD_TEST_BACKEND=cuda $tests http_"
  "racecheck|600|1|sanitize racecheck $GEMM_TESTS"
  "memcheck|540|1|sanitize memcheck $KERNEL_TESTS"
  "bench|570|1|$bin/bench_gpu --time-limit @LIMIT@"
  "http-bench|60|1|tests/gpu_http_bench.sh $bin"
  "profile|120|1|profile_gaps"
)
declare -A GROUP=(
  [quick]="device bundle unit ops models-quick http-smoke"
  [lease]="device bundle unit ops models-quick http-smoke imagenet-export imagenet bench http-bench"
  [lease2]="profile models onnx sticky http racecheck memcheck"
  [all]="device bundle unit ops models-quick http-smoke imagenet-export imagenet bench http-bench profile models onnx sticky http memcheck racecheck"
  [full]="device bundle unit ops http-smoke models imagenet-export imagenet onnx sticky http racecheck memcheck"
  [bench]="device imagenet-export bench http-bench profile"
)

gpu_present=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then gpu_present=1; fi
# Whether this build can use a GPU here; without one, GPU steps skip at once
# (where nvidia-smi sees one they fail instead: the checks did not run).
nodev=$("$tests" --gpu cuda_device_query 2>&1 | grep -m1 -E '^ *skip: no usable CUDA device' | sed 's/^ *skip: //')

want=()
for arg in "$@"; do
  # shellcheck disable=SC2206 # a group is a list of step names
  if [ -n "${GROUP[$arg]:-}" ]; then want+=(${GROUP[$arg]}); continue; fi
  found=0
  for s in "${STEPS[@]}"; do [ "${s%%|*}" = "$arg" ] && found=1; done
  [ $found -eq 1 ] || { echo "unknown step or group '$arg' (groups: ${!GROUP[*]})" >&2; exit 2; }
  want+=("$arg")
done
# each step once, where groups overlap, in the order first named
mapfile -t want < <(printf '%s\n' "${want[@]}" | awk '!seen[$0]++')

# The summary and every log so far into $OUT, where the device tool
# fetches them (two files of its eight).
pack_logs() {
  [ -n "${OUT:-}" ] && [ -d "$OUT" ] || return 0
  [ "$(cd "$logs" && pwd)" = "$(cd "$OUT" && pwd)" ] && return 0
  cp "$logs/summary.txt" "$OUT/summary.txt"
  tar -czf "$OUT/gpu-logs.tgz" -C "$logs" .
}

rm -f "$logs"/*.log   # an earlier run's logs would be packed with this one's
: > "$logs/summary.txt"
printf '%-15s %-8s %6s  %s\n' step result seconds detail >> "$logs/summary.txt"
failed=0 skipped=0 current="" notrun=()
for name in "${want[@]}"; do
  for s in "${STEPS[@]}"; do
    IFS='|' read -r sname limit gpu cmd <<<"$s"
    [ "$sname" = "$name" ] || continue
    if [ "$budget" -gt 0 ]; then
      left=$((budget - SECONDS - 10))   # timeout's -k 10 after the limit
      if [ $left -lt 20 ]; then
        notrun+=("$name")
        printf '%-15s %-8s %6s  %s\n' "$name" NOTRUN 0 "out of the ${budget}s budget" >> "$logs/summary.txt"
        continue
      fi
      [ $left -lt "$limit" ] && limit=$left
    fi
    cmd=${cmd//@LIMIT@/$limit}   # a program that fits itself into its step's limit
    current=$name
    log="$logs/$name.log"
    echo "== $name (limit ${limit}s): $cmd" | tee "$log"
    t0=$SECONDS
    if [ "$gpu" = 1 ] && [ -n "$nodev" ]; then
      echo "skip: $nodev" >> "$log"; rc=77
    elif declare -F "${cmd%% *}" >/dev/null; then
      # shellcheck disable=SC2086
      (timeout -k 10 "$limit" bash -c "$(declare -f device sanitize bundle_check imagenet_export profile_gaps); tests=$tests bin=$bin sanitizer=$sanitizer logs=$logs current=$current; $cmd") >> "$log" 2>&1
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
    printf '%-15s %-8s %6s  %s\n' "$name" "$result" "$secs" "$detail" >> "$logs/summary.txt"
    echo "   $result in ${secs}s"
    pack_logs
  done
done
pack_logs

echo
echo "== device: $(sed -n 2p "$logs/device.log" 2>/dev/null || echo 'not queried')"
cat "$logs/summary.txt"
[ -f "$logs/bench.log" ] && grep -A6 '^goals' "$logs/bench.log"
echo "steps: $(( ${#want[@]} - failed - skipped - ${#notrun[@]} )) passed, $failed failed, $skipped skipped, ${#notrun[@]} not run"
[ ${#notrun[@]} -eq 0 ] || echo "not run (out of time): tests/gpu_check.sh ${notrun[*]}"
[ $failed -eq 0 ] && [ ${#notrun[@]} -eq 0 ]
