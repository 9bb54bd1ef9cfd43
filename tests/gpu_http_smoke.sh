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
bin=${1:-build}
image=tests/data/images/gray1.png
models=(lenet5 lenet5-int8 resnet-mini resnet-mini-int8)
work=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$bin/inferd" --backend cuda --model-repository model_repository --http-port 0 \
  --port-file "$work/port" > "$work/inferd.log" 2>&1 &
pid=$!
for _ in $(seq 600); do   # up to 60 s: model load on a cold GPU
  [ -s "$work/port" ] && grep -qE ' INFO +ready$' "$work/inferd.log" && break
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid"; rc=$?; pid=
    cat "$work/inferd.log"
    if grep -qiE 'cudaGetDeviceCount|no CUDA device|no usable CUDA|driver version is insufficient|sm_[0-9]+; this build' "$work/inferd.log"; then
      echo "skip: inferd --backend cuda found no usable GPU: $(grep -m1 -iE 'backend|cuda' "$work/inferd.log")"
      exit 77
    fi
    echo "FAIL: inferd --backend cuda exited with status $rc before it was ready"
    exit 1
  fi
  sleep 0.1
done
grep -qE ' INFO +ready$' "$work/inferd.log" || { cat "$work/inferd.log"; echo "FAIL: inferd was not ready within 60 s"; exit 1; }
url="http://127.0.0.1:$(cat "$work/port")"
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
