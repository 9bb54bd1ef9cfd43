#!/usr/bin/env bash
# A/B of two or more inferctl builds on one model: rounds that run each
# build in turn (so a slow spell of this shared VM hits every build alike),
# the order reversed every other round (A B, B A, ...: so that neither
# build always runs right after the other), then per build its
# per-sample times sorted, fastest first. Read the medians
# (an even number of rounds); a round far off the others fell in a slow
# spell.
#
#   tests/bench/ab_profile.sh ROUNDS "PROFILE ARGS" INFERCTL...
#   tests/bench/ab_profile.sh 5 "model_repository/resnet-mini --batch 1 --runs 2000 --threads 2" \
#       /tmp/old/build/inferctl build/inferctl
set -euo pipefail
rounds=${1:?usage: ab_profile.sh ROUNDS "PROFILE ARGS" INFERCTL...}
args=${2:?usage: ab_profile.sh ROUNDS "PROFILE ARGS" INFERCTL...}
shift 2
[ $# -ge 1 ] || { echo "usage: ab_profile.sh ROUNDS \"PROFILE ARGS\" INFERCTL..." >&2; exit 2; }
declare -A times
builds=("$@")
reversed=()
for ((b = $# - 1; b >= 0; b--)); do reversed+=("${builds[b]}"); done
for ((i = 1; i <= rounds; i++)); do
  order=("${builds[@]}")
  if ((i % 2 == 0)); then order=("${reversed[@]}"); fi
  for bin in "${order[@]}"; do
    # shellcheck disable=SC2086  # the profile arguments are meant to split
    us=$("$bin" profile $args 2>&1 | awk '/^per sample:/ {print $3}')
    [ -n "$us" ] || { echo "ab_profile: $bin profile $args printed no per-sample time" >&2; exit 1; }
    times[$bin]="${times[$bin]:-} $us"
    printf 'round %d/%d  %-40s %s us\n' "$i" "$rounds" "$bin" "$us" >&2
  done
done
for bin in "$@"; do
  # shellcheck disable=SC2086
  echo "$bin: $(printf '%s\n' ${times[$bin]} | sort -n | tr '\n' ' ')"
done
