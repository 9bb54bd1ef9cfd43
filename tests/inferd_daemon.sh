# tests/inferd_daemon.sh - sourced by the load scripts (soak.sh, overload.sh):
# start_inferd REPO starts "$BUILD/inferd" on a free loopback port serving
# REPO, logging to "$dir/inferd.log", and waits until it is ready; it sets
# pid (the daemon's) and url. The caller owns $dir and kills $pid at exit.
start_inferd() {
  "$BUILD/inferd" --model-repository "$1" --http-port 0 --port-file "$dir/port" \
    --log-level warn 2>"$dir/inferd.log" &
  pid=$!
  for _ in $(seq 300); do [ -s "$dir/port" ] && break; sleep 0.1; done
  url="http://127.0.0.1:$(cat "$dir/port")"
  until curl -sf "$url/v2/health/ready" >/dev/null; do sleep 0.2; done
}
