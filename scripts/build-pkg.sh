#!/usr/bin/env bash
# Builds the npm package `breakwater` into pkg/: the wasm (no_std core + numeric boundary), the
# wasm-bindgen glue (`bundler` target, loaded by our own entry points: js/entry/), the TypeScript
# layer bundled as ESM and CJS, the Node entries with the .wasm inlined, the .d.ts, package.json.
# pkg/package.json is written last: it is there only after a complete build.
# Usage: scripts/build-pkg.sh [--if-stale]   (scripts/install-pkg.sh packs and installs the result)
#   --if-stale: do nothing when pkg/package.json is newer than every file the build reads
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

if [ "${1:-}" = --if-stale ] && [ -f pkg/package.json ] &&
  [ -z "$(find src js Cargo.toml Cargo.lock package-lock.json scripts/build-pkg.sh -newer pkg/package.json -print -quit)" ]; then
  log "pkg/ is up to date"
  exit 0
fi

if ! wasm-bindgen --version 2>/dev/null | grep -q " $(locked_version wasm-bindgen)\$"; then
  bash scripts/setup.sh wasm
fi
if [ ! -x node_modules/.bin/esbuild ] || [ ! -x node_modules/.bin/tsc ]; then
  log "installing node dev dependencies"
  npm ci --no-audit --no-fund
fi

log "compiling the wasm (profile wasm, no_std)"
cargo build --quiet --lib --profile wasm --target wasm32-unknown-unknown --no-default-features --features wasm,terse
WASM=target/wasm32-unknown-unknown/wasm/breakwater.wasm

OUT=pkg
rm -rf "$OUT"
mkdir -p "$OUT/dist"

# wasm-bindgen glue (`bundler` target, loaded by our own entry points, in $OUT/<web dir>), then
# binaryen's wasm-opt (npm package binaryen@132; Debian's is too old for this output).
# Usage: emit WASM NAME WEB_DIR
emit() {
  local wasm=$1 name=$2 web_dir=$3
  mkdir -p "$OUT/$web_dir"
  wasm-bindgen --remove-name-section --remove-producers-section --no-typescript --out-name "$name" \
    --target bundler --out-dir "$OUT/$web_dir" "$wasm"
  # The bundler target's own entry relies on wasm ESM integration; our entry points replace it.
  rm -f "$OUT/$web_dir/$name.js"
  if [ -x node_modules/.bin/wasm-opt ]; then
    for f in "$OUT/$web_dir/${name}_bg.wasm"; do
      # -Os gzips a little smaller than -Oz here; --converge and dropping the target_features
      # section shave a few hundred bytes more. --low-memory-unused (constant offsets folded into
      # loads and stores, 80 B gzip) holds for rustc's layout: the stack comes first, its 1 MiB
      # grows down towards address 0, and nothing here nears its bottom KB (no deep recursion;
      # serde_json stops at 128 levels).
      node_modules/.bin/wasm-opt -Os --converge --low-memory-unused --strip-target-features --enable-bulk-memory \
        --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals \
        --enable-reference-types --enable-multivalue "$f" -o "$f"
    done
  else
    log "node_modules/.bin/wasm-opt missing: shipping $name unoptimised"
  fi
}
emit "$WASM" breakwater web

log "bundling the TypeScript layer"
esb=(node_modules/.bin/esbuild --bundle --platform=neutral --target=es2022
  --minify --legal-comments=none --log-level=warning)
# ESM: the stream guard (js/src/guard.ts, imported with import()) becomes a chunk of its own,
# fetched on the first stream() call; CJS inlines it.
"${esb[@]}" api=js/src/internal.ts --format=esm --splitting --outdir="$OUT/dist" \
  --out-extension:.js=.mjs --chunk-names='[name]-[hash]'
"${esb[@]}" js/src/internal.ts --format=cjs --outfile="$OUT/dist/api.cjs"
cp js/entry/*.mjs "$OUT/dist/"

# The Node/Bun entries (`node` condition, ESM and CJS): each bundled with its glue, its .wasm
# inlined as base64 in a module of its own (NAME-wasm.mjs / .cjs, imported by the entry), so that
# bundlers which follow only JavaScript imports (Next.js's Turbopack and webpack) carry the wasm
# along and nothing is read from disk at run time. Node prints the source line of an uncaught
# error's throw site: the base64 stays out of the code's lines, and the code's lines are wrapped
# at 160 characters (minified, the whole entry would be one line of 70 to 380 KB).
# Usage: node_entry NAME   (reads $OUT/dist/NAME.mjs, writes NAME.cjs and NAME.mjs in place)
node_entry() {
  node --input-type=module - "$OUT/dist" "$1" <<'JS'
import path from 'node:path';
import { build } from 'esbuild';
const [dist, name] = process.argv.slice(2);
const common = { bundle: true, platform: 'node', target: 'es2022', minify: true, legalComments: 'none', logLevel: 'warning' };
let wasm;
for (const [format, ext] of [['cjs', 'cjs'], ['esm', 'mjs']]) {
  const wasmModule = `./${name}-wasm.${ext}`;
  await build({
    ...common, format, entryPoints: [path.join(dist, `${name}.mjs`)], outfile: path.join(dist, `${name}.${ext}`),
    allowOverwrite: true, lineLimit: 160, external: ['breakwater', 'breakwater/shared'],
    plugins: [{
      name: 'wasm-module',
      setup(b) {
        b.onResolve({ filter: /\.wasm$/ }, (args) => {
          const file = path.resolve(args.resolveDir, args.path);
          if (wasm && wasm !== file) throw new Error(`${name}: a second .wasm (${file})`);
          wasm = file;
          return { path: wasmModule, external: true };
        });
      },
    }],
  });
  if (!wasm) throw new Error(`${name}.mjs imports no .wasm`);
  // The bytes are the CommonJS module's exports: what an ESM default import of it gives in Node.
  const contents = format === 'cjs' ? `module.exports = require(${JSON.stringify(wasm)});` : `export { default } from ${JSON.stringify(wasm)};`;
  await build({
    ...common, format, outfile: path.join(dist, `${name}-wasm.${ext}`), loader: { '.wasm': 'binary' },
    stdin: { contents, resolveDir: dist },
  });
}
JS
}
node_entry node

log "emitting declarations"
node_modules/.bin/tsc -p js/tsconfig.json
echo "export * from './types/index.js';" > "$OUT/dist/index.d.ts"

# `breakwater/prometheus` and `breakwater/otel`: the metrics adapters (js/src/prometheus.ts,
# js/src/otel.ts). They import only types from the main entry, so they bundle no wasm; the OTel one
# takes the app's Meter and never imports @opentelemetry/api. Declarations come from tsc above.
for adapter in prometheus otel; do
  log "bundling breakwater/$adapter"
  adapter_esb=(node_modules/.bin/esbuild "js/src/$adapter.ts" --bundle --platform=neutral --target=es2022
    --minify --legal-comments=none --log-level=warning --external:@opentelemetry/api)
  "${adapter_esb[@]}" --format=esm --outfile="$OUT/dist/$adapter.mjs"
  "${adapter_esb[@]}" --format=cjs --outfile="$OUT/dist/$adapter.cjs"
  echo "export * from './types/$adapter.js';" > "$OUT/dist/$adapter.d.ts"
done

# `breakwater/shared` and `breakwater/store`: the shared breaker. The core's lease client and
# coordinator come as a second wasm module (feature wasm-shared, with the protocol's JSON), so
# that the main entry does not carry them; its glue is loaded per runtime like the main one
# (js/entry/shared-*). Both entries import the main entry as `breakwater` (one copy of the
# breaker API, the errors and the classification); the store imports `breakwater/shared`.
log "compiling the shared breaker's wasm (feature wasm-shared)"
# opt-level "z" here: "s" makes this module 8 % larger. `cargo rustc --crate-type cdylib`, not
# `cargo build`: with the rlib built alongside, cargo drops the profile's LTO (17 % larger).
CARGO_PROFILE_WASM_OPT_LEVEL=z cargo rustc --quiet --lib --crate-type cdylib --profile wasm --target wasm32-unknown-unknown \
  --no-default-features --features wasm-shared --target-dir target/wasm-shared
emit target/wasm-shared/wasm32-unknown-unknown/wasm/breakwater.wasm breakwater_shared web-shared
log "bundling breakwater/shared and breakwater/store"
sub_esb=(node_modules/.bin/esbuild --bundle --platform=neutral --target=es2022 --minify
  --legal-comments=none --log-level=warning --external:breakwater --external:breakwater/shared)
"${sub_esb[@]}" js/src/shared/internal.ts --format=esm --outfile="$OUT/dist/shared-api.mjs"
"${sub_esb[@]}" js/src/shared/internal.ts --format=cjs --outfile="$OUT/dist/shared-api.cjs"
node_entry shared-node
"${sub_esb[@]}" js/src/store.ts --format=esm --outfile="$OUT/dist/store.mjs"
"${sub_esb[@]}" js/src/store.ts --format=cjs --outfile="$OUT/dist/store.cjs"
# `breakwater/ai`: the AI SDK middleware and fallback model. Like the store, it imports the main
# entry as `breakwater` (no second copy of the wasm or the breaker API) and nothing from `ai`.
log "bundling breakwater/ai"
"${sub_esb[@]}" js/src/ai.ts --format=esm --outfile="$OUT/dist/ai.mjs"
"${sub_esb[@]}" js/src/ai.ts --format=cjs --outfile="$OUT/dist/ai.cjs"
# `breakwater/cloudflare`: the Durable Object and routes for the user's own Worker, over the
# shared module's coordinator (imported as `breakwater/shared`, so no third copy of the wasm).
log "bundling breakwater/cloudflare"
# ESM only: it imports the runtime's `cloudflare:workers`, which exists only in workerd.
"${sub_esb[@]}" js/src/cloudflare.ts --format=esm --external:cloudflare:workers --outfile="$OUT/dist/cloudflare.mjs"
node_modules/.bin/tsc -p js/tsconfig.shared.json
echo "export * from './types/shared/index.js';" > "$OUT/dist/shared.d.ts"
echo "export * from './types/store.js';" > "$OUT/dist/store.d.ts"
echo "export * from './types/ai.js';" > "$OUT/dist/ai.d.ts"
echo "export * from './types/cloudflare.js';" > "$OUT/dist/cloudflare.d.ts"

[ -f js/README.md ] && cp js/README.md "$OUT/README.md"
# wasm-bindgen / wasm-pack may leave a `.gitignore` with `*`, which would empty `npm pack`.
find "$OUT" -name .gitignore -delete

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
node -e '
  const fs = require("fs");
  const p = JSON.parse(fs.readFileSync("js/package.template.json", "utf8"));
  p.version = process.argv[1];
  fs.writeFileSync(process.argv[2], JSON.stringify(p, null, 2) + "\n");
' "$version" "$OUT/package.json"

log "done: $OUT/ (breakwater@$version)"
