#!/usr/bin/env bash
# Builds the npm package `breakwater` into pkg/: the wasm (no_std core + numeric boundary), the
# wasm-bindgen glue for Node (`nodejs` target) and for everything else (`bundler` target, loaded by
# our own entry points), the TypeScript layer bundled as ESM and CJS, the .d.ts, package.json.
# Usage: scripts/build-pkg.sh   (then `cd pkg && npm pack` for a tarball)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[build-pkg] %s\n' "$*" >&2; }

WASM_BINDGEN_VERSION=0.2.130
if ! wasm-bindgen --version 2>/dev/null | grep -q " $WASM_BINDGEN_VERSION"; then
  bash scripts/setup.sh wasm
fi
if [ ! -x node_modules/.bin/esbuild ] || [ ! -x node_modules/.bin/tsc ]; then
  log "installing node dev dependencies"
  npm ci --no-audit --no-fund
fi

log "compiling the wasm (profile wasm, no_std)"
cargo build --quiet --lib --profile wasm --target wasm32-unknown-unknown --no-default-features --features wasm
WASM=target/wasm32-unknown-unknown/wasm/breakwater.wasm

OUT=pkg
rm -rf "$OUT"
mkdir -p "$OUT/node" "$OUT/web" "$OUT/dist"
bindgen=(wasm-bindgen --remove-name-section --remove-producers-section --no-typescript)
"${bindgen[@]}" --target nodejs --out-dir "$OUT/node" "$WASM"
"${bindgen[@]}" --target bundler --out-dir "$OUT/web" "$WASM"
# The bundler target's own entry relies on wasm ESM integration; our entry points replace it.
rm -f "$OUT/web/breakwater.js"
echo '{"type":"commonjs"}' > "$OUT/node/package.json"

# binaryen's wasm-opt (npm package binaryen@132; Debian's is too old for this output).
if [ -x node_modules/.bin/wasm-opt ]; then
  for f in "$OUT/node/breakwater_bg.wasm" "$OUT/web/breakwater_bg.wasm"; do
    # -Os gzips a little smaller than -Oz here; --converge and dropping the target_features
    # section shave a few hundred bytes more.
    node_modules/.bin/wasm-opt -Os --converge --strip-target-features --enable-bulk-memory \
      --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals \
      --enable-reference-types --enable-multivalue "$f" -o "$f"
  done
else
  log "node_modules/.bin/wasm-opt missing: shipping the wasm unoptimised"
fi

log "bundling the TypeScript layer"
esb=(node_modules/.bin/esbuild js/src/internal.ts --bundle --platform=neutral --target=es2022
  --minify --legal-comments=none --log-level=warning)
"${esb[@]}" --format=esm --outfile="$OUT/dist/api.mjs"
"${esb[@]}" --format=cjs --outfile="$OUT/dist/api.cjs"
cp js/entry/*.mjs js/entry/*.cjs "$OUT/dist/"

log "emitting declarations"
node_modules/.bin/tsc -p js/tsconfig.json
echo "export * from './types/index.js';" > "$OUT/dist/index.d.ts"

# `breakwater/shared`: the client of the Worker's Durable Object breaker (js/shared.ts, plain
# fetch, no wasm), when that file is present.
shared=false
if [ -f js/shared.ts ]; then
  log "bundling breakwater/shared"
  shared_esb=(node_modules/.bin/esbuild js/shared.ts --bundle --platform=neutral --target=es2022
    --minify --legal-comments=none --log-level=warning)
  "${shared_esb[@]}" --format=esm --outfile="$OUT/dist/shared.mjs"
  "${shared_esb[@]}" --format=cjs --outfile="$OUT/dist/shared.cjs"
  node_modules/.bin/tsc js/shared.ts --declaration --emitDeclarationOnly --outDir "$OUT/dist" \
    --target es2022 --module esnext --moduleResolution bundler --strict --skipLibCheck --lib es2022,dom
  shared=true
fi

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

# `breakwater/store`: the breaker shared through Redis or another compare-and-set store
# (js/store.ts). It imports the main entry as `breakwater` (the package itself: one copy of the wasm).
store=false
if [ -f js/store.ts ]; then
  log "bundling breakwater/store"
  store_esb=(node_modules/.bin/esbuild js/store.ts --bundle --platform=neutral --target=es2022
    --minify --legal-comments=none --log-level=warning --external:breakwater)
  "${store_esb[@]}" --format=esm --outfile="$OUT/dist/store.mjs"
  "${store_esb[@]}" --format=cjs --outfile="$OUT/dist/store.cjs"
  rm -rf target/store-types
  node_modules/.bin/tsc -p js/tsconfig.store.json
  cp target/store-types/store.d.ts "$OUT/dist/store.d.ts"
  store=true
fi

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
node -e '
  const fs = require("fs");
  const p = JSON.parse(fs.readFileSync("js/package.template.json", "utf8"));
  p.version = process.argv[1];
  if (process.argv[3] === "true") {
    p.exports["./shared"] = { types: "./dist/shared.d.ts", import: "./dist/shared.mjs", require: "./dist/shared.cjs" };
  }
  if (process.argv[4] === "true") {
    p.exports["./store"] = { types: "./dist/store.d.ts", import: "./dist/store.mjs", require: "./dist/store.cjs" };
  }
  fs.writeFileSync(process.argv[2], JSON.stringify(p, null, 2) + "\n");
' "$version" "$OUT/package.json" "$shared" "$store"
[ -f js/README.md ] && cp js/README.md "$OUT/README.md"
# wasm-bindgen / wasm-pack may leave a `.gitignore` with `*`, which would empty `npm pack`.
find "$OUT" -name .gitignore -delete

log "done: $OUT/ (breakwater@$version)"
