#!/usr/bin/env bash
# Every comparison of contrib/bench at a size that finishes in a few minutes
# on two cores, one after another, each beside its peer in one run (the
# figures in docs/performance.md were taken with the larger sizes each
# script's usage names). Usage (make bench builds first):
#   KULE=bin/kule contrib/bench/run-all.sh
# A script that fails stops the rest: each cleans up after itself.
set -euo pipefail
KULE=${KULE:-kule}
export KULE
here=$(cd "$(dirname "$0")" && pwd)
run() { echo; echo "== $*"; "$@"; }
run bash "$here/sandbox.sh" 20
run env RUNS=3 BACKENDS="copy overlay" bash "$here/statusgrowth.sh" 1000 10000
run env RUNS=5 bash "$here/execgrowth.sh" 1000 20000
run bash "$here/commit.sh" 10000 500 3
run bash "$here/newlarge.sh" 3 100 3
run env NEW_RUNS=3 bash "$here/tree.sh" 20000 3
[ ! -f "$here/proxy.sh" ] || run bash "$here/proxy.sh" 100 3
