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

build_dir="${DDE_BUILD_DIR:-$DDE_ROOT/build}"
# The build and sanitizer trees take about 8 GB, the tests' throw-away brokers up to 1 GB more, and a
# RabbitMQ node whose disk falls below 50 MB blocks every publisher: on a full disk the tests would fail
# one by one for no reason of their own.
mkdir -p "$build_dir"
free_gb=$(df --output=avail -BG "$build_dir" | tail -1 | tr -dc 0-9)
((free_gb >= ${DDE_MIN_FREE_GB:-10})) ||
  dde_die "$free_gb GB free under $build_dir; the build and tests need about ${DDE_MIN_FREE_GB:-10} GB (DDE_MIN_FREE_GB sets the bound)"
# What earlier runs' brokers left (kept for reading after a failure) goes before the next run.
rm -rf "$build_dir/test-tmp"

"$here/install-deps.sh" test
"$here/build.sh" -DDDE_BUILD_TESTS=ON
# playwright-core for the dashboard's browser test.
dde_browser_deps || dde_log "no playwright-core in tests/browser: dashboard_browsertest will fail; the other tests run"
status=0
ctest --test-dir "$build_dir" --output-on-failure -j"${DDE_TEST_JOBS:-2}" "$@" || status=$?
if [[ $# -eq 0 && ${DDE_SANITIZE:-1} != 0 ]]; then
  "$here/sanitize.sh" || status=1
fi
exit "$status"
