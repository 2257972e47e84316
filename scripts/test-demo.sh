#!/usr/bin/env bash
# The README's main-job command, run to completion in its short mode: `scripts/demo.sh --short`
# (installs and builds what is missing, then the live demo in workerd with a few seconds per phase,
# then the simulator's hung-llm). Asserts that it finished by itself, that the object's state
# transitions, the per-second lines and the table were printed, and, from the totals in live.json:
# that the backup model answered during the outage; that every answer is accounted for; that
# every call that reached the stalled primary timed out, and the shared breaker let far fewer
# reach it; that the shared breaker left far fewer users with no answer than no breaker, with a
# lower p95 (the short run is too small for a steady p99: it is printed, not checked); that it
# spent fewer primary calls during the outage than per-isolate breakers (and those fewer than no
# breaker); that hedging on the heavy-tailed provider at least halved p99 time to first token for at
# most 10 % extra requests, the losers' connections closed. Then that the SVG timelines were written, and that no process
# it started is left.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
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

grep -Eq '^\[ *[0-9.]+s\] stalled +\|' "$out_log" || fail "no per-second line during the stall"
for row in 'shared breaker (Durable Object)' 'breaker per isolate' 'no breaker'; do
  grep -q "^$row  " "$out_log" || fail "no table row for '$row'"
done

# The totals, from the recording the table was printed from.
[ -s "$work/out/live.json" ] || fail "live.json was not written"
facts=$(node - "$work/out/live.json" <<'JS'
const j = JSON.parse(require('node:fs').readFileSync(process.argv[2], 'utf8'));
const by = Object.fromEntries(j.strategies.map((s) => [s.key, s]));
const { shared, local, none } = by;
const problems = [];
const check = (ok, what) => ok || problems.push(what);
for (const [key, s] of Object.entries(by)) {
  const answered = s.answered_by_primary + s.answered_by_backup + s.user_visible_errors;
  check(answered === s.requests, `${key}: ${s.requests} requests, but ${answered} answered or failed`);
  check(s.primary_timeouts >= s.upstream_stalled, `${key}: ${s.upstream_stalled} calls reached the stalled primary, only ${s.primary_timeouts} timed out`);
  check(s.answered_by_backup >= s.failed_fast, `${key}: ${s.failed_fast} refused by the breaker, only ${s.answered_by_backup} answered by the backup`);
}
const first = Math.floor(j.outage_start_ms / j.bucket_ms);
const last = Math.ceil(j.recovered_at_ms / j.bucket_ms);
const backupDuringOutage = shared.backup.slice(first, last).reduce((a, b) => a + b, 0);
check(backupDuringOutage > 0, 'shared: the backup answered nothing during the outage');
check(none.primary_timeouts > 0, 'none: no primary call timed out in the stall');
check(shared.primary_timeouts * 4 < none.primary_timeouts, `timed out: shared ${shared.primary_timeouts}, none ${none.primary_timeouts}`);
check(shared.user_visible_errors * 4 < none.user_visible_errors, `user-visible errors: shared ${shared.user_visible_errors}, none ${none.user_visible_errors}`);
check(shared.latency_p95_ms * 2 < none.latency_p95_ms, `p95: shared ${shared.latency_p95_ms} ms, none ${none.latency_p95_ms} ms`);
check(shared.upstream_calls < none.upstream_calls, `primary calls: shared ${shared.upstream_calls}, none ${none.upstream_calls}`);
const during = (s) => s.upstream_calls_during_outage;
check(during(shared) < during(local), `primary calls during the outage: shared ${during(shared)}, per-isolate ${during(local)}`);
check(during(local) < during(none), `primary calls during the outage: per-isolate ${during(local)}, none ${during(none)}`);
// The hedging column (demo/hedging.mjs): the issue's bar, on the heavy-tailed provider.
const h = j.hedging;
check(h && h.requests > 100, 'live.json has no hedging column');
if (h) {
  check(h.hedged_p99_ms * 2 <= h.plain_p99_ms, `hedging: p99 ${h.plain_p99_ms} ms without, ${h.hedged_p99_ms} ms with (not halved)`);
  check(h.extra_requests <= 0.12 * h.requests, `hedging: ${h.extra_requests} extra requests for ${h.requests}`);
  check(h.extra_requests <= 0.1 * h.requests, `hedging: ${h.extra_requests} extra requests, over the 10 % budget of ${h.requests}`);
  check(h.plain_extra_requests === 0, `hedging: ${h.plain_extra_requests} extra requests without hedge`);
  check(h.closed_by_app >= 1 && h.closed_by_app <= h.extra_requests + 1, `hedging: the providers saw ${h.closed_by_app} connections closed by the app`);
  check(h.errors === 0, `hedging: ${h.errors} requests failed`);
}
if (problems.length) {
  console.log(problems.join('; '));
  process.exit(1);
}
console.log(
  `user-visible errors shared ${shared.user_visible_errors} / none ${none.user_visible_errors}, ` +
    `backup answers during the outage ${backupDuringOutage}, stalled-primary timeouts shared ${shared.primary_timeouts} / none ${none.primary_timeouts}, ` +
    `p99 shared ${shared.latency_p99_ms} / none ${none.latency_p99_ms} ms, ` +
    `primary calls during the outage shared ${during(shared)} < per-isolate ${during(local)} < none ${during(none)}; ` +
    `hedging p99 ${h.plain_p99_ms} → ${h.hedged_p99_ms} ms for ${h.extra_requests} extra of ${h.requests} requests`,
);
JS
) || fail "live.json: $facts"
log "live.json: $facts"

for f in live.svg hung-llm.svg heavy-tail.svg; do
  [ -s "$work/out/$f" ] || fail "$f was not written"
  grep -q '<svg' "$work/out/$f" || fail "$f is not an SVG document"
done
grep -q 'shared breaker: ' "$work/out/live.svg" || fail "live.svg has no shared-breaker panel"
grep -q 'breaker per instance: ' "$work/out/live.svg" || fail "live.svg has no per-isolate panel"
grep -q 'class="hedging"' "$work/out/live.svg" || fail "live.svg has no hedging panel"
grep -q '^=== hedging, live' "$out_log" || fail "the live hedging column was not printed"
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
fail_if_left_running "$marker" "the demo"
log "ok: the demo ran to completion ($facts), SVGs written, no process left"
