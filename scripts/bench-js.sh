#!/usr/bin/env bash
# Benchmarks of the npm package (mitata, one run; not part of the tests): builds pkg/, installs
# the packed tarball into bench/js as a user would, runs bench/js/bench.mjs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh node
bash scripts/build-pkg.sh
mkdir -p target/js
tarball=$(cd pkg && npm pack --silent --pack-destination ../target/js | tail -1)
(cd bench/js && npm install --silent --no-save --no-package-lock --no-audit --no-fund "../../target/js/$tarball")
node bench/js/bench.mjs
