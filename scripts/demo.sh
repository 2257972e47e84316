#!/usr/bin/env bash
# The main job: replays an LLM provider outage with and without a breaker and prints what the
# breaker saved. Installs what it needs first (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh rust
cargo run --quiet --release --example outage
