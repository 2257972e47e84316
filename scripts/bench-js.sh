#!/usr/bin/env bash
# Benchmarks of the npm package (mitata; not part of the tests): builds pkg/ if stale, installs
# the packed tarball into bench/js as a user would (scripts/install-pkg.sh), runs
# bench/js/bench.mjs N times, each in a fresh node process, and with N > 1 prints the ratio table
# of per-row medians over the runs (bench/js/report.mjs; the runs' results are kept in
# target/bench-js/runs.jsonl).
# Usage: scripts/bench-js.sh [--runs N]   (default 1)
#   BENCH_ONLY=execute,sync,metrics,stream,options,hedge   run only these groups (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

runs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=${2:-}; shift $(( $# >= 2 ? 2 : 1 )) ;;
    --runs=*) runs=${1#--runs=}; shift ;;
    *) log "unknown argument: $1 (usage: scripts/bench-js.sh [--runs N])"; exit 2 ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { log "--runs needs a positive integer, got '$runs'"; exit 2; }

bash scripts/setup.sh node
bash scripts/install-pkg.sh bench/js

results=$PWD/target/bench-js/runs.jsonl
mkdir -p "$(dirname "$results")"
: >"$results"
for i in $(seq 1 "$runs"); do
  [ "$runs" = 1 ] || log "run $i of $runs${BENCH_ONLY:+ (BENCH_ONLY=$BENCH_ONLY)}"
  BENCH_JSON=$results node bench/js/bench.mjs
done
if [ "$runs" -gt 1 ]; then node bench/js/report.mjs "$results"; fi
