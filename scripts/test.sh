#!/usr/bin/env bash
# Runs every test: installs what is missing first (idempotent), then each part in turn.
# Usage: scripts/test.sh [part ...]   (parts: see PARTS below; default: all)
set -euo pipefail
cd "$(dirname "$0")/.."

PARTS=(setup rust sim js ai worker nextjs starters redis demo dashboard)

want=("$@")
[ ${#want[@]} -eq 0 ] && want=("${PARTS[@]}")

failed=()
passed=()
for part in "${want[@]}"; do
  printf '\n=== %s ===\n' "$part"
  start=$SECONDS
  if bash "scripts/test-$part.sh"; then
    passed+=("$part")
  else
    failed+=("$part")
  fi
  printf '=== %s: %ss ===\n' "$part" "$((SECONDS - start))"
done

printf '\nparts: %s passed, %s failed\n' "${#passed[@]}" "${#failed[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'failed parts: %s\n' "${failed[*]}"
  exit 1
fi
