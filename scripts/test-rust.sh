#!/usr/bin/env bash
# The Rust core: formatting, lints, unit/integration/doc tests, the no_std build, a no_std
# dependent, the declared rust-version, and the crate as published (its files, `cargo publish
# --dry-run`, `cargo test` on it unpacked, its docs as docs.rs builds them).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
scripts/setup.sh rust msrv

cargo fmt --all -- --check
# Every feature set that ships, on a target it ships for. A subset is linted on its own: code can
# be dead, or cfg'd out, in it and not in its superset. The simulator (`sim`: the library,
# breakwater-sim and tests/sim.rs) is linted by scripts/test-sim.sh.
# Natively: the default build, and `json` (with `serde`) over every target again, which includes
# the tests compiled only with it.
cargo clippy --all-targets -- -D warnings
cargo clippy --all-targets --features json -- -D warnings
# The Rust services (tests/services.rs, examples/llm_gateway.rs, benches/services.rs need both),
# and each feature alone.
cargo clippy --all-targets --features json,tower,reqwest-middleware -- -D warnings
cargo clippy --lib --features tower -- -D warnings
cargo clippy --lib --features reqwest-middleware -- -D warnings
# no_std, alone and with `serde`.
cargo clippy --lib --no-default-features --target thumbv7em-none-eabihf -- -D warnings
cargo clippy --lib --no-default-features --features serde --target thumbv7em-none-eabihf -- -D warnings
cargo clippy --lib --no-default-features --features throttle --target thumbv7em-none-eabihf -- -D warnings
# The npm package's four wasm modules (scripts/build-pkg.sh), the Worker as deployed and with its
# demo app (scripts/build-worker.sh), and the BREAKERS check command.
cargo clippy --lib --no-default-features --features wasm,terse --target wasm32-unknown-unknown -- -D warnings
cargo clippy --lib --no-default-features --features wasm,terse,wasm-adaptive --target wasm32-unknown-unknown -- -D warnings
cargo clippy --lib --no-default-features --features wasm-shared --target wasm32-unknown-unknown -- -D warnings
cargo clippy --lib --no-default-features --features wasm-coordinator --target wasm32-unknown-unknown -- -D warnings
cargo clippy --lib --features worker --target wasm32-unknown-unknown -- -D warnings
cargo clippy --lib --features worker,demo --target wasm32-unknown-unknown -- -D warnings
cargo clippy -p breakwater-worker --features demo --target wasm32-unknown-unknown -- -D warnings
cargo clippy --features worker-config --bin breakwater-worker-config -- -D warnings
cargo build --lib --no-default-features --target thumbv7em-none-eabihf
cargo build --lib --no-default-features --features throttle --target thumbv7em-none-eabihf
# A crate depending on this one without default features, as a no_std library does
# (tests/dependent/): it builds for wasm32, the host and thumbv7em, with nothing of this crate
# linked but its rlib (a cdylib in [lib] would fail the first two: no allocator, no panic handler).
host=$(rustc -vV | sed -n 's/^host: //p')
for target in wasm32-unknown-unknown "$host" thumbv7em-none-eabihf; do
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/dependent" \
    cargo check --quiet --manifest-path tests/dependent/Cargo.toml --target "$target"
done
cargo test --features json,tower,reqwest-middleware --all-targets
cargo test --features wasm --test layout
cargo test --features json,tower,reqwest-middleware --doc
# The example an axum gateway user starts from: it drives its gateway through an outage against a
# fake provider on 127.0.0.1, and fails unless the breaker failed fast, served the fallback,
# spared the provider and recovered by itself.
cargo run --quiet --example llm_gateway --features tower,reqwest-middleware
# Plain `cargo test`, as a newcomer runs it first: every target and doctest with the default
# features (the README's examples that need a feature compile only with it).
cargo test --quiet
# The unit tests again without `std` (e.g. every error type is a `core::error::Error` there too).
cargo test --lib --no-default-features
# `terse` (the npm wasm build) drops only the words.
cargo test --lib --no-default-features --features terse terse_tests

# Time taken by each of the steps below, printed as they end.
step_start=$SECONDS
took() { log "$1: $((SECONDS - step_start)) s"; step_start=$SECONDS; }

# --- Rust 1.85, the declared rust-version ---
# tests/rust_version.rs (run above) checks that no dependency declares more than each feature's
# Rust; this compiles the crate itself with that Rust: every feature but worker and demo, which
# need 1.91, and reqwest-middleware, which needs 1.88 (Cargo.toml). Debian's rustc-web 1.85 (scripts/setup.sh msrv), natively only: Debian
# ships no wasm32 or thumbv7em standard library for it.
msrv_cargo=.tools/rust-1.85/cargo
if [ -x "$msrv_cargo" ]; then
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/msrv" \
    "$msrv_cargo" check --quiet --locked --lib --bins --features sim,worker-config,wasm-shared,wasm-coordinator,wasm-adaptive,terse,tower
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/msrv" \
    "$msrv_cargo" check --quiet --locked --lib --no-default-features
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/dependent-msrv" \
    "$msrv_cargo" check --quiet --manifest-path tests/dependent/Cargo.toml
  took "Rust 1.85: the crate with every feature but worker and reqwest-middleware, and the no_std dependent, compile"
else
  log "Rust 1.85: SKIPPED (no $msrv_cargo: scripts/setup.sh msrv needs Debian 12's amd64 packages)"
fi

# --- The crate as published ---
# Its files (`include` in Cargo.toml): the licences and the library are in; nothing of the npm
# package, the JavaScript tests, the demo, the scripts, the Worker's crate or other build output.
list=$(cargo package --list --allow-dirty --quiet)
for f in Cargo.toml Cargo.lock README.md LICENSE-MIT LICENSE-APACHE src/lib.rs wrangler.toml; do
  grep -qx "$f" <<<"$list" || { log "the crate lacks $f"; exit 1; }
done
stray=$(grep -vE '^(\.cargo_vcs_info\.json|Cargo\.toml(\.orig)?|Cargo\.lock|README\.md|docs/(rust|cloudflare)\.md|LICENSE-(MIT|APACHE)|wrangler\.toml|src/.+\.rs|tests/[^/]+\.rs|tests/conformance/[^/]+\.json|tests/shared_protocol\.proptest-regressions|benches/[^/]+\.rs|examples/[^/]+\.rs|scenarios/[^/]+\.(toml|json|md))$' <<<"$list" || true)
[ -z "$stray" ] || { log "files the crate should not hold:"; echo "$stray" >&2; exit 1; }
! grep -qE '^(js|pkg|demo|scripts|examples/nextjs|bench|build|worker|node_modules)/|^tests/(js|worker|ai|nextjs|redis|fixtures|dependent)/|node_modules' <<<"$list" ||
  { log "the crate holds JavaScript, scripts or build output"; exit 1; }
log "the crate: $(wc -l <<<"$list") files"

# `cargo publish --dry-run`: packs the crate, builds it unpacked, and stops before the upload (no
# token; it reads the crates.io index). Its only warnings may name the repository's tests that
# `include` leaves out.
# In a target directory of its own: its verification builds the unpacked copy under this crate's
# package id, and in the shared one its artifacts (whose dep-info names the copy's files) would be
# taken as fresh by later plain builds of the checkout, after its sources change.
out=$(CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/publish" cargo publish --dry-run --allow-dirty 2>&1) || { echo "$out" >&2; log "cargo publish --dry-run failed"; exit 1; }
warnings=$(grep -E '^warning' <<<"$out" |
  grep -vE '^warning: (ignoring test `[a-z_]+` as `tests/[a-z_]+\.rs` is not included in the published package|aborting upload due to dry run)$' || true)
[ -z "$warnings" ] || { echo "$out" >&2; log "cargo publish --dry-run warned"; exit 1; }
# The .crate itself, for the test below (`cargo publish` keeps none): packed from the same files,
# already built unpacked just now.
version=$(cargo pkgid | sed 's/.*[@#]//')
crate_file="${CARGO_TARGET_DIR:-target}/package/breakwater-llm-$version.crate"
rm -f "$crate_file"
out=$(cargo package --quiet --allow-dirty --no-verify 2>&1) || { echo "$out" >&2; exit 1; }
[ -f "$crate_file" ] || { log "cargo package wrote no $crate_file"; exit 1; }
log "cargo publish --dry-run: ok; $crate_file: $(wc -c <"$crate_file") bytes"
took "the crate's files and cargo publish --dry-run"

# `cargo test` on the crate as published, with the features of the tests above (json, tower and
# reqwest-middleware for the README's examples, and sim for
# tests/sim.rs). Unpacked (with fresh file times, so nothing stale is taken for built) as the one
# member of a scratch workspace: the member's path then keeps its build apart from this
# checkout's in the same target directory, whose dependencies it reuses. The three long property
# runs (10 000 random cases each, on the same files as above) are left out.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tar -xzmf "$crate_file" -C "$scratch"
member="breakwater-llm-$version"
cp "$scratch/$member/Cargo.lock" "$scratch/Cargo.lock"
printf '[workspace]\nmembers = ["%s"]\nresolver = "2"\n' "$member" >"$scratch/Cargo.toml"
target_abs=${CARGO_TARGET_DIR:-target}
case $target_abs in /*) ;; *) target_abs=$PWD/$target_abs ;; esac
if ! (cd "$scratch" && CARGO_TARGET_DIR="$target_abs" cargo test --locked --features json,sim,tower,reqwest-middleware -- \
  --skip the_shared_breaker_holds_under_loss_duplication_delay_and_restarts \
  --skip millions_of_outcomes_stay_bounded_and_counted_once \
  --skip breaker_matches_the_reference_model) >"$target_abs/package-test.log" 2>&1; then
  tail -40 "$target_abs/package-test.log" >&2
  log "cargo test on the unpacked crate failed (log: $target_abs/package-test.log)"
  exit 1
fi
# The one warning expected: the member's [profile] tables give way to the scratch workspace's.
if grep -E '^warning' "$target_abs/package-test.log" | grep -v 'profiles for the non root package will be ignored' >&2; then
  log "cargo test on the unpacked crate warned (log: $target_abs/package-test.log)"
  exit 1
fi
log "cargo test on the unpacked crate: $(awk '/^test result:/ { p += $4; f += $6 } END { print p " passed, " f " failed" }' "$target_abs/package-test.log")"
took "cargo test on the unpacked crate"

# The documentation as docs.rs builds it ([package.metadata.docs.rs]: its features, `--cfg
# docsrs`), without a warning. docs.rs runs nightly, where `docsrs` turns on `doc_cfg`
# (src/lib.rs); here stable rustdoc is allowed that one nightly feature for this crate only, by a
# wrapper (RUSTC_BOOTSTRAP in cargo's environment would rerun the dependencies' build scripts
# that watch it, and everything after them, here and in the next plain build).
docs_features=$(sed -n '/^\[package\.metadata\.docs\.rs\]/,/^\[/ s/^features = \[\(.*\)\]$/\1/p' Cargo.toml | tr -d '" ')
[ -n "$docs_features" ] || { log "no [package.metadata.docs.rs] features in Cargo.toml"; exit 1; }
rustdoc_bin=$(rustup which rustdoc 2>/dev/null || command -v rustdoc)
printf '#!/bin/sh\nRUSTC_BOOTSTRAP=breakwater exec "%s" "$@"\n' "$rustdoc_bin" >"$scratch/rustdoc"
chmod +x "$scratch/rustdoc"
RUSTDOC="$scratch/rustdoc" RUSTDOCFLAGS="--cfg docsrs -D warnings" \
  cargo doc --quiet --locked --no-deps --lib --features "$docs_features"
took "cargo doc as docs.rs (features $docs_features)"
