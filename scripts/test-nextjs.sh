#!/usr/bin/env bash
# The Next.js example: the npm package (built if stale) installed from its tarball into a fresh
# `npm ci` of the example as a user would (scripts/install-pkg.sh --clean), then the end-to-end
# suites against `next start` on 127.0.0.1 after a Turbopack and a webpack build, and against
# `next dev`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
# playwright-core comes from the root dev dependencies.
bash scripts/setup.sh wasm browser node
export NEXT_TELEMETRY_DISABLED=1
# tests/nextjs/shared.test.mjs starts a redis-server of its own (and the Worker's breaker service in
# workerd when build/index.js and tests/worker's Miniflare are there; otherwise that case skips).
ensure_redis
bash scripts/install-pkg.sh --clean examples/nextjs

# The example has no serverExternalPackages: breakwater must bundle as it is, with both of
# Next's bundlers, in production builds and in `next dev`.
status=0
build() { (cd examples/nextjs && rm -rf .next && npx next build "$@"); }

log "next build (Turbopack), every suite against next start"
build
node --test --test-concurrency=1 tests/nextjs/*.test.mjs || status=1

log "next build --webpack, the single-instance suites against next start"
build --webpack
node --test --test-concurrency=1 tests/nextjs/nextjs.test.mjs tests/nextjs/proxy.test.mjs \
  tests/nextjs/stream.test.mjs tests/nextjs/usechat.test.mjs || status=1

log "next dev (Turbopack): the routes and proxy.ts, compiled on first request"
NEXT_E2E_MODE=dev node --test --test-concurrency=1 tests/nextjs/nextjs.test.mjs \
  tests/nextjs/proxy.test.mjs || status=1
exit $status
