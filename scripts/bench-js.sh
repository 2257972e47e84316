#!/usr/bin/env bash
# Benchmarks of the npm package (mitata, one run; not part of the tests): builds pkg/ if stale,
# installs the packed tarball into bench/js as a user would (scripts/install-pkg.sh), runs
# bench/js/bench.mjs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh node
bash scripts/install-pkg.sh bench/js
node bench/js/bench.mjs
