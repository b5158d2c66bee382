#!/usr/bin/env bash
# Installs dependencies, builds, runs ctest, then the sanitizer build's unit tests and the fuzzers
# (deploy/sanitize.sh); fails when either fails.
# Arguments go to ctest (e.g. -L unit, -R support); with arguments, or DDE_SANITIZE=0, the sanitizer
# step is skipped. DDE_TEST_JOBS sets ctest's parallelism (2): tests that start brokers pick free
# ports and fresh directories, so they do not collide.
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

"$here/install-deps.sh" test
"$here/build.sh" -DDDE_BUILD_TESTS=ON
# playwright-core for the dashboard's browser test.
dde_browser_deps || dde_log "no playwright-core in tests/browser: dashboard_browsertest will fail; the other tests run"
build_dir="${DDE_BUILD_DIR:-$DDE_ROOT/build}"
status=0
ctest --test-dir "$build_dir" --output-on-failure -j"${DDE_TEST_JOBS:-2}" "$@" || status=$?
if [[ $# -eq 0 && ${DDE_SANITIZE:-1} != 0 ]]; then
  "$here/sanitize.sh" || status=1
fi
exit "$status"
