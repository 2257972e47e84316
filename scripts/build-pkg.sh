#!/usr/bin/env bash
# Builds the npm package `breakwater` into pkg/: js/build.mjs does the work (the wasm modules, the
# bundles, the declarations and the exports map, from one table of the package's subpaths); this
# script first makes sure its tools are there (wasm-bindgen at Cargo.lock's version, the Node dev
# dependencies: esbuild, TypeScript, binaryen).
# Usage: scripts/build-pkg.sh [--if-stale]   (scripts/install-pkg.sh packs and installs the result)
#   --if-stale: do nothing when pkg/package.json is newer than every file the build reads
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

if ! wasm-bindgen --version 2>/dev/null | grep -q " $(locked_version wasm-bindgen)\$"; then
  bash scripts/setup.sh wasm
fi
if [ ! -x node_modules/.bin/esbuild ] || [ ! -x node_modules/.bin/tsc ]; then
  log "installing node dev dependencies"
  npm ci --no-audit --no-fund
fi
exec node js/build.mjs "$@"
