#!/usr/bin/env bash
# Tests of breakwater/ai against the Vercel AI SDK, with its Anthropic and OpenAI providers
# pointed at the local fake provider (127.0.0.1): AI SDK 6 in tests/ai/v6 under the system Node
# (20+), AI SDK 7 in tests/ai/v7 under Node 22 (scripts/setup.sh node22, from the npm registry).
# Each folder is a consumer project whose package-lock.json pins the SDK; the packed breakwater
# tarball is installed there --no-save, as a user would (scripts/install-pkg.sh, which builds pkg/
# if stale). Both run one test body, tests/ai/suite.mjs.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

bash scripts/setup.sh node
node22=$(bash scripts/setup.sh node22 | tail -1)
bash scripts/install-pkg.sh tests/ai/v6 tests/ai/v7

failed=()
for v in v6 v7; do
  dir=tests/ai/$v
  # The declarations against this SDK version's types (the middleware must fit its wrapLanguageModel).
  cp tests/ai/types.ts "$dir/types.check.ts"
  if (cd "$dir" && ../../../node_modules/.bin/tsc --noEmit --strict --module esnext --moduleResolution bundler \
    --target es2022 --skipLibCheck types.check.ts); then
    log "$v: types ok"
  else
    log "$v: types FAILED"
    failed+=("$v types")
  fi
  rm -f "$dir/types.check.ts"
  runtime=node
  [ "$v" = v7 ] && runtime=$node22
  log "$v: $("$runtime" --version), ai@$(node -p "require('./$dir/node_modules/ai/package.json').version")"
  if (cd "$dir" && "$runtime" --test --test-reporter=spec ./*.test.mjs); then
    log "$v: ok"
  else
    log "$v: FAILED"
    failed+=("$v")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  log "failed: ${failed[*]}"
  exit 1
fi
log "breakwater/ai tests passed on AI SDK 6 and 7"
