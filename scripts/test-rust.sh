#!/usr/bin/env bash
# The Rust core: formatting, lints, unit/integration/doc tests, and the no_std build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh rust

cargo fmt --all -- --check
# Every feature set that ships, on a target it ships for. A subset is linted on its own: code can
# be dead, or cfg'd out, in it and not in its superset. The simulator (`sim`: the library,
# breakwater-sim and tests/sim.rs) is linted by scripts/test-sim.sh.
# Natively: the default build, and `json` (with `serde`) over every target again, which includes
# the tests compiled only with it.
cargo clippy --all-targets -- -D warnings
cargo clippy --all-targets --features json -- -D warnings
# no_std, alone and with `serde`.
cargo clippy --lib --no-default-features --target thumbv7em-none-eabihf -- -D warnings
cargo clippy --lib --no-default-features --features serde --target thumbv7em-none-eabihf -- -D warnings
# The npm package's two wasm modules (scripts/build-pkg.sh), the Worker as deployed and with its
# demo app (scripts/build-worker.sh), and the BREAKERS check command.
cargo clippy --lib --no-default-features --features wasm,terse --target wasm32-unknown-unknown -- -D warnings
cargo clippy --lib --no-default-features --features wasm-shared --target wasm32-unknown-unknown -- -D warnings
cargo clippy --lib --features worker --target wasm32-unknown-unknown -- -D warnings
cargo clippy --lib --features worker,demo --target wasm32-unknown-unknown -- -D warnings
cargo clippy -p breakwater-worker --features demo --target wasm32-unknown-unknown -- -D warnings
cargo clippy --features worker-config --bin breakwater-worker-config -- -D warnings
cargo build --lib --no-default-features --target thumbv7em-none-eabihf
# A crate depending on this one without default features, as a no_std library does
# (tests/dependent/): it builds for wasm32, the host and thumbv7em, with nothing of this crate
# linked but its rlib (a cdylib in [lib] would fail the first two: no allocator, no panic handler).
host=$(rustc -vV | sed -n 's/^host: //p')
for target in wasm32-unknown-unknown "$host" thumbv7em-none-eabihf; do
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/dependent" \
    cargo check --quiet --manifest-path tests/dependent/Cargo.toml --target "$target"
done
cargo test --features json --all-targets
cargo test --features wasm --test layout
cargo test --features json --doc
# The unit tests again without `std` (e.g. every error type is a `core::error::Error` there too).
cargo test --lib --no-default-features
# `terse` (the npm wasm build) drops only the words.
cargo test --lib --no-default-features --features terse terse_tests
