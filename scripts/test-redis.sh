#!/usr/bin/env bash
# Tests of breakwater/store with a real Redis: installs redis-server from Debian if missing
# (idempotent), builds pkg/ if stale and installs the packed tarball into a clean tests/redis as a
# user would (scripts/install-pkg.sh), starts redis-server on a free 127.0.0.1 port, runs tests/redis/*.test.mjs (8 Node
# processes sharing one breaker, a compare-and-set storm, Redis killed mid-run, @upstash/redis
# through a local REST bridge, ...), and always stops the server. The test that kills Redis
# starts its own server (same binary) and stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_redis
redis-server --version >&2
# The `redis` client comes from the root dev dependencies.
bash scripts/setup.sh node
bash scripts/install-pkg.sh --clean tests/redis

port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
dir=$(mktemp -d)
log "starting redis-server on 127.0.0.1:$port"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" --daemonize no \
  >"$dir/redis.log" 2>&1 &
redis_pid=$!
stop() {
  kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null || true
  rm -rf "$dir"
}
trap stop EXIT
for _ in $(seq 1 100); do
  grep -q 'Ready to accept connections' "$dir/redis.log" 2>/dev/null && break
  if ! kill -0 "$redis_pid" 2>/dev/null; then cat "$dir/redis.log" >&2; exit 1; fi
  sleep 0.1
done

log "node:test tests/redis"
REDIS_PORT=$port node --test --test-reporter=spec --test-concurrency=1 tests/redis/*.test.mjs
log "all Redis store tests passed"
