#!/usr/bin/env bash
# The Grafana dashboard (dashboards/breakwater.json) against a real Prometheus (Debian's package,
# installed by `scripts/setup.sh prometheus`): Prometheus scrapes the short live demo's shared
# Worker, /metrics?format=prometheus with the demo's ADMIN_TOKEN, every second, with the scrape
# config of dashboards/README.md (tests/dashboard/prometheus-config.mjs); the demo's Worker is
# its target as soon as it listens (demo/live.mjs writes it under DEMO_PROMETHEUS_TARGETS). Once
# the demo has ended (the provider recovered: the breaker opened and closed again),
# tests/dashboard/dashboard.test.mjs (node:test) evaluates every query of every panel over the
# demo's span through Prometheus' HTTP API and checks that each has data (a finite value, not
# zero throughout), and that the state panel shows the breaker open, then closed at the end.
# Prometheus and the demo listen on 127.0.0.1 only and are stopped at the end, on failure and on
# Ctrl-C too; no process started here is left.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
fail() {
  log "FAIL: $*"
  exit 1
}

bash scripts/setup.sh prometheus
PROMETHEUS=/usr/bin/prometheus

work=$(mktemp -d /tmp/breakwater-test-dashboard.XXXXXX)
prom_pid=
demo_pid=
stop() {
  local pid=$1 i
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  stop "$demo_pid"
  stop "$prom_pid"
  demo_pid= prom_pid=
  rm -rf "$work"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

# Every process started here inherits this variable: at the end, none may carry it.
marker="breakwater-test-dashboard-$$-$RANDOM"
export BREAKWATER_DEMO_RUN="$marker"

# Prometheus on a free port of 127.0.0.1, with the README's scrape config and the demo's targets
# file (empty until the demo's Worker listens).
port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
prom="http://127.0.0.1:$port"
targets="$work/targets.json"
echo '[]' >"$targets"
node tests/dashboard/prometheus-config.mjs "$targets" >"$work/prometheus.yml"
log "prometheus ($($PROMETHEUS --version 2>&1 | head -1)) on $prom, config:"
sed 's/^/    /' "$work/prometheus.yml" >&2
"$PROMETHEUS" --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$port" --log.level=warn >"$work/prometheus.log" 2>&1 &
prom_pid=$!
for i in $(seq 1 100); do
  curl -fsS "$prom/-/ready" >/dev/null 2>&1 && break
  kill -0 "$prom_pid" 2>/dev/null || { cat "$work/prometheus.log" >&2; fail "prometheus exited at start"; }
  sleep 0.1
done
curl -fsS "$prom/-/ready" >/dev/null || { cat "$work/prometheus.log" >&2; fail "prometheus not ready after 10 s"; }

# The short live demo (builds what it needs first). In the background, so that a signal to this
# script stops it at once (`timeout` passes the TERM on to scripts/demo.sh, which stops its servers).
log "running scripts/demo.sh --short --live-only, scraped by prometheus"
DEMO_PROMETHEUS_TARGETS="$targets" timeout --kill-after=10 300 \
  bash scripts/demo.sh --short --live-only --out "$work/out" >"$work/demo.log" 2>&1 &
demo_pid=$!
status=0
wait "$demo_pid" || status=$?
demo_pid=
end_ms=$(date +%s%3N)
if [ "$status" != 0 ]; then
  cat "$work/demo.log" >&2
  fail "scripts/demo.sh --short --live-only exited with $status"
fi
grep -q '^live demo finished in' "$work/demo.log" || { cat "$work/demo.log" >&2; fail "the live demo did not report finishing"; }
grep -q '"127\.0\.0\.1:[0-9]*"' "$targets" || fail "the demo wrote no target into $targets: $(cat "$targets")"
# The span the dashboard is looked at over: from when the demo's Worker listened (it wrote the
# targets file then) to the demo's end.
start_ms=$(stat -c '%.3Y' "$targets" | tr -d .)
log "the demo's Worker was scraped for $(((end_ms - start_ms) / 1000)) s; the shared object's transitions, as the demo printed them:"
grep 'shared object: ' "$work/demo.log" | sed 's/^/    /' >&2 || true

status=0
PROMETHEUS_URL="$prom" RANGE_START_MS="$start_ms" RANGE_END_MS="$end_ms" \
  node --test --test-reporter=spec tests/dashboard/dashboard.test.mjs || status=$?
if [ "$status" != 0 ]; then
  log "prometheus' log:"
  tail -20 "$work/prometheus.log" >&2
  fail "the dashboard's test failed"
fi

# Nothing left running: Prometheus stopped, and no process carries the marker.
stop "$prom_pid"
prom_pid=
export -n BREAKWATER_DEMO_RUN
sleep 0.5
fail_if_left_running "$marker" "this test"
