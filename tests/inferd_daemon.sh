# shellcheck shell=bash disable=SC2154,SC2034 # work comes from the caller; pid and url go back to it
# tests/inferd_daemon.sh - sourced by the scripts that drive a daemon over
# HTTP (soak.sh, overload.sh, gpu_http_smoke.sh, gpu_http_bench.sh).
#
# start_inferd INFERD REPO DIR [ARG...] starts INFERD serving REPO on a free
# loopback port, with the ARGs, logging to DIR/inferd.log, and waits up to
# 60 s (a CUDA context on a cold GPU, the models' load) until
# /v2/health/ready answers; it sets pid (the daemon's) and url. On success it
# returns 0. Otherwise it prints the log and why, and returns 1: the daemon
# exited first (pid is then empty) or was not ready in time. The caller owns
# DIR and kills $pid at exit.
start_inferd() {
  local inferd=$1 repo=$2 dir=$3 rc=0 deadline=$((SECONDS + 60))
  shift 3
  url=
  "$inferd" --model-repository "$repo" --http-port 0 --port-file "$dir/port" "$@" >"$dir/inferd.log" 2>&1 &
  pid=$!
  while [ "$SECONDS" -lt "$deadline" ]; do
    [ -z "$url" ] && [ -s "$dir/port" ] && url="http://127.0.0.1:$(cat "$dir/port")"
    [ -n "$url" ] && curl -sf --max-time 2 "$url/v2/health/ready" >/dev/null && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid" || rc=$?
      pid=
      cat "$dir/inferd.log"
      echo "$inferd exited with status $rc before it was ready"
      return 1
    fi
    sleep 0.1
  done
  cat "$dir/inferd.log"
  echo "$inferd was not ready within 60 s"
  return 1
}

# start_gpu_inferd INFERD REPO: start_inferd with --backend cuda, in $work.
# Where the daemon exits first because it found no usable GPU, the script
# exits 77 with the reason ("skip: ..."); on any other failure it exits 1.
start_gpu_inferd() {
  start_inferd "$1" "$2" "$work" --backend cuda && return 0
  if [ -z "$pid" ] &&
    grep -qiE 'cudaGetDeviceCount|no CUDA device|no usable CUDA|driver version is insufficient|sm_[0-9]+; this build' \
      "$work/inferd.log"; then
    echo "skip: inferd --backend cuda found no usable GPU: $(grep -m1 -iE 'backend|cuda' "$work/inferd.log")"
    exit 77
  fi
  exit 1
}
