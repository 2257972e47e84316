#!/usr/bin/env bash
# Tests of scripts/setup.sh itself, the cheap steps (no `cargo install`): in the official Rust
# container image's layout, CARGO_HOME elsewhere (/usr/local/cargo there) and no ~/.cargo, the
# wasm-bindgen-cli step finds the crate in $CARGO_HOME's registry cache, unpacks it and repairs
# its lock file until `cargo fetch --locked` passes (it once looked in ~/.cargo and failed with
# `ls: cannot access '/root/.cargo/registry/cache/*/…'`). Simulated with a temporary HOME and a
# temporary CARGO_HOME whose registry is a link to this machine's, so nothing is downloaded again.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

# The real step first (idempotent): it leaves the crate in the registry cache.
bash scripts/setup.sh wasm
version=$(locked_version wasm-bindgen)
registry=${CARGO_HOME:-$HOME/.cargo}/registry
if ! ls "$registry"/cache/*/"wasm-bindgen-cli-$version.crate" >/dev/null 2>&1; then
  log "wasm-bindgen-cli-$version.crate is not in $registry/cache (scripts/setup.sh wasm puts it there)"
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/home" "$tmp/cargo" "$tmp/work"
ln -s "$registry" "$tmp/cargo/registry"

log "the wasm-bindgen-cli step with CARGO_HOME=$tmp/cargo and HOME=$tmp/home (no .cargo there)"
# rustup's proxies (cargo) find their toolchains by RUSTUP_HOME, which moves with HOME otherwise.
dir=$(RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} HOME="$tmp/home" CARGO_HOME="$tmp/cargo" \
  bash -c '. scripts/setup.sh && wasm_bindgen_cli_source "$1"' setup "$tmp/work")
[ -f "$dir/Cargo.lock" ] && [ -f "$dir/Cargo.toml" ] || { log "no unpacked crate at '$dir'"; exit 1; }
[ ! -e "$tmp/home/.cargo" ] || { log "the step wrote to ~/.cargo"; exit 1; }
log "ok: unpacked from \$CARGO_HOME's cache into $(basename "$dir"), lock file fetchable (cargo fetch --locked)"
