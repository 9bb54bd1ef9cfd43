# shellcheck shell=bash disable=SC2154,SC2034 # work comes from the caller; pid and url go back to it
# tests/gpu_daemon.sh - sourced by the GPU HTTP scripts (gpu_http_smoke.sh,
# gpu_http_bench.sh): start_gpu_inferd INFERD REPO starts `INFERD --backend
# cuda` on a free loopback port serving REPO, logging to "$work/inferd.log",
# and waits up to 60 s (a CUDA context on a cold GPU, the models' load) for
# ready; it sets pid (the daemon's) and url. The caller owns $work and kills
# $pid at exit. Where the daemon exits first because it found no usable
# GPU, the script exits 77 with the reason ("skip: ..."); any other early
# exit or no ready in time exits 1.
start_gpu_inferd() {
  "$1" --backend cuda --model-repository "$2" --http-port 0 --port-file "$work/port" > "$work/inferd.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    [ -s "$work/port" ] && grep -qE ' INFO +ready$' "$work/inferd.log" && break
    if ! kill -0 "$pid" 2>/dev/null; then
      local rc=0
      wait "$pid" || rc=$?
      pid=
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
  if ! grep -qE ' INFO +ready$' "$work/inferd.log"; then
    cat "$work/inferd.log"
    echo "FAIL: inferd was not ready within 60 s"
    exit 1
  fi
  url="http://127.0.0.1:$(cat "$work/port")"
}
