#!/usr/bin/env bash
# inferd over HTTP on the GPU (issue 19, item 3): `inferd --backend cuda`
# serving lenet5 alone (a copy of model_repository/lenet5 in a scratch
# repository, so start-up loads nothing else) on a free loopback port, then
# inferd-loadgen against it with binary tensors (--kind infer-binary, one
# image per request, the binary extension both ways), closed loop at
# concurrency 1 and 64, 5 s each after 1 s of warm-up. Prints req/s, p50 and
# p99 per row; the daemon is stopped on exit. About 15 s; at most 40 s.
#
#   tests/gpu_http_bench.sh [BIN_DIR]     (default build; gpu_check.sh passes .bundle/bin)
#
# The daemon is $INFERD_BIN when set, else BIN_DIR/inferd; the load
# generator BIN_DIR/inferd-loadgen. Exit 0: measured. 77: skipped, no
# usable GPU (inferd --backend cuda refuses to start without one; the
# reason is the last line). Anything else: failed. Never CPU figures: a
# daemon that does not say "backend cuda" is stopped and the run skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tests/inferd_daemon.sh
. tests/inferd_daemon.sh
export LC_ALL=C   # printf reads the CSV's decimal points
bin=${1:-build}
inferd=${INFERD_BIN:-$bin/inferd}
loadgen=$bin/inferd-loadgen
levels=(1 64)
seconds=5
for p in "$inferd" "$loadgen"; do
  [ -x "$p" ] || { echo "FAIL: $p is missing (build it, or pass the folder that holds it)"; exit 1; }
done

work=$(mktemp -d)
pid=
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/repo" "$work/images"
cp -r model_repository/lenet5 "$work/repo/"
cp tests/data/images/gray1.png tests/data/images/gray2.png "$work/images/"

start_gpu_inferd "$inferd" "$work/repo"
backend=$(grep -m1 -E ' INFO +backend ' "$work/inferd.log" | sed 's/.* INFO  *//' || true)
if [[ $backend != "backend cuda"* ]]; then
  cat "$work/inferd.log"
  echo "skip: the daemon is not on the GPU (${backend:-no backend line}); no CPU figures are reported as GPU ones"
  exit 77
fi

echo "inferd over HTTP, $backend"
echo "lenet5, infer-binary (binary tensors both ways), 1 image per request, closed loop;" \
  "${seconds} s per level after 1 s of warm-up (inferd-loadgen)"
printf '%11s %10s %9s %9s %8s\n' concurrency req/s "p50 ms" "p99 ms" errors
failed=0
for c in "${levels[@]}"; do
  rc=0
  timeout -k 5 $((seconds + 10)) "$loadgen" --url "$url" --model lenet5 --kind infer-binary \
    --images "$work/images" --concurrency "$c" --duration "$seconds" --warmup 1 --no-progress \
    --out "$work/c$c" > "$work/loadgen-$c.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ] || [ ! -s "$work/c$c.csv" ]; then
    cat "$work/loadgen-$c.log"
    echo "FAIL: inferd-loadgen at concurrency $c exited with status $rc"
    failed=1
    continue
  fi
  # mode,concurrency,elapsed_s,sent,completed,ok,errors,throughput_rps,ok_rps,mean_ms,p50_ms,p90_ms,p99_ms,...
  IFS=, read -r _ _ _ _ _ _ errors rps _ _ p50 _ p99 _ < <(sed -n 2p "$work/c$c.csv")
  printf '%11s %10.1f %9.3f %9.3f %8s\n' "$c" "$rps" "$p50" "$p99" "$errors"
  [ "$errors" = 0 ] || { echo "FAIL: $errors requests failed at concurrency $c"; failed=1; }
done

kill -TERM "$pid"; rc=0; wait "$pid" || rc=$?; pid=
[ "$rc" -eq 0 ] || { echo "FAIL: inferd exited with status $rc on SIGTERM"; tail -n 20 "$work/inferd.log"; failed=1; }
exit "$failed"
