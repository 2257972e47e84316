#!/usr/bin/env bash
# The README's main-job command, run to completion in its short mode: `scripts/demo.sh --short`
# (installs and builds what is missing, then the live demo in workerd with a few seconds per phase,
# then the simulator's seed 000). Asserts that it finished by itself, that the object's state
# transitions and the per-second lines were printed, that the table shows the shared breaker
# spending fewer upstream calls during the outage than per-isolate breakers (and those fewer than
# no breaker), that the SVG timelines were written, and that no process it started is left.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[test-demo] %s\n' "$*" >&2; }
fail() {
  log "FAIL: $*"
  exit 1
}

work=$(mktemp -d /tmp/breakwater-test-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
out_log="$work/demo.log"

# Every process the demo starts inherits this variable: after the run, none may carry it.
marker="breakwater-test-demo-$$-$RANDOM"
export BREAKWATER_DEMO_RUN="$marker"

log "running scripts/demo.sh --short --out $work/out"
start=$SECONDS
status=0
timeout --kill-after=10 300 bash scripts/demo.sh --short --out "$work/out" >"$out_log" 2>&1 || status=$?
cat "$out_log"
log "demo took $((SECONDS - start)) s, exit status $status"
[ "$status" = 0 ] || fail "scripts/demo.sh --short exited with $status"

grep -q '^live demo finished in' "$out_log" || fail "the live demo did not report finishing"
grep -q 'shared object: CLOSED → OPEN' "$out_log" || fail "no CLOSED → OPEN transition of the shared object was printed"
grep -q 'shared object: HALF_OPEN → CLOSED' "$out_log" || fail "the shared object never closed again after the outage"
grep -Eq '^\[ *[0-9.]+s\] outage +\|' "$out_log" || fail "no per-second line during the outage"

# The comparison table: the "during outage" column (the third number after the strategy).
during() {
  local row
  row=$(grep -m1 "^$1  " "$out_log") || fail "no table row for '$1'"
  sed "s/^$1//" <<<"$row" | awk '{ print $3 }'
}
shared=$(during 'shared breaker (Durable Object)')
local_=$(during 'breaker per isolate')
none=$(during 'no breaker')
log "upstream calls during the outage: shared $shared, per-isolate $local_, none $none"
[[ "$shared" =~ ^[0-9]+$ && "$local_" =~ ^[0-9]+$ && "$none" =~ ^[0-9]+$ ]] || fail "could not read the table"
[ "$shared" -lt "$local_" ] || fail "the shared breaker spent $shared upstream calls during the outage, per-isolate breakers $local_"
[ "$local_" -lt "$none" ] || fail "per-isolate breakers spent $local_ upstream calls during the outage, no breaker $none"

for f in live.svg seed000.svg; do
  [ -s "$work/out/$f" ] || fail "$f was not written"
  grep -q '<svg' "$work/out/$f" || fail "$f is not an SVG document"
done
grep -q 'shared breaker: ' "$work/out/live.svg" || fail "live.svg has no shared-breaker panel"
grep -q 'breaker per instance: ' "$work/out/live.svg" || fail "live.svg has no per-isolate panel"
[ -s "$work/out/live.json" ] || fail "live.json was not written"

# `breakwater-sim plot` names the field of a bad recording.
printf '{"instances": 6, "strategies": [{"strategy": "sharde_breaker", "calls": [1, 2]}]}' >"$work/bad.json"
err=$(target/release/breakwater-sim plot "$work/bad.json" --svg "$work/bad.svg" 2>&1) && fail "plot accepted a bad strategy name"
grep -q 'strategies\[0\]\.strategy' <<<"$err" || fail "plot's error does not name the field: $err"
printf '{"instances": 6, "strategies": [{"strategy": "shared_breaker", "calls": [1, -2]}]}' >"$work/bad.json"
err=$(target/release/breakwater-sim plot "$work/bad.json" --svg "$work/bad.svg" 2>&1) && fail "plot accepted a negative count"
grep -q 'strategies\[0\]\.calls\[1\]' <<<"$err" || fail "plot's error does not name the field: $err"

# Nothing left running: no process carries the marker (workerd included: Miniflare passes the
# environment on).
export -n BREAKWATER_DEMO_RUN
sleep 1
left=()
for env in /proc/[0-9]*/environ; do
  if { tr '\0' '\n' <"$env"; } 2>/dev/null | grep -qx "BREAKWATER_DEMO_RUN=$marker"; then
    pid=${env#/proc/}
    pid=${pid%/environ}
    [ "$pid" = "$$" ] && continue
    left+=("$pid $({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | cut -c1-80)")
  fi
done
if [ ${#left[@]} -gt 0 ]; then
  printf '  left running: %s\n' "${left[@]}" >&2
  fail "${#left[@]} process(es) started by the demo are still running"
fi
log "ok: the demo ran to completion, shared $shared < per-isolate $local_ < none $none upstream calls during the outage, SVGs written, no process left"
