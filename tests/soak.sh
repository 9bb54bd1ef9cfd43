#!/usr/bin/env bash
# tests/soak.sh - the soak behind `make soak` (docs/reliability.md): finds the
# rate the shipped lenet5 sustains here (a closed-loop burst), then drives
# inferd open-loop at 80% of it for SOAK_SECONDS, sampling the daemon's RSS.
# Passes with zero errors and RSS growth under 1% between the first minute
# and the end. Prints the figures; exits non-zero on a failure.
set -euo pipefail
BUILD=${BUILD:-build}
SOAK_SECONDS=${SOAK_SECONDS:-600}
dir=$(mktemp -d /tmp/inferd-soak-XXXXXX)
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
# shellcheck source=tests/inferd_daemon.sh
. "$(dirname "$0")/inferd_daemon.sh"

start_inferd "$BUILD/inferd" model_repository "$dir" --log-level warn

"$BUILD/inferd-loadgen" --url "$url" --model lenet5 --kind infer-json --mode closed \
  --concurrency 16 --duration 10 --warmup 2 --no-progress --out "$dir/peak" >/dev/null
peak=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['levels'][0]['throughput_rps'])" "$dir/peak.json")
rate=$(python3 -c "print(round(0.8 * float('$peak')))")
echo "sustainable (closed loop, 16 in flight): $peak req/s; soaking at $rate req/s for $SOAK_SECONDS s"

rss() { awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }
# --max-inflight 128: open loop the load generator opens that many connections
# up front (1024 by default), and inferd admits 256 per client address; at
# this rate and latency (Little's law: tens in flight) 128 is plenty.
"$BUILD/inferd-loadgen" --url "$url" --model lenet5 --kind infer-json --rate "$rate" --max-inflight 128 \
  --duration "$SOAK_SECONDS" --warmup 5 --no-progress --out "$dir/soak" >"$dir/soak.txt" &
lg=$!
sleep 60
rss_start=$(rss)
wait "$lg"
rss_end=$(rss)
cat "$dir/soak.txt"
errors=$(python3 -c "import json,sys; print(int(json.load(open(sys.argv[1]))['levels'][0]['errors']))" "$dir/soak.json")
growth=$(python3 -c "print(round(100.0 * ($rss_end - $rss_start) / $rss_start, 3))")
echo "soak: rate $rate req/s, errors $errors, RSS $rss_start kB after 60 s -> $rss_end kB at the end ($growth %)"
[ "$errors" = 0 ] && python3 -c "import sys; sys.exit(0 if $growth < 1.0 else 1)"
