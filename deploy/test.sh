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

"$here/install-deps.sh"
"$here/build.sh"
# playwright-core for the dashboard's browser test, exactly as tests/browser/package-lock.json says.
# It drives Debian's chromium: it downloads no browser.
browser_dir="$DDE_ROOT/tests/browser"
if command -v node >/dev/null 2>&1; then
  wanted=$(node -p "require('$browser_dir/package-lock.json').packages['node_modules/playwright-core'].version")
  installed=$(node -p "try { require('$browser_dir/node_modules/playwright-core/package.json').version } catch { '' }")
  if [[ $wanted != "$installed" ]]; then
    (cd "$browser_dir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error) ||
      dde_log "npm ci in tests/browser failed: dashboard_browsertest will fail; the other tests run"
  fi
fi
build_dir="${DDE_BUILD_DIR:-$DDE_ROOT/build}"
status=0
ctest --test-dir "$build_dir" --output-on-failure -j"${DDE_TEST_JOBS:-2}" "$@" || status=$?
if [[ $# -eq 0 && ${DDE_SANITIZE:-1} != 0 ]]; then
  "$here/sanitize.sh" || status=1
fi
exit "$status"
