#!/usr/bin/env bash
# One request per shipped model through `inferd --backend cuda`: starts the
# daemon on a free loopback port, waits for ready, classifies one image with
# each model over HTTP (inferctl classify) and checks that the top-1 label
# equals the CPU backend's offline answer (inferctl run --backend cpu).
#
#   tests/gpu_http_smoke.sh [BIN_DIR]      (default build; gpu_check.sh passes .bundle/bin)
#
# Exit 0: every model answered like the CPU. 77: skipped, inferd found no
# usable GPU (the reason is the last line). Anything else: failed.
set -uo pipefail
# shellcheck source=tests/inferd_daemon.sh
. "$(dirname "$0")/inferd_daemon.sh"
bin=${1:-build}
image=tests/data/images/gray1.png
models=(lenet5 lenet5-int8 resnet-mini resnet-mini-int8)
work=$(mktemp -d)
pid=
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# the shipped models alone (generated ones, ResNet-50 say, may sit beside them)
mkdir "$work/repo"
for m in "${models[@]}"; do cp -r "model_repository/$m" "$work/repo/"; done
start_gpu_inferd "$bin/inferd" "$work/repo"
grep -m1 'backend' "$work/inferd.log"
failed=0
for m in "${models[@]}"; do
  want=$("$bin/inferctl" run "model_repository/$m" "$image" --backend cpu --top-k 1 2>/dev/null | sed -n 2p)
  got=$("$bin/inferctl" --url "$url" classify "$m" "$image" --top-k 1 2>&1 | sed -n 2p)
  # label and index must match; the score only to the precision printed
  if [ -n "$got" ] && [ "$(awk '{$1=""; print}' <<<"$got")" = "$(awk '{$1=""; print}' <<<"$want")" ]; then
    echo "ok   $m: $got (CPU: $want)"
  else
    echo "FAIL $m: GPU answered '$got', the CPU '$want'"
    failed=1
  fi
done
kill -TERM "$pid"; wait "$pid"; rc=$?; pid=
[ "$rc" -eq 0 ] || { echo "FAIL: inferd exited with status $rc on SIGTERM"; tail -n 20 "$work/inferd.log"; failed=1; }
[ "$failed" -eq 0 ] && echo "4 models answered over HTTP on the GPU as on the CPU"
exit "$failed"
