#!/usr/bin/env bash
# tests/overload.sh - the open-loop overload behind `make overload`
# (docs/reliability.md): finds the rate resnet-mini sustains here (a
# closed-loop burst), then sends Poisson arrivals at twice that rate for two
# consecutive levels of OVERLOAD_SECONDS each, sampling the model's queue
# depth from /metrics. resnet-mini, not lenet5: its compute, not HTTP, is
# the bottleneck, so the overload lands on the batcher's queue.
# Passes when the excess is refused with 503 and nothing else fails, the
# queue never exceeds its bound, and the accepted requests' p99 latency in
# the second level stays within twice the first's (plus 50 ms): it does not
# grow with time. Prints the figures; exits non-zero on a failure.
set -euo pipefail
BUILD=${BUILD:-build}
OVERLOAD_SECONDS=${OVERLOAD_SECONDS:-30}
QUEUE=64
dir=$(mktemp -d /tmp/inferd-overload-XXXXXX)
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
# shellcheck source=tests/inferd_daemon.sh
. "$(dirname "$0")/inferd_daemon.sh"
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# A repository holding resnet-mini alone, with a queue of $QUEUE requests.
mkdir -p "$dir/repo/resnet-mini"
cp model_repository/resnet-mini/* "$dir/repo/resnet-mini/"
python3 - "$dir/repo/resnet-mini/model.json" "$QUEUE" <<'EOF'
import json, sys
path, queue = sys.argv[1], int(sys.argv[2])
m = json.load(open(path))
m["dynamic_batching"]["max_queue_size"] = queue
json.dump(m, open(path, "w"), indent=1)
EOF

start_inferd "$BUILD/inferd" "$dir/repo" "$dir" --log-level warn

"$BUILD/inferd-loadgen" --url "$url" --model resnet-mini --kind infer-binary --mode closed \
  --concurrency 32 --duration 10 --warmup 2 --no-progress --out "$dir/peak" >/dev/null
peak=$(json "$dir/peak.json" "d['levels'][0]['ok_rps']")
rate=$(python3 -c "print(round(2 * float('$peak')))")
echo "sustainable (closed loop, 32 in flight): $peak req/s; offering $rate req/s (2x) open loop," \
     "2 x $OVERLOAD_SECONDS s, queue bound $QUEUE"

# Queue depth, sampled every 100 ms while the load runs.
sample_queue() {
  while kill -0 "$1" 2>/dev/null; do
    curl -s "$url/metrics" | awk '/^nv_inference_pending_request_count/ {print $2}'
    sleep 0.1
  done > "$dir/queue.txt"
}
# --max-inflight 200: below inferd's 256 connections per client address.
"$BUILD/inferd-loadgen" --url "$url" --model resnet-mini --kind infer-binary \
  --sweep "$rate,$rate" --mode open --max-inflight 200 --duration "$OVERLOAD_SECONDS" --warmup 2 \
  --no-progress --out "$dir/over" >"$dir/over.txt" &
lg=$!
sample_queue "$lg" &
sampler=$!
wait "$lg"
wait "$sampler"

printf 'level  sent     ok       503      other  ok/s     p50 ms  p99 ms  p99.9 ms\n'
for i in 0 1; do
  json "$dir/over.json" "'%-6d %-8d %-8d %-8d %-6d %-8.0f %-7.2f %-7.2f %.2f' % (($i + 1,) + (lambda l: (l['sent'], l['ok'], l['status_counts'].get('503', 0), l['errors'] - l['status_counts'].get('503', 0), l['ok_rps'], l['latency_ms']['p50'], l['latency_ms']['p99'], l['latency_ms']['p99.9']))(d['levels'][$i]))"
done
max_queue=$(sort -n "$dir/queue.txt" | tail -n 1)
echo "queue depth: max $max_queue over $(wc -l < "$dir/queue.txt") samples (bound $QUEUE)"

refused=$(json "$dir/over.json" "sum(l['status_counts'].get('503', 0) for l in d['levels'])")
other=$(json "$dir/over.json" "sum(l['errors'] - l['status_counts'].get('503', 0) for l in d['levels'])")
p99a=$(json "$dir/over.json" "d['levels'][0]['latency_ms']['p99']")
p99b=$(json "$dir/over.json" "d['levels'][1]['latency_ms']['p99']")
fail=0
[ "$refused" -gt 0 ] || { echo "FAIL: no request was refused at 2x the sustainable rate"; fail=1; }
[ "$other" -eq 0 ] || { echo "FAIL: $other errors other than 503"; fail=1; }
[ "${max_queue%.*}" -le "$QUEUE" ] || { echo "FAIL: queue depth $max_queue above $QUEUE"; fail=1; }
python3 -c "import sys; sys.exit(0 if $p99b <= 2 * $p99a + 50 else 1)" ||
  { echo "FAIL: accepted p99 grew from $p99a ms to $p99b ms"; fail=1; }
[ "$fail" = 0 ] && echo "overload: PASS"
exit "$fail"
