#!/usr/bin/env bash
# The Next.js example: the built npm package installed from its tarball as a user would,
# `next build`, then the end-to-end suite against `next start` on 127.0.0.1.
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
rm -rf .next
npx next build
cd "$root"
node --test --test-concurrency=1 tests/nextjs/*.test.mjs
