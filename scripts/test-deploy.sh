#!/usr/bin/env bash
# The README's deploy recipe, checked without an account: `wrangler deploy --dry-run` (which runs
# wrangler.toml's [build], i.e. scripts/build-worker.sh, and bundles the Worker) from the
# repository root, from a directory inside it with `-c`, from outside it with `--cwd`, and from a
# fresh clone of the committed HEAD set up with `scripts/setup.sh worker`; each must produce the
# bundle. Then a failed build must fail the deploy. No Cloudflare credentials are passed on;
# wrangler's configuration and temporary files go to a temporary directory.
# The clone reuses this checkout's npm packages (hard links) and starts from a copy of its cargo
# build cache (target/debug and target/worker, or under $CARGO_TARGET_DIR), so with warm caches
# the whole test takes under a minute. (Not the cache itself: cargo tells two checkouts of one
# crate apart only by file times, so a shared target directory could hand one the other's build.)
# Usage: scripts/test-deploy.sh   (scripts/test-worker.sh runs it after its setup)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
root=$PWD

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/config" "$work/tmp" "$work/outside"
export WRANGLER_SEND_METRICS=false XDG_CONFIG_HOME="$work/config" TMPDIR="$work/tmp"
unset CLOUDFLARE_API_TOKEN CLOUDFLARE_API_KEY CLOUDFLARE_EMAIL CLOUDFLARE_ACCOUNT_ID CF_API_TOKEN CF_API_KEY CF_EMAIL CF_ACCOUNT_ID

fail() { log "$*"; exit 1; }

# Usage: dry_run NAME DIR PREFIX [ARGS...]   runs the README's `npx --prefix PREFIX wrangler deploy
# --dry-run ARGS` in DIR (--no: never download a wrangler) and checks the bundle it writes.
runs=0
dry_run() {
  local name=$1 dir=$2 prefix=$3 out="$work/out$runs" start status=0
  shift 3
  runs=$((runs + 1))
  start=$(date +%s)
  (cd "$dir" && npx --no --prefix "$prefix" wrangler deploy --dry-run --outdir "$out" "$@") >"$work/log" 2>&1 || status=$?
  if [ $status -ne 0 ]; then
    tail -30 "$work/log" >&2
    fail "$name: wrangler deploy --dry-run failed (status $status)"
  fi
  [ -s "$out/index.js" ] && ls "$out"/*index_bg.wasm >/dev/null 2>&1 || {
    ls -l "$out" >&2 || true
    fail "$name: no bundle (index.js and the .wasm) in the output directory"
  }
  grep -q '\[custom build\] Running' "$work/log" || fail "$name: wrangler did not run the [build] command"
  log "$name: bundle written ($(wc -c <"$out/index.js") B of JavaScript, $(cat "$out"/*index_bg.wasm | wc -c) B of wasm) in $(($(date +%s) - start)) s"
}

# Usage: must_fail NAME DIR PATTERN PREFIX [ARGS...]   as dry_run, but wrangler must fail, print
# PATTERN, and write no bundle.
must_fail() {
  local name=$1 dir=$2 pattern=$3 prefix=$4 out="$work/out$runs" start
  shift 4
  runs=$((runs + 1))
  start=$(date +%s)
  if (cd "$dir" && npx --no --prefix "$prefix" wrangler deploy --dry-run --outdir "$out" "$@") >"$work/log" 2>&1; then
    tail -30 "$work/log" >&2
    fail "$name: wrangler deploy --dry-run succeeded"
  fi
  grep -q -- "$pattern" "$work/log" || { tail -30 "$work/log" >&2; fail "$name: the output does not say: $pattern"; }
  [ ! -e "$out/index.js" ] || fail "$name: a bundle was written although the build failed"
  log "$name: failed as it should, in $(($(date +%s) - start)) s"
}

[ -x tests/worker/node_modules/.bin/wrangler ] || fail "wrangler is missing: scripts/setup.sh worker"

log "deploy --dry-run from the repository root"
dry_run "repository root" "$root" tests/worker
log "deploy --dry-run from tests/worker with -c ../../wrangler.toml"
dry_run "tests/worker, -c" "$root/tests/worker" . -c ../../wrangler.toml
log "deploy --dry-run from outside the checkout with --cwd"
dry_run "outside, --cwd" "$work/outside" "$root/tests/worker" --cwd "$root"
log "outside the checkout with only -c, the [build] command cannot find the checkout: it says so"
must_fail "outside, -c only" "$work/outside" "add --cwd /path/to/breakwater" "$root/tests/worker" -c "$root/wrangler.toml"

log "a fresh clone of HEAD ($(git rev-parse --short HEAD)): scripts/setup.sh worker, then deploy --dry-run"
clone="$work/clone"
git clone --quiet --no-hardlinks "$root" "$clone"
# The npm packages as `scripts/setup.sh worker` would install them (npm ci from the same lock
# file), taken from this checkout; the fresh stamp tells setup.sh they are current.
cp -al "$root/tests/worker/node_modules" "$clone/tests/worker/node_modules" 2>/dev/null ||
  cp -a "$root/tests/worker/node_modules" "$clone/tests/worker/node_modules"
rm "$clone/tests/worker/node_modules/.package-lock.json"
cp "$root/tests/worker/node_modules/.package-lock.json" "$clone/tests/worker/node_modules/.package-lock.json"
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$root/$target ;; esac
mkdir -p "$work/target"
for d in debug worker; do
  [ ! -d "$target/$d" ] || cp -a --reflink=auto "$target/$d" "$work/target/"
done
export CARGO_TARGET_DIR="$work/target"
(cd "$clone" && bash scripts/setup.sh worker) >"$work/log" 2>&1 || { tail -30 "$work/log" >&2; fail "scripts/setup.sh worker failed in the clone"; }
grep -q "npm ci" "$work/log" && fail "setup.sh ran npm ci in the clone (its node_modules should count as current)"
dry_run "fresh clone" "$clone" tests/worker

log "a failed build fails the deploy (in the clone, whose build/ holds the previous bundle)"
printf '\ncompile_error!("a deliberate build failure");\n' >>"$clone/src/worker/mod.rs"
must_fail "compile error" "$clone" "a deliberate build failure" tests/worker
git -C "$clone" checkout --quiet -- src/worker/mod.rs
sed -i 's/"lease_ms": 1000, "breaker": { "trip"/"lease_ms": 0, "breaker": { "trip"/' "$clone/wrangler.toml"
grep -q '"lease_ms": 0' "$clone/wrangler.toml" || fail "could not break BREAKERS in the clone's wrangler.toml"
must_fail "bad BREAKERS" "$clone" 'invalid `lease_ms`: 0' tests/worker
log "ok"
