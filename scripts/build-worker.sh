#!/usr/bin/env bash
# Builds the Cloudflare Worker variant (feature `worker`) into build/index.js + build/index_bg.wasm
# with worker-build, using only local tools: worker-build would otherwise download wasm-bindgen
# and wasm-opt from GitHub and esbuild from npm at build time.
# worker-build builds a cdylib; the crate is an rlib, so it builds worker/ (a cdylib over the crate
# with `worker`, exporting its BreakerObject and fetch handler).
# Without arguments it builds the Worker to deploy (what `wrangler deploy` runs). The tests and
# the live demo add the demonstration app under /app/*: `scripts/build-worker.sh --features
# worker,demo` (worker-build passes every argument after its own on to `cargo build` of worker/,
# whose features are `demo` and `worker`, the latter always on).
# Needs: worker-build 0.8.7, wasm-bindgen-cli equal to Cargo.lock's wasm-bindgen, and the npm
# packages of tests/worker (binaryen, esbuild): scripts/test-worker.sh --setup-only installs them.
# Usage: scripts/build-worker.sh [extra cargo args, e.g. --features worker,demo]
#   (without arguments: wrangler.toml's [build] command; it may be run from any directory)
# Cargo's output goes to $CARGO_TARGET_DIR/worker (default target/worker).
# Running it again on unchanged sources takes about a second: cargo and wasm-bindgen have nothing
# to do and wasm-opt's result is reused when its input is byte for byte the same. That matters
# because `wrangler dev` (4.86) runs the [build] command twice at every start (once to find the
# entry point, once more when its file watcher is ready) and twice after a change to wrangler.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

NODE_BIN="$PWD/tests/worker/node_modules/.bin"
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$(command -v wasm-bindgen || true)}"
export WASM_OPT_BIN="${WASM_OPT_BIN:-$NODE_BIN/wasm-opt}"
export ESBUILD_BIN="${ESBUILD_BIN:-$NODE_BIN/esbuild}"

fail() { log "$*"; exit 1; }
command -v worker-build >/dev/null || fail "worker-build is missing: cargo install worker-build --version 0.8.7 --locked"
[ -n "$WASM_BINDGEN_BIN" ] && [ -x "$WASM_BINDGEN_BIN" ] || fail "wasm-bindgen CLI is missing (scripts/setup.sh wasm)"
locked=$(locked_version wasm-bindgen)
have=$("$WASM_BINDGEN_BIN" --version | awk '{ print $2 }')
[ "$locked" = "$have" ] || fail "wasm-bindgen CLI $have does not match Cargo.lock's $locked"
[ -x "$WASM_OPT_BIN" ] || fail "wasm-opt missing at $WASM_OPT_BIN (npm ci in tests/worker)"
[ -x "$ESBUILD_BIN" ] || fail "esbuild missing at $ESBUILD_BIN (npm ci in tests/worker)"

# Absolute: cargo runs in worker/, worker-build here.
target_dir="${CARGO_TARGET_DIR:-target}/worker"
case $target_dir in /*) ;; *) target_dir=$PWD/$target_dir ;; esac
mkdir -p "$target_dir"
# One build at a time: wrangler may start a second run of this script before the first ends
# (a change to wrangler.toml while a build runs); both write build/.
if command -v flock >/dev/null; then
  exec 9>"$target_dir/.build-worker.lock"
  flock 9
fi

# BREAKERS is checked before anything is built (this is also what `wrangler deploy --dry-run`
# runs): a mistake is named here, not at the first request.
cargo run --quiet --features worker-config --bin breakwater-worker-config -- check wrangler.toml

# Its own target directory: the size-optimised profile below would otherwise invalidate the
# shared target/release cache of the other builds (and wait on their lock).
export CARGO_PROFILE_RELEASE_OPT_LEVEL="${CARGO_PROFILE_RELEASE_OPT_LEVEL:-z}"
# The crate's path, then cargo's arguments; the output goes to build/ here, not worker/build/.
worker-build --release --out-dir ../build worker --target-dir "$target_dir" "$@"

# worker-build's own wasm-opt step follows worker/'s [package.metadata.wasm-pack] (off there),
# so optimise here, with the feature set worker-build would enable for workerd. That takes
# ~15 s; the result is kept under the hash of its input and settings and reused when they repeat
# (the last four: the deployed Worker, the demo build of the tests, and a clone sharing the target).
features=(mutable-globals sign-ext nontrapping-float-to-int bulk-memory multivalue reference-types exception-handling)
opt_args=(-Oz "${features[@]/#/--enable-}")
sha256() { if command -v sha256sum >/dev/null; then sha256sum; else shasum -a 256; fi | cut -c1-64; }
key=$({ sha256 < build/index_bg.wasm; "$WASM_OPT_BIN" --version; echo "${opt_args[*]}"; } | sha256)
cache="$target_dir/wasm-opt"
if [ -f "$cache/$key.wasm" ]; then
  log "wasm-opt: input unchanged, reusing $cache/$key.wasm"
  cp "$cache/$key.wasm" build/index_bg.wasm
else
  "$WASM_OPT_BIN" build/index_bg.wasm -o build/index_bg.opt.wasm "${opt_args[@]}"
  mkdir -p "$cache"
  cp build/index_bg.opt.wasm "$cache/$key.wasm.tmp" && mv "$cache/$key.wasm.tmp" "$cache/$key.wasm"
  ls -t "$cache"/*.wasm | tail -n +5 | while read -r old; do rm -f "$old"; done
  mv build/index_bg.opt.wasm build/index_bg.wasm
fi
log "build/index_bg.wasm: $(wc -c < build/index_bg.wasm) bytes, $(gzip -c build/index_bg.wasm | wc -c) gzipped"
