#!/usr/bin/env bash
# The Rust core: formatting, lints, unit/integration/doc tests, and the no_std build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh rust

cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo clippy --lib --no-default-features --target thumbv7em-none-eabihf -- -D warnings
# The shared breaker's wasm module, the Worker (with and without its demo app) and the
# BREAKERS check command, on the targets they ship for.
cargo clippy --lib --no-default-features --features wasm-shared --target wasm32-unknown-unknown -- -D warnings
cargo clippy --lib --features worker,demo --target wasm32-unknown-unknown -- -D warnings
cargo clippy --features worker-config --bin breakwater-worker-config -- -D warnings
cargo build --lib --no-default-features --target thumbv7em-none-eabihf
cargo test --features json --all-targets
cargo test --features json --doc
# The unit tests again without `std` (e.g. every error type is a `core::error::Error` there too).
cargo test --lib --no-default-features
