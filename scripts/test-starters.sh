#!/usr/bin/env bash
# The starters (starters/nextjs, starters/worker, starters/axum) as a user runs them: each copied
# out of the repository into a folder of its own, its packages installed from the registries
# and breakwater from what a user would get (the npm package packed from pkg/, the crate
# packaged by `cargo package`), built, served on 127.0.0.1 in front of the packed package's own
# `breakwater fake-llm` (what each README tells users to run), switched to 529 and back:
# - nextjs: `next build && next start`; /api/summarize (plain fetch) opens its breaker and
#   answers 503 + Retry-After without calling the provider, /api/chat (AI SDK, fallbackModel)
#   answers 503 (answerBegun + errorResponse), never a 200 stream, when every model fails
#   before its first word (429: with the provider's Retry-After; 529), and 503 + Retry-After
#   without a provider request once both models' breakers are OPEN; the page renders; both
#   recover after the provider heals.
# - worker: `wrangler dev` (Node 22, .tools/node22); the breaker in the Durable Object opens,
#   503 + Retry-After, /metrics (JSON and Prometheus) and /admin/status answer with the breaker,
#   recovery.
# - axum: `cargo build` + run; a final 529 after the retries is a 503 + Retry-After (never the
#   provider's answer), the breakers open and fail fast, recovery.
# The copies live in $BW_STARTERS_DIR (default ${TMPDIR:-/tmp}/breakwater-starters): the sources
# are copied afresh every run, node_modules is kept while the starter's package.json and the
# tarball are unchanged, cargo builds in target/starters/axum-target.
# Usage: scripts/test-starters.sh [nextjs] [worker] [axum]   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ROOT=$PWD

WORK=${BW_STARTERS_DIR:-${TMPDIR:-/tmp}/breakwater-starters}
case "$WORK/" in "$ROOT/"*) log "BW_STARTERS_DIR must be outside the repository"; exit 2 ;; esac
mkdir -p "$WORK"
export NEXT_TELEMETRY_DISABLED=1 WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false
export NO_COLOR=1 FORCE_COLOR=0 npm_config_update_notifier=false
# Every process this script starts carries the marker: checked at the end (fail_if_left_running).
export BREAKWATER_DEMO_RUN="starters-$$"

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(nextjs worker axum)

status=0
fail() { log "FAIL: $*"; status=1; }
ok() { log "ok: $*"; }

# ----- processes: each in a process group of its own, stopped on exit -----
groups=()
# Usage: start_bg NAME DIR CMD...   runs CMD in DIR in the background, in a session of its own
# (its process group is stopped at the end), output in $WORK/NAME.log.
start_bg() {
  local name=$1 dir=$2
  shift 2
  (cd "$dir" && exec setsid "$@" >"$WORK/$name.log" 2>&1 </dev/null) &
  groups+=("$!")
}
stop_group() {
  local pid=$1
  kill -TERM -- "-$pid" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 -- "-$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
}
stop_all() {
  local pid
  for pid in "${groups[@]}"; do stop_group "$pid"; done
  groups=()
}
trap stop_all EXIT
trap 'exit 130' INT TERM

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# Usage: wait_http URL SECONDS NAME   until URL answers any HTTP status.
wait_http() {
  local url=$1 deadline=$((SECONDS + $2)) name=$3
  until curl -s -o /dev/null --max-time 2 "$url"; do
    if [ $SECONDS -ge $deadline ]; then
      tail -30 "$WORK/$name.log" >&2
      log "$name did not answer at $url within $2 s"
      return 1
    fi
    sleep 0.3
  done
}

# Usage: req METHOD URL [JSON] [HEADER]   sets CODE, BODY and RETRY_AFTER.
req() {
  local args=(-s -X "$1" --max-time 60 -D "$WORK/headers" -o "$WORK/body" -w '%{http_code}')
  [ -n "${3:-}" ] && args+=(-H 'content-type: application/json' --data "$3")
  [ -n "${4:-}" ] && args+=(-H "$4")
  CODE=$(curl "${args[@]}" "$2") || CODE=000
  BODY=$(cat "$WORK/body")
  RETRY_AFTER=$(awk 'tolower($1) == "retry-after:" { gsub(/\r/, ""); print $2 }' "$WORK/headers")
}

# Usage: until_refused LABEL URL BODY   with the fake answering 529: posts BODY until the route
# answers 503 (each answer before it a 502: the call failed), then checks that the 503 carries
# Retry-After and reached no provider (the breaker refused it).
until_refused() {
  local label=$1 url=$2 body=$3 i before
  for i in $(seq 8); do
    before=$(fake_count)
    req POST "$url" "$body"
    [ "$CODE" = 503 ] && break
    [ "$CODE" = 502 ] || fail "$label under 529 answered $CODE $BODY"
  done
  if [ "$CODE" = 503 ] && [ -n "$RETRY_AFTER" ] && [ "$(fake_count)" = "$before" ]; then
    ok "$label: breaker OPEN after $((i - 1)) failed requests: 503 Retry-After: $RETRY_AFTER, no provider request"
  else
    fail "$label did not fail fast: $CODE retry-after=$RETRY_AFTER count $before -> $(fake_count)"
  fi
}

# Usage: until_recovered LABEL URL BODY TRIES [TEXT]   once the fake is healed and the breaker's
# wait is over: posts BODY every 0.5 s until a 200 (holding TEXT, when given).
until_recovered() {
  local label=$1 url=$2 body=$3 tries=$4 text=${5:-} i
  for i in $(seq "$tries"); do
    req POST "$url" "$body"
    if [ "$CODE" = 200 ] && { [ -z "$text" ] || grep -qF "$text" <<<"$BODY"; }; then
      ok "$label recovered"
      return
    fi
    sleep 0.5
  done
  fail "$label did not recover: $CODE $BODY"
}

# ----- the fake provider: the packed package's `breakwater fake-llm`, as each README runs it -----
# Started per starter from that copy's install (node_modules/.bin/breakwater: the bin of the
# tarball under test), on 127.0.0.1 and a free port; switched by POST /_fake/mode, requests
# counted by GET /_fake. Its 529 carries no retry-after (as Anthropic's does not).
FAKE=
# Usage: start_fake NAME BIN   starts BIN fake-llm (log in $WORK/NAME.log); sets FAKE to its URL.
start_fake() {
  local port
  port=$(free_port)
  start_bg "$1" "$WORK" "$2" fake-llm --host 127.0.0.1 --port "$port"
  FAKE=http://127.0.0.1:$port
  wait_http "$FAKE/_fake" 10 "$1" || return 1
  log "$1: $(head -1 "$WORK/$1.log")"
}
fake_mode() {
  curl -s -o /dev/null --max-time 5 -X POST --data "{\"mode\":\"$1\"}" "$FAKE/_fake/mode" || { log "could not set the fake's mode $1"; return 1; }
}
fake_count() { curl -s --max-time 5 "$FAKE/_fake" | sed -n 's/.*"requests":\([0-9]*\).*/\1/p'; }
# What the fake answers in mode ok (its words, as the stream deltas carry them).
FAKE_TEXT='Hello from the fake LLM.'
FAKE_DELTA='"delta":"LLM. "'

# ----- copies and installs -----
# Usage: fresh_copy NAME KEEP...   copies starters/NAME to $WORK/NAME, keeping only KEEP (e.g.
# node_modules) from the previous run.
fresh_copy() {
  local name=$1 dst=$WORK/$1 entry keep k
  shift
  mkdir -p "$dst"
  for entry in "$dst"/* "$dst"/.[!.]*; do
    [ -e "$entry" ] || continue
    keep=0
    for k in "$@"; do [ "$(basename "$entry")" = "$k" ] && keep=1; done
    [ $keep = 1 ] || rm -rf "$entry"
  done
  cp -r "starters/$name/." "$dst/"
}

TARBALL=
# The npm package as a user gets it: pkg/ built unless up to date, packed into target/starters/pack
# (a folder of this script's own: scripts/install-pkg.sh empties target/pack).
pack_npm() {
  [ -n "$TARBALL" ] && return
  rm -rf target/starters/pack && mkdir -p target/starters/pack
  flock /tmp/bw-build.lock bash -c 'bash scripts/build-pkg.sh --if-stale && cd pkg && npm pack --silent --pack-destination ../target/starters/pack >/dev/null'
  TARBALL=$(ls "$ROOT"/target/starters/pack/breakwater-*.tgz)
}

# Usage: npm_install NAME   `npm install` of the starter with breakwater from the tarball, unless
# node_modules was installed from the same package.json and tarball.
npm_install() {
  local dir=$WORK/$1 stamp
  pack_npm
  stamp=$(cat "$dir/package.json" "$TARBALL" | sha256sum | cut -c1-16)
  if [ "$(cat "$dir/node_modules/.starter-stamp" 2>/dev/null)" = "$stamp" ]; then
    log "$1: node_modules is current"
    return
  fi
  log "$1: npm install (breakwater from $(basename "$TARBALL"))"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "$TARBALL")
  echo "$stamp" >"$dir/node_modules/.starter-stamp"
}

# Usage: npm_install_tarball DIR   the tarball alone installed into DIR (a package.json of its own),
# unless DIR was installed from the same tarball.
npm_install_tarball() {
  local dir=$1 stamp
  pack_npm
  stamp=$(sha256sum <"$TARBALL" | cut -c1-16)
  [ "$(cat "$dir/node_modules/.starter-stamp" 2>/dev/null)" = "$stamp" ] && return
  rm -rf "$dir" && mkdir -p "$dir"
  printf '{ "name": "fake-llm-host", "private": true }\n' >"$dir/package.json"
  log "$(basename "$dir"): npm install $(basename "$TARBALL")"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error "$TARBALL")
  echo "$stamp" >"$dir/node_modules/.starter-stamp"
}

# ----- the Next.js starter -----
test_nextjs() {
  local dir=$WORK/nextjs port i before chat
  fresh_copy nextjs node_modules
  npm_install nextjs
  start_fake fake-llm-nextjs "$dir/node_modules/.bin/breakwater" || { fail "nextjs: breakwater fake-llm did not start"; return; }
  log "nextjs: next build"
  (cd "$dir" && npx next build >"$WORK/next-build.log" 2>&1) || { tail -40 "$WORK/next-build.log" >&2; fail "nextjs: next build"; return; }
  port=$(free_port)
  local base=http://127.0.0.1:$port
  start_bg next-start "$dir" env ANTHROPIC_BASE_URL="$FAKE" ANTHROPIC_API_KEY=test BREAKER_RESET_TIMEOUT_MS=3000 \
    node_modules/.bin/next start -H 127.0.0.1 -p "$port"
  wait_http "$base/" 60 next-start || { fail "nextjs: next start"; return; }

  req GET "$base/"
  [ "$CODE" = 200 ] && ok "nextjs: the page answers 200" || fail "nextjs: GET / answered $CODE"
  req POST "$base/api/summarize" '{"text":"a long text"}'
  [ "$CODE" = 200 ] && grep -qF "$FAKE_TEXT" <<<"$BODY" && ok "nextjs: /api/summarize answers 200 from the provider" \
    || fail "nextjs: /api/summarize healthy: $CODE $BODY"
  chat='{"id":"c1","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}'
  req POST "$base/api/chat" "$chat"
  [ "$CODE" = 200 ] && grep -qF "$FAKE_DELTA" <<<"$BODY" && ok "nextjs: /api/chat streams the answer" \
    || fail "nextjs: /api/chat healthy: $CODE $BODY"

  # Every model answering 429 with retry-after: 1, their breakers CLOSED (the AI SDK's three
  # attempts: 3 failures each, under 5): no answer can begin, so a 503 (answerBegun +
  # errorResponse) rather than a 200 stream, with the wait the provider asked for.
  fake_mode 429
  before=$(fake_count)
  req POST "$base/api/chat" "$chat"
  if [ "$CODE" = 503 ] && [ "$RETRY_AFTER" = 1 ] && [ "$(fake_count)" -gt "$before" ]; then
    ok "nextjs: /api/chat with every model answering 429 retry-after: 1: 503 Retry-After: 1 after $(($(fake_count) - before)) provider requests"
  else
    fail "nextjs: /api/chat with every model answering 429 answered $CODE (retry-after=$RETRY_AFTER): $(head -c 300 <<<"$BODY")"
  fi
  fake_mode ok

  fake_mode 529
  until_refused "nextjs: /api/summarize" "$base/api/summarize" '{"text":"a long text"}'
  # Every model answering 529 before its first word: no answer can begin, so the route answers
  # 503 (answerBegun + errorResponse), never a 200 stream with the failure inside it. The AI SDK
  # retries first (twice, 2 s then 4 s: Anthropic's 529 asks for no wait), each attempt trying
  # both models; Retry-After comes once the breakers refuse and say how long.
  before=$(fake_count)
  req POST "$base/api/chat" "$chat"
  if [ "$CODE" = 503 ] && [ "$(fake_count)" -gt "$before" ] && grep -q 'unavailable' <<<"$BODY"; then
    ok "nextjs: /api/chat with every model answering 529 before its first word: 503${RETRY_AFTER:+ Retry-After: $RETRY_AFTER} after $(($(fake_count) - before)) provider requests, '$BODY'"
  else
    fail "nextjs: /api/chat with every model answering 529 answered $CODE (retry-after=$RETRY_AFTER, provider requests $before -> $(fake_count)): $(head -c 300 <<<"$BODY")"
  fi
  for i in $(seq 6); do
    before=$(fake_count)
    req POST "$base/api/chat" "$chat"
    [ "$CODE" = 503 ] || fail "nextjs: /api/chat under 529 answered $CODE: $(head -c 300 <<<"$BODY")"
    log "nextjs: /api/chat under 529: $CODE retry-after=${RETRY_AFTER:-none} after $(($(fake_count) - before)) provider requests"
    [ "$CODE" = 503 ] && [ -n "$RETRY_AFTER" ] && [ "$(fake_count)" = "$before" ] && break
  done
  if [ "$CODE" = 503 ] && [ -n "$RETRY_AFTER" ] && [ "$(fake_count)" = "$before" ]; then
    ok "nextjs: /api/chat with every model's breaker OPEN: 503 Retry-After: $RETRY_AFTER, '$BODY', no provider request"
  else
    fail "nextjs: /api/chat all tiers down answered $CODE (retry-after=$RETRY_AFTER) $BODY"
  fi

  fake_mode ok
  sleep "${RETRY_AFTER:-3}"
  until_recovered "nextjs: /api/summarize" "$base/api/summarize" '{"text":"a long text"}' 20
  until_recovered "nextjs: /api/chat" "$base/api/chat" "$chat" 20 "$FAKE_DELTA"
}


# ----- the Worker starter -----
test_worker() {
  local dir=$WORK/worker node22 port inspector i
  node22=$(bash scripts/setup.sh node22 | tail -1)
  fresh_copy worker node_modules
  npm_install worker
  start_fake fake-llm-worker "$dir/node_modules/.bin/breakwater" || { fail "worker: breakwater fake-llm did not start"; return; }
  # What a user puts in .dev.vars (see the starter's README), pointing at the fake provider.
  printf 'ANTHROPIC_BASE_URL=%s\nANTHROPIC_API_KEY=test\nADMIN_TOKEN=starter-admin\nBREAKER_RESET_TIMEOUT_MS=3000\n' "$FAKE" >"$dir/.dev.vars"
  rm -rf "$WORK/worker-home" && mkdir -p "$WORK/worker-home/xdg" "$WORK/worker-home/tmp"
  (cd "$dir" && XDG_CONFIG_HOME="$WORK/worker-home/xdg" PATH="$(dirname "$node22"):$PATH" npm run --silent check >"$WORK/worker-check.log" 2>&1) \
    && ok "worker: npm run check (wrangler types, tsc --noEmit)" || { tail -20 "$WORK/worker-check.log" >&2; fail "worker: npm run check"; }
  port=$(free_port)
  inspector=$(free_port)
  local base=http://127.0.0.1:$port admin='authorization: Bearer starter-admin'
  fake_mode ok
  log "worker: wrangler dev (Node $("$node22" --version))"
  start_bg wrangler-dev "$dir" env XDG_CONFIG_HOME="$WORK/worker-home/xdg" TMPDIR="$WORK/worker-home/tmp" \
    WRANGLER_REGISTRY_PATH="$WORK/worker-home/xdg/.wrangler/registry" \
    "$node22" node_modules/wrangler/bin/wrangler.js dev --local --ip 127.0.0.1 --port "$port" \
    --inspector-ip 127.0.0.1 --inspector-port "$inspector" --persist-to "$WORK/worker-home/state" \
    --show-interactive-dev-session=false
  wait_http "$base/" 90 wrangler-dev || { fail "worker: wrangler dev"; return; }

  req POST "$base/api/summarize" '{"text":"a long text"}'
  [ "$CODE" = 200 ] && grep -qF "$FAKE_TEXT" <<<"$BODY" && ok "worker: /api/summarize answers 200 from the provider" \
    || fail "worker: /api/summarize healthy: $CODE $BODY"
  fake_mode 529
  until_refused "worker: /api/summarize (the breaker in the Durable Object)" "$base/api/summarize" '{"text":"a long text"}'
  local ra=${RETRY_AFTER:-3}
  req GET "$base/metrics"
  [ "$CODE" = 401 ] && ok "worker: /metrics without the token: 401" || fail "worker: /metrics without the token answered $CODE"
  req GET "$base/metrics" '' "$admin"
  [ "$CODE" = 200 ] && grep -q '"anthropic"' <<<"$BODY" && grep -q 'OPEN' <<<"$BODY" \
    && ok "worker: /metrics (JSON) answers 200 with the breaker, OPEN" || fail "worker: /metrics: $CODE $BODY"
  req GET "$base/metrics?format=prometheus" '' "$admin"
  if [ "$CODE" = 200 ] && grep -q '^breakwater_.*breaker="anthropic"' <<<"$BODY"; then
    ok "worker: /metrics?format=prometheus: $(grep -c '^breakwater_.*breaker="anthropic"' <<<"$BODY") lines of the breaker"
  else
    fail "worker: /metrics?format=prometheus: $CODE $(head -c 400 <<<"$BODY")"
  fi
  req GET "$base/admin/status" '' "$admin"
  [ "$CODE" = 200 ] && grep -q 'anthropic' <<<"$BODY" && ok "worker: /admin/status (the status page) lists the breaker" \
    || fail "worker: /admin/status: $CODE $(head -c 300 <<<"$BODY")"

  fake_mode ok
  sleep "$ra"
  until_recovered "worker: /api/summarize" "$base/api/summarize" '{"text":"a long text"}' 20
}

# ----- the axum starter -----
test_axum() {
  local dir=$WORK/axum crate version port i before
  fresh_copy axum
  # No node_modules in a Rust project: the bin from the tarball installed in a folder of its own,
  # as `npx breakwater fake-llm` would run it.
  npm_install_tarball "$WORK/fake-llm"
  start_fake fake-llm-axum "$WORK/fake-llm/node_modules/.bin/breakwater" || { fail "axum: breakwater fake-llm did not start"; return; }
  # The crate as crates.io would serve it: `cargo package` of the repository (the working tree as
  # it is), unpacked; the copy's [patch] points at it (the committed starter names the version).
  version=$(awk -F'"' '/^version = / { print $2; exit }' Cargo.toml)
  CARGO_TARGET_DIR=$ROOT/target/starters/cargo cargo package --quiet --no-verify --allow-dirty 2>/dev/null
  rm -rf target/starters/crate && mkdir -p target/starters/crate
  tar xzf "target/starters/cargo/package/breakwater-llm-$version.crate" -C target/starters/crate
  crate=$ROOT/target/starters/crate/breakwater-llm-$version
  printf '\n[patch.crates-io]\nbreakwater-llm = { path = "%s" }\n' "$crate" >>"$dir/Cargo.toml"
  # Start from the repository's resolved versions (the starter has no lock file of its own).
  cp Cargo.lock "$dir/Cargo.lock"
  log "axum: cargo build"
  (cd "$dir" && CARGO_TARGET_DIR=$ROOT/target/starters/axum-target cargo build --quiet) || { fail "axum: cargo build"; return; }
  port=$(free_port)
  local base=http://127.0.0.1:$port
  fake_mode ok
  start_bg axum "$dir" env BIND="127.0.0.1:$port" ANTHROPIC_BASE_URL="$FAKE" ANTHROPIC_API_KEY=test BREAKER_OPEN_MS=3000 \
    "$ROOT/target/starters/axum-target/debug/breakwater-starter-axum"
  wait_http "$base/" 30 axum || { fail "axum: the service did not start"; return; }

  req POST "$base/api/summarize" '{"text":"a long text"}'
  [ "$CODE" = 200 ] && grep -qF "$FAKE_TEXT" <<<"$BODY" && ok "axum: /api/summarize answers 200 from the provider" \
    || fail "axum: /api/summarize healthy: $CODE $BODY"
  fake_mode 529
  before=$(fake_count)
  req POST "$base/api/summarize" '{"text":"a long text"}'
  if [ "$CODE" = 503 ] && [ -n "$RETRY_AFTER" ] && grep -q 'answered 529 after retries' <<<"$BODY" && [ "$(fake_count)" = $((before + 3)) ]; then
    ok "axum: a final 529 after 3 attempts is a 503 Retry-After: $RETRY_AFTER with breakwater's error, not the provider's answer"
  else
    fail "axum: a final 529 answered $CODE (retry-after=$RETRY_AFTER, attempts $((  $(fake_count) - before ))): $BODY"
  fi
  for i in $(seq 8); do
    before=$(fake_count)
    req POST "$base/api/summarize" '{"text":"a long text"}'
    [ "$CODE" = 503 ] || fail "axum: under 529 answered $CODE $BODY"
    [ "$(fake_count)" = "$before" ] && break
  done
  if [ "$CODE" = 503 ] && [ -n "$RETRY_AFTER" ] && [ "$(fake_count)" = "$before" ]; then
    ok "axum: breaker OPEN: 503 Retry-After: $RETRY_AFTER without a provider request${BODY:+ ($BODY)}"
  else
    fail "axum: did not fail fast: $CODE retry-after=$RETRY_AFTER"
  fi
  # The route's own breaker (BreakerLayer on the router) counts those 503s: once OPEN, it answers
  # 503 + Retry-After with an empty body before the handler runs.
  for i in $(seq 8); do
    req POST "$base/api/summarize" '{"text":"a long text"}'
    [ "$CODE" = 503 ] && [ -z "$BODY" ] && break
  done
  if [ "$CODE" = 503 ] && [ -z "$BODY" ] && [ -n "$RETRY_AFTER" ]; then
    ok "axum: the route's BreakerLayer OPEN: 503 Retry-After: $RETRY_AFTER before the handler runs"
  else
    fail "axum: the route's BreakerLayer did not open: $CODE $BODY"
  fi
  fake_mode ok
  sleep "${RETRY_AFTER:-3}"
  until_recovered "axum: /api/summarize" "$base/api/summarize" '{"text":"a long text"}' 30
}

# Usage: run_part NAME   test_NAME, then stops what it started (its fake provider too).
run_part() {
  local t0=$SECONDS n=${#groups[@]} i
  "test_$1"
  for ((i = ${#groups[@]} - 1; i >= n; i--)); do stop_group "${groups[$i]}"; done
  groups=("${groups[@]:0:$n}")
  log "$1: $((SECONDS - t0)) s"
}

main_parts() {
  local p
  for p in "${parts[@]}"; do
    case "$p" in
      nextjs | worker | axum) run_part "$p" ;;
      *) log "unknown starter: $p"; exit 2 ;;
    esac
  done
}
main_parts
stop_all
sleep 0.5
fail_if_left_running "starters-$$" "scripts/test-starters.sh"
exit $status
