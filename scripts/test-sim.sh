#!/usr/bin/env bash
# The outage simulator (feature `sim`): its tests, its lints, and the binary on the built-in
# scenarios and on the example files.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --features sim --test sim
cargo test --features sim --doc sim
# The lib with the feature, the binary and the tests; scripts/test-rust.sh lints the other targets.
cargo clippy --features sim --lib --bins --test sim -- -D warnings
cargo build --features sim --bin breakwater-sim

sim=target/debug/breakwater-sim
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Every built-in scenario, its timeline written into folders that do not exist yet.
for scenario in hung-llm agent-tool rate-limited; do
  "$sim" run "$scenario" --svg "$out/svg/$scenario/timeline.svg"
  grep -q '<svg' "$out/svg/$scenario/timeline.svg"
  grep -q '>time since start (s)</text>' "$out/svg/$scenario/timeline.svg"
  grep -q '>attempts per second</text>' "$out/svg/$scenario/timeline.svg"
done
"$sim" run scenarios/rate-limited.toml > "$out/rate-limited.txt"
grep -q 'attempts rejected by the breaker' "$out/rate-limited.txt"
# A reader that stops early does not make the binary panic.
"$sim" run hung-llm 2> "$out/pipe-err.txt" | head -n 1 > /dev/null
[ ! -s "$out/pipe-err.txt" ] || { cat "$out/pipe-err.txt"; exit 1; }
"$sim" run scenarios/flapping.json --json > "$out/flapping.json"
grep -q '"shared_breaker"' "$out/flapping.json"

# A bad file is refused with exit status 2 and the field named.
printf 'name = "bad"\nduration_ms = 1000\nload = { arrivals_per_s = 1.0 }\n[retry]\nmax_attempts = -1\n' > "$out/bad.toml"
set +e
"$sim" run "$out/bad.toml" 2> "$out/err.txt"
status=$?
set -e
[ "$status" -eq 2 ] || { echo "expected exit 2 on a bad scenario, got $status"; exit 1; }
grep -q 'retry.max_attempts' "$out/err.txt" || { cat "$out/err.txt"; exit 1; }
echo "simulator: ok"
