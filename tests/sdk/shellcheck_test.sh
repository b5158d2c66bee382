#!/usr/bin/env bash
# Runs ShellCheck (warnings and errors) on every shell script of the repository, .ci/run included.
# Usage: shellcheck_test.sh SOURCE_DIR
set -euo pipefail
cd "$1"
command -v shellcheck >/dev/null || { echo "FAIL: shellcheck is not installed (deploy/install-deps.sh installs it)" >&2; exit 1; }
mapfile -t scripts < <(git ls-files '*.sh' .ci/run deploy/systemd/postinst 2>/dev/null || find . -name '*.sh' -not -path './build*')
((${#scripts[@]} >= 10)) || { echo "FAIL: only ${#scripts[@]} scripts found" >&2; exit 1; }
shellcheck -x -S warning "${scripts[@]}"
echo "PASS: shellcheck on ${#scripts[@]} scripts"
