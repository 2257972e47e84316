#!/usr/bin/env bash
# Tests of the JS/TS package: builds pkg/ if stale, installs its `npm pack` tarball into a clean
# tests/js as a user would (scripts/install-pkg.sh), and runs it in every runtime:
#   - the core's tests compiled to wasm32 under Node and headless Chromium (wasm-pack test)
#   - node:test suites: ESM, CommonJS require, official SDKs against a fake provider, the README
#     example as written, the .d.ts under tsc, the gzip size ceiling, docs/sizes.md against a
#     fresh measurement and no size quoted elsewhere (tests/js/sizes-doc.test.mjs), the metrics adapters
#     (breakwater/prometheus checked with parse-prometheus-text-format and prom-client,
#     breakwater/otel with the OpenTelemetry SDK's in-memory exporter; root devDependencies)
#   - a Chromium page (playwright-core + /usr/bin/chromium), Vercel's edge-runtime, workerd
#     (Miniflare), and Deno and Bun when `npm i deno` / `npm i bun` work (one body of checks,
#     tests/js/runtime-cases.mjs, run by tests/js/deno and tests/js/bun).
#   - the package as its checkers judge it: publint --strict and Are the Types Wrong (attw), on
#     the tarball the tests installed (root devDependencies, pinned)
# Servers bind 127.0.0.1 only and are stopped by the tests. No timing assertions.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
failed=()

bash scripts/setup.sh wasm browser node
bash scripts/install-pkg.sh --clean tests/js

run() {
  local name=$1
  shift
  log "$name"
  if "$@"; then
    log "$name: ok"
  else
    log "$name: FAILED"
    failed+=("$name")
  fi
}

# The tarball scripts/install-pkg.sh packed and installed. publint --strict: warnings fail too.
# attw resolves every subpath under node10, node16 (from CommonJS and from ESM) and bundler
# resolution. breakwater/cloudflare is ESM only (it imports the Workers runtime's
# `cloudflare:workers`), which attw reports, rightly, as "ESM (dynamic import only)" for a
# require(): it is checked on its own under attw's esm-only profile (node16 from ESM, bundler),
# every other subpath under the strict profile. No lookup of @types on the registry.
tarball=$(ls target/pack/breakwater-*.tgz)
run "publint --strict" node_modules/.bin/publint run --strict "$tarball"
run "attw: every subpath but breakwater/cloudflare, all resolutions" \
  node_modules/.bin/attw "$tarball" --no-definitely-typed --exclude-entrypoints ./cloudflare
run "attw: breakwater/cloudflare, ESM only" \
  node_modules/.bin/attw "$tarball" --no-definitely-typed --entrypoints ./cloudflare --profile esm-only

# The API reference from the declarations' doc comments: every public symbol and member
# documented, any warning fails (js/typedoc.json; written to target/api, not committed).
run "API reference (TypeDoc, warnings fail)" node_modules/.bin/typedoc --options js/typedoc.json --logLevel Warn

run "node:test (ESM, CJS, SDKs, README, types, browser page, edge-runtime, workerd, size, metrics)" \
  node --test --test-reporter=spec tests/js/*.test.mjs tests/js/*.test.cjs

# The core's tests, the same bodies `cargo test` runs natively (tests/breaker.rs, retry.rs,
# snapshot.rs), and the numeric boundary's (tests/boundary.rs, wasm only), compiled to wasm32:
# `--mode no-install` fails fast instead of building another wasm-bindgen when the installed one
# does not match Cargo.lock.
run "wasm-pack test --node" \
  wasm-pack test --node --mode no-install -- --features wasm \
    --test breaker --test retry --test snapshot --test boundary
run "wasm-pack test --headless --chrome" \
  env WASM_BINDGEN_USE_BROWSER=1 wasm-pack test --headless --chrome --mode no-install -- --features wasm \
    --test breaker --test retry --test snapshot --test boundary

# Deno, if the registry serves it (the npm package `deno` ships the binary as a dependency).
deno_dir=target/js-tools/deno
DENO_VERSION=2.9.6
if [ ! -x "$deno_dir/node_modules/.bin/deno" ]; then
  log "installing deno@$DENO_VERSION from npm into $deno_dir"
  mkdir -p "$deno_dir"
  (cd "$deno_dir" && echo '{"private":true}' > package.json &&
    npm install --silent --no-audit --no-fund --no-package-lock "deno@$DENO_VERSION") || true
fi
if "$deno_dir/node_modules/.bin/deno" --version >/dev/null 2>&1; then
  run "deno test" env DENO_NO_UPDATE_CHECK=1 DENO_DIR="$PWD/target/js-tools/deno-cache" \
    sh -c "cd tests/js && '$PWD/$deno_dir/node_modules/.bin/deno' test --quiet --no-check --no-lock \
      --node-modules-dir=manual --allow-read --allow-env deno/"
else
  log "deno: SKIPPED (npm i deno@$DENO_VERSION did not give a working binary)"
fi

# Bun, likewise: the npm package `bun` ships the binary in an optional dependency
# (@oven/bun-<platform>), which its postinstall links in place of bin/bun.exe.
bun_dir=target/js-tools/bun
BUN_VERSION=1.4.5
if ! "$bun_dir/node_modules/.bin/bun" --version 2>/dev/null | grep -qx "$BUN_VERSION"; then
  log "installing bun@$BUN_VERSION from npm into $bun_dir"
  rm -rf "$bun_dir" && mkdir -p "$bun_dir"
  (cd "$bun_dir" && echo '{"private":true}' > package.json &&
    npm install --silent --no-audit --no-fund --no-package-lock "bun@$BUN_VERSION") || true
  # Where npm was told not to run install scripts, run that postinstall by hand.
  if ! "$bun_dir/node_modules/.bin/bun" --version >/dev/null 2>&1 && [ -f "$bun_dir/node_modules/bun/install.js" ]; then
    (cd "$bun_dir/node_modules/bun" && node install.js) || true
  fi
fi
if "$bun_dir/node_modules/.bin/bun" --version >/dev/null 2>&1; then
  run "bun test" env DO_NOT_TRACK=1 BUN_RUNTIME_TRANSPILER_CACHE_PATH=0 \
    sh -c "cd tests/js && '$PWD/$bun_dir/node_modules/.bin/bun' test ./bun/breakwater.test.mjs"
else
  log "bun: SKIPPED (npm i bun@$BUN_VERSION did not give a working binary)"
fi

if [ ${#failed[@]} -gt 0 ]; then
  log "failed: ${failed[*]}"
  exit 1
fi
log "all JS package tests passed"
