#!/usr/bin/env bash
# Every GPU check in one go, on a GPU machine that has the NVIDIA driver,
# CUDA libraries and PyTorch but none of our build dependencies.
#
#   here:             make gpu-bundle           (programs, libraries, test data in .bundle/)
#   on the GPU host:  tests/gpu_check.sh [LOG_DIR]   (from the project root)
#
# Runs the CUDA test suite, the same tests once more under compute-sanitizer
# memcheck (when the tool is there), the HTTP integration tests against an
# inferd that picks its backend itself (auto: the GPU), and the benchmarks;
# logs each to LOG_DIR (default $OUT, else tests/artifacts/gpu) and ends with
# a short table. Exits non-zero when any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -f .bundle/env.sh ] || { echo "no .bundle/: run 'make gpu-bundle' on the build machine first" >&2; exit 2; }
# shellcheck disable=SC1091
source .bundle/env.sh
export FASHION_MNIST_DIR="$PWD/.bundle/data"
export INFERD_BIN="$PWD/.bundle/bin/inferd"
logs=${1:-${OUT:-tests/artifacts/gpu}}
mkdir -p "$logs"

status=0
step() {   # step NAME COMMAND...: runs it with its output in $logs/NAME.log
  local name=$1; shift
  local t0=$SECONDS
  "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  [ "$rc" -eq 0 ] || status=1
  printf '%-12s rc=%-3s %4ss  %s\n' "$name" "$rc" "$((SECONDS - t0))" "$(tail -n 1 "$logs/$name.log")" >> "$logs/summary.txt"
}
: > "$logs/summary.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > "$logs/device.txt" 2>&1

step test-gpu run-tests --gpu cuda_
if grep -q 'skip: no usable CUDA device' "$logs/test-gpu.log"; then
  echo "test-gpu     the GPU tests skipped: $(grep -m1 'skip: no usable CUDA device' "$logs/test-gpu.log" | sed 's/^ *skip: //')" >> "$logs/summary.txt"
  status=1
fi
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
if [ -n "$sanitizer" ]; then
  step memcheck "$sanitizer" --tool memcheck --error-exitcode 1 run-tests --gpu cuda_op_ cuda_session_ cuda_model_ cuda_q8_
else
  echo "memcheck     not run: compute-sanitizer is not installed" >> "$logs/summary.txt"; status=1
fi
step http run-tests http_
step bench-gpu bench_gpu

echo "== device: $(tr '\n' ' ' < "$logs/device.txt")"
cat "$logs/summary.txt"
grep -A4 '^goals' "$logs/bench-gpu.log" || true
exit $status
