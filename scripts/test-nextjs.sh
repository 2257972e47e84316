#!/usr/bin/env bash
# The Next.js example: the built npm package installed from its tarball as a user would, then
# the end-to-end suites against `next start` on 127.0.0.1 after a Turbopack and a webpack build,
# and against `next dev`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/setup.sh wasm browser
export NEXT_TELEMETRY_DISABLED=1
# tests/nextjs/shared.test.mjs starts a redis-server of its own (and the Worker's breaker service in
# workerd when build/index.js and tests/worker's Miniflare are there; otherwise that case skips).
if ! command -v redis-server >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y redis-server >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y redis-server >/dev/null; }
fi

[ -f pkg/package.json ] || scripts/build-pkg.sh
mkdir -p out
rm -f out/breakwater-*.tgz
tarball=$(cd out && npm pack --silent "$root/pkg" | tail -1)

# playwright-core comes from the root dev workspace.
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --loglevel=error

cd examples/nextjs
npm ci --no-audit --no-fund --loglevel=error
npm install --no-save --no-audit --no-fund --loglevel=error "$root/out/$tarball"
cd "$root"

# The example has no serverExternalPackages: breakwater must bundle as it is, with both of
# Next's bundlers, in production builds and in `next dev`.
status=0
log() { printf '[test-nextjs] %s\n' "$*" >&2; }
build() { (cd examples/nextjs && rm -rf .next && npx next build "$@"); }

log "next build (Turbopack), every suite against next start"
build
node --test --test-concurrency=1 tests/nextjs/*.test.mjs || status=1

log "next build --webpack, the single-instance suites against next start"
build --webpack
node --test --test-concurrency=1 tests/nextjs/nextjs.test.mjs tests/nextjs/proxy.test.mjs \
  tests/nextjs/stream.test.mjs || status=1

log "next dev (Turbopack): the routes and proxy.ts, compiled on first request"
NEXT_E2E_MODE=dev node --test --test-concurrency=1 tests/nextjs/nextjs.test.mjs \
  tests/nextjs/proxy.test.mjs || status=1
exit $status
