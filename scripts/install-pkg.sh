#!/usr/bin/env bash
# Installs the npm package into consumer projects the way a user would: builds pkg/ unless it is
# a complete build newer than its sources (scripts/build-pkg.sh --if-stale), packs it once into
# target/pack/, then in each DIR runs `npm ci` when DIR has a package-lock.json its node_modules
# was not installed from, and `npm install --no-save <tarball>` (neither package.json nor the
# lock file is written).
# Usage: scripts/install-pkg.sh [--clean] DIR...   (DIR: absolute, or relative to the repository root)
#   --clean: remove DIR/node_modules first (with a package-lock.json, `npm ci` then reinstalls it)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

clean=0
dirs=()
for arg in "$@"; do
  case "$arg" in
    --clean) clean=1 ;;
    -*) log "unknown option: $arg"; exit 2 ;;
    *) dirs+=("$arg") ;;
  esac
done
[ ${#dirs[@]} -gt 0 ] || { log "usage: scripts/install-pkg.sh [--clean] DIR..."; exit 2; }
for dir in "${dirs[@]}"; do
  [ -f "$dir/package.json" ] || { log "$dir has no package.json"; exit 2; }
done

bash scripts/build-pkg.sh --if-stale

pack=target/pack
rm -rf "$pack" && mkdir -p "$pack"
tarball=$PWD/$pack/$(cd pkg && npm pack --silent --pack-destination "../$pack" | tail -1)
[ -f "$tarball" ] || { log "npm pack wrote no tarball"; exit 1; }

for dir in "${dirs[@]}"; do
  log "installing $(basename "$tarball") into $dir"
  if [ "$clean" = 1 ]; then rm -rf "$dir/node_modules"; fi
  if [ -f "$dir/package-lock.json" ]; then npm_ci_if_stale "$dir"; fi
  (cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error "$tarball")
done
