#!/usr/bin/env bash
# The main job, live: the Worker built from this crate runs in real workerd (Miniflare) with its
# Durable Object holding one breaker shared by 6 app-Worker isolates, while simulated users send
# ~20 requests/s through them to a fake LLM provider on 127.0.0.1 that answers 529 (overloaded)
# for 15 s, stalls (never answers) for 10 s, flaps for 6 s, then recovers. Each request has a
# 2.5 s deadline and falls back to a backup model (a second fake provider, healthy). The same run
# goes at once through per-isolate breakers and through no breaker at all, each on its own
# Miniflare. It prints the object's state transitions as they happen and a line per second, then
# a comparison table (users left with no answer, answers by primary and backup, primary calls,
# latency); then a heavy-tailed provider streamed without and with `hedge` (time to first token
# p50/p99, extra requests); and draws it all into out/live.svg (breakwater-sim plot). Then the simulator replays a longer
# outage under four strategies (out/hung-llm.svg), and the built-in overloaded scenario, where the
# adaptive throttle sheds an overloaded provider's excess (out/overloaded.svg). About a minute once built; installs and builds
# what it needs first (idempotent; the first run on a fresh machine compiles tools for minutes).
# Every server it starts listens on 127.0.0.1 and is stopped at the end, on error and on Ctrl-C.
# Usage: scripts/demo.sh [--short] [--out DIR] [--live-only | --sim-only] [--isolates N] [--rate R]
#   --short: a few seconds per phase (the test, scripts/test-demo.sh); --out: instead of out/
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

live=1
sim=1
out=out
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --live-only) sim=0 ;;
    --sim-only) live=0 ;;
    --out)
      out=${2:?--out needs a directory}
      shift
      ;;
    *) args+=("$1") ;;
  esac
  shift
done
mkdir -p "$out"

if [ "$live" = 1 ]; then
  bash scripts/setup.sh worker
fi
bash scripts/setup.sh rust
log "building the simulator (cargo build --release --features sim)"
cargo build --quiet --release --features sim --bin breakwater-sim
SIM=target/release/breakwater-sim

if [ "$live" = 1 ]; then
  # The Worker with the demonstration app (feature `demo`, /app/*): rebuilt when a source it is
  # built from is newer than the build, or when the build there lacks the app (the Worker to
  # deploy, from a plain scripts/build-worker.sh, does not have it).
  if [ ! -f build/index.js ] || [ ! -f build/index_bg.wasm ] ||
    ! grep -qa DEMO_UPSTREAM build/index_bg.wasm ||
    [ -n "$(find src worker Cargo.toml Cargo.lock -newer build/index_bg.wasm -not -path 'src/sim*' -not -path 'src/bin*' -print -quit)" ]; then
    log "building the Worker (scripts/build-worker.sh --features worker,demo)"
    bash scripts/build-worker.sh --features worker,demo >"$out/build-worker.log" 2>&1 || {
      tail -40 "$out/build-worker.log" >&2
      log "the Worker build failed (log: $out/build-worker.log)"
      exit 1
    }
  fi

  # demo/hedging.mjs (the live demo's hedging column) imports the npm package as a user would.
  bash scripts/install-pkg.sh demo >"$out/install-pkg.log" 2>&1 || {
    tail -40 "$out/install-pkg.log" >&2
    log "installing the npm package into demo/ failed (log: $out/install-pkg.log)"
    exit 1
  }

  # The live demo runs in its own process group (job control), so that whatever it started —
  # Miniflare's workerd processes included — can be stopped as a group if it does not stop them
  # itself. Ctrl-C / SIGTERM are passed on to it: it stops its servers and exits.
  set -m
  WRANGLER_SEND_METRICS=false node demo/live.mjs --out "$out" ${args[@]+"${args[@]}"} &
  pid=$!
  set +m
  stop_group() {
    kill -TERM -- "-$pid" 2>/dev/null || true
    sleep 0.5
    kill -KILL -- "-$pid" 2>/dev/null || true
  }
  interrupted=0
  on_signal() {
    interrupted=1
    kill -TERM "$pid" 2>/dev/null || true
  }
  trap on_signal INT TERM HUP
  trap stop_group EXIT
  status=0
  while :; do
    wait "$pid" && status=0 || status=$?
    # `wait` returns early when a trapped signal arrives: wait again for the demo to finish.
    kill -0 "$pid" 2>/dev/null || break
  done
  trap - INT TERM HUP
  stop_group
  trap - EXIT
  if [ "$interrupted" = 1 ]; then
    log "interrupted"
    exit 130
  fi
  if [ "$status" != 0 ]; then
    log "the live demo failed (exit $status)"
    exit "$status"
  fi
  "$SIM" plot "$out/live.json" --svg "$out/live.svg"
fi

if [ "$sim" = 1 ]; then
  printf '\n=== the simulator: hung-llm (40 users, a 90 s outage, retries at 1/2/4/8 s), simulated time ===\n'
  "$SIM" run hung-llm --svg "$out/hung-llm.svg"
  printf '\n=== the simulator: a provider overloaded for 60 s (capacity 28 calls), a failure-rate breaker with the adaptive throttle, simulated time ===\n'
  "$SIM" run overloaded --svg "$out/overloaded.svg"
  printf '\n=== the simulator: a heavy-tailed provider (3 %% of first tokens ~30 s), hedged within a 10 %% budget, simulated time ===\n'
  "$SIM" run heavy-tail --svg "$out/heavy-tail.svg"
fi
