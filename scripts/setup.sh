#!/usr/bin/env bash
# Installs the tools the build and the tests need, skipping whatever is already there.
# Usage: scripts/setup.sh [rust] [wasm] [browser] [node]   (no argument: everything)
set -euo pipefail
cd "$(dirname "$0")/.."

WASM_BINDGEN_VERSION=0.2.130
WASM_PACK_VERSION=0.15.1

log() { printf '[setup] %s\n' "$*" >&2; }

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

# wasm-bindgen-cli must equal the wasm-bindgen version in Cargo.lock. Its published lock file pins a
# crate the registry no longer serves, so build it from the unpacked crate, stepping back whichever
# locked package the registry refuses until `cargo fetch --locked` succeeds.
install_wasm_bindgen_cli() {
  if command -v wasm-bindgen >/dev/null && wasm-bindgen --version | grep -q " $WASM_BINDGEN_VERSION"; then
    return
  fi
  log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (several minutes)"
  local work crate
  work=$(mktemp -d)
  crate=$(ls ~/.cargo/registry/cache/*/wasm-bindgen-cli-$WASM_BINDGEN_VERSION.crate 2>/dev/null | head -1 || true)
  if [ -z "$crate" ]; then
    # Let cargo download the crate into its cache; the install itself may fail on the lock file.
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --locked >/dev/null 2>&1 && return || true
    crate=$(ls ~/.cargo/registry/cache/*/wasm-bindgen-cli-$WASM_BINDGEN_VERSION.crate | head -1)
  fi
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
  (cd "$dir" && cargo install --path . --locked)
  rm -rf "$work"
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

want=("$@")
[ ${#want[@]} -eq 0 ] && want=(rust wasm browser)
for w in "${want[@]}"; do
  case "$w" in
    rust) setup_rust ;;
    wasm) setup_wasm ;;
    browser) setup_browser ;;
    *) log "unknown part: $w"; exit 2 ;;
  esac
done
