#!/usr/bin/env bash
# The README's "Write your first worker": every ```sh block of that section, in order, run as written
# from the repository root in one bash (set -euo pipefail), with HOME a fresh folder under OUT_DIR
# and the cluster on free ports (deploy/cluster.sh reads DDE_*_PORT). The tutorial ends with the
# worker's answer, which must be there. Exits 77 (skipped) when the build is not in <repo>/build,
# the folder the tutorial's commands name.
# Usage: readme_tutorial_test.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=$1 out=$2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/deploy/lib.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
if [[ ! -d $root/build || $(cd "$build" && pwd -P) != $(cd "$root/build" && pwd -P) ]]; then
  echo "SKIP: the tutorial builds in $root/build; this build is $build"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out/home"

script="$out/tutorial.sh"
awk '
  /^## / { in_section = ($0 == "## Write your first worker") }
  in_section && /^```sh$/ { in_block = 1; blocks++; next }
  in_block && /^```$/ { in_block = 0; next }
  in_block { print }
  END { if (blocks < 5) exit 1 }
' "$root/README.md" >"$script" || fail "fewer than 5 sh blocks under \"## Write your first worker\" in README.md"

export HOME="$out/home"
export DDE_REGISTRY_PORT DDE_MQS_PORT DDE_ACTIVATOR_PORT
DDE_REGISTRY_PORT=$(dde_free_port) DDE_MQS_PORT=$(dde_free_port) DDE_ACTIVATOR_PORT=$(dde_free_port)
# Whatever the tutorial started stops with the test, even when a step fails.
trap '"$root/deploy/cluster.sh" down --dir "$HOME/dde-cluster" >/dev/null 2>&1 || true' EXIT

status=0
(cd "$root" && bash -euo pipefail "$script") >"$out/tutorial.log" 2>&1 || status=$?
if ((status != 0)); then
  tail -40 "$out/tutorial.log" >&2
  fail "the tutorial's commands failed (status $status); script $script, log $out/tutorial.log"
fi
grep -q '"text": "Hi, Ada!"' "$out/tutorial.log" || { tail -20 "$out/tutorial.log" >&2; fail "the worker's answer is not in the log"; }
! "$root/deploy/cluster.sh" status --dir "$HOME/dde-cluster" >/dev/null 2>&1 || fail "the tutorial left its cluster running"
echo "PASS: README tutorial ($(grep -c . "$script") lines of commands)"
