#!/usr/bin/env bash
# The Cloudflare Worker variant's tests: the README's deploy recipe as a dry run
# (scripts/test-deploy.sh), the protocol, object and lease logic natively, then the Worker built
# with worker-build and driven in real workerd through Miniflare (node:test): eight
# app Workers (4 Rust, 4 JavaScript) sharing one breaker object against a fake upstream,
# persistence across a restart, an unreachable object, malformed input; the JavaScript object
# (breakwater/cloudflare) in a user's own Worker: isolates sharing it, restarts, rolling deploys,
# pinned settings, its routes, ids without names (both objects); real `wrangler dev` (one
# process and two, the JavaScript and the Rust object), and the measurements.
# Installs what is missing first (idempotent). Servers listen on 127.0.0.1 only; every test stops
# its Miniflare and upstream.
# Usage: scripts/test-worker.sh [--setup-only] [test file ...]   (default: every *.test.mjs)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

bash scripts/setup.sh worker
[ "${1:-}" = "--setup-only" ] && exit 0

log "the deploy recipe: wrangler deploy --dry-run from the root, from elsewhere, from a fresh clone"
bash scripts/test-deploy.sh

log "unit tests (native): configuration, routes"
cargo test --quiet --features worker --lib worker::

log "the BREAKERS check command: wrangler.toml passes, mistakes are named with exit status 2"
cargo run --quiet --features worker-config --bin breakwater-worker-config -- check wrangler.toml >/dev/null
bad=$(mktemp)
printf '[vars]\nBREAKERS = \x27{"a": {"lease_ms": 0}}\x27\n' >"$bad"
if out=$(cargo run --quiet --features worker-config --bin breakwater-worker-config -- check "$bad" 2>&1); then
  log "a bad BREAKERS passed the check"; exit 1
fi
grep -q 'BREAKERS\["a"\]: invalid `lease_ms`: 0' <<<"$out" || { log "unexpected message: $out"; exit 1; }
printf '[vars]\nBREAKERS = { a = { breaker = { trip = { kind = "slow_call_rate", threshold_percent = 50.0, slow_call_ms = 100, minimum_calls = 5, window = { calls = 10 } } } } }\n' >"$bad"
if out=$(cargo run --quiet --features worker-config --bin breakwater-worker-config -- check "$bad" 2>&1); then
  log "a slow-call rule passed the check"; exit 1
fi
grep -q 'slow_call_rate' <<<"$out" || { log "unexpected message: $out"; exit 1; }
rm -f "$bad"

# The app Workers of the tests are the Rust demo app (/app/*): build it in.
log "building the Worker (worker-build --release --features worker,demo)"
mkdir -p target
bash scripts/build-worker.sh --features worker,demo >target/build-worker.log 2>&1 || {
  tail -40 target/build-worker.log >&2
  log "worker build failed (log: target/build-worker.log)"
  exit 1
}
ls -l build/index.js build/index_bg.wasm >&2
# The module is linked by worker/ (a cdylib over the crate): the object's class and the fetch
# handler, both defined in the crate, must be among its exports, and the JavaScript must export
# the class and the default entry.
node --input-type=module - build/index_bg.wasm build/index.js <<'JS' || { log "the built Worker lacks an export"; exit 1; }
import fs from 'node:fs';
const [wasmPath, jsPath] = process.argv.slice(2);
// The names of the export section (id 7), read without compiling the module.
const b = fs.readFileSync(wasmPath);
let p = 8;
const leb = () => { let r = 0, s = 0, x; do { x = b[p++]; r += (x & 0x7f) * 2 ** s; s += 7; } while (x & 0x80); return r; };
const names = new Set();
while (p < b.length) {
  const id = b[p++], end = leb() + p;
  if (id === 7) for (let n = leb(); n > 0; n--) { const l = leb(); names.add(b.toString('utf8', p, p + l)); p += l + 1; leb(); }
  p = end;
}
const missing = ['fetch', 'breakerobject_new', 'breakerobject_fetch', 'breakerobject_alarm'].filter((n) => !names.has(n));
const js = fs.readFileSync(jsPath, 'utf8');
if (!/\bas BreakerObject\b/.test(js)) missing.push('BreakerObject (index.js)');
if (!/\bas default\b/.test(js)) missing.push('default (index.js)');
if (missing.length) { console.error(`missing exports: ${missing.join(', ')}`); process.exit(1); }
console.error(`build/: ${names.size} wasm exports, fetch and BreakerObject among them`);
JS

# The JavaScript app Worker imports the package (breakwater/shared) as a user would: installed
# from its tarball; esbuild resolves it through its exports map with the workerd condition, and
# copies the two .wasm modules next to the bundle.
bash scripts/install-pkg.sh tests/worker
log "bundling the JavaScript app Worker"
cd tests/worker
rm -rf .build && mkdir -p .build
node_modules/.bin/esbuild apps/js-app.ts --bundle --format=esm --platform=neutral --target=es2022 \
  --conditions=workerd,worker --loader:.wasm=copy --outfile=.build/js-app.mjs --log-level=warning
# The Worker a JavaScript developer writes: BreakerObject from breakwater/cloudflare in their own
# Worker, bundled as wrangler bundles it ('cloudflare:workers' is the runtime's); its clients from
# breakwater/cloudflare (user-worker, as the README has it), and from breakwater/shared.
for app in user-worker user-worker-shared; do
  node_modules/.bin/esbuild "apps/$app.ts" --bundle --format=esm --platform=neutral --target=es2022 \
    --conditions=workerd,worker --loader:.wasm=copy --external:cloudflare:workers \
    --outfile=".build/$app.mjs" --log-level=warning
done

files=("$@")
[ ${#files[@]} -eq 0 ] && files=(shared.test.mjs throttle.test.mjs persistence.test.mjs fallback.test.mjs malformed.test.mjs service.test.mjs routes.test.mjs cloudflare.test.mjs cloudflare-routes.test.mjs status-page.test.mjs wrangler-dev.test.mjs measure.test.mjs)
export WRANGLER_SEND_METRICS=false
rm -rf .tmp
status=0
node --test --test-concurrency=1 --test-reporter=spec "${files[@]}" || status=$?
rm -rf .tmp
if [ -f .build/measurements.json ]; then
  log "measurements: $(tr -d ' \n' < .build/measurements.json)"
fi
# docs/sizes.md's Workers rows are what `wrangler deploy --dry-run` prints for the README's
# JavaScript Worker and for the Rust Worker (scripts/sizes.mjs; its entries' rows are checked by
# tests/js/sizes-doc.test.mjs in scripts/test-js.sh). Here, where wrangler, worker-build and the
# package in tests/worker are set up; last, because the Rust Worker's dry run rebuilds build/
# without the demo app the tests above run.
log "docs/sizes.md: the Workers' figures (wrangler deploy --dry-run)"
node ../../scripts/sizes.mjs --check --only workers || status=1
exit $status
