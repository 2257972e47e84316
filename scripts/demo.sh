#!/usr/bin/env bash
# The main job: replays seed 000's provider outage (40 users, 90 s of failures) under four
# strategies — no protection, retry only, a breaker per instance, one shared breaker — and prints
# what each cost, with an SVG timeline in out/. Installs what it needs first (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh rust
mkdir -p out
cargo run --quiet --release --features sim --bin breakwater-sim -- run seed000 --svg out/seed000.svg
