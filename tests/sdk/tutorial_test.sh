#!/usr/bin/env bash
# The README's "A five-minute tour" and the manual's "Write your first worker"
# (docs/manual/getting-started/first-worker.md), run as they are written: every ```sh block of each, in
# order, from the repository root in one bash (set -euo pipefail), with HOME a fresh folder under
# OUT_DIR and the clusters on free ports (deploy/cluster.sh reads DDE_*_PORT). The tour must show the
# echo pool answering from version 1 and then, once its plugin file was replaced, from version 2; the
# tutorial ends with the worker's answer. The manual's copy of the tour
# (docs/manual/getting-started/tour.md) must hold the same commands as the README's. Exits 77 (skipped)
# when the build is not in <repo>/build, the folder the commands name.
# Usage: tutorial_test.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=$1 out=$2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=../../deploy/lib.sh
source "$root/deploy/lib.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
if [[ ! -d $root/build || $(cd "$build" && pwd -P) != $(cd "$root/build" && pwd -P) ]]; then
  echo "SKIP: the tutorial builds in $root/build; this build is $build"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out/home"

# sh_blocks FILE [SECTION]: the ```sh blocks of FILE (of its "## SECTION" only, when given), in order.
sh_blocks() {
  awk -v section="${2:-}" '
    section != "" && /^## / { in_section = ($0 == "## " section) }
    section == "" { in_section = 1 }
    in_section && /^```sh$/ { in_block = 1; blocks++; next }
    in_block && /^```$/ { in_block = 0; next }
    in_block { print }
    END { print blocks > "/dev/stderr" }
  ' "$1"
}
count_of() { tail -1 "$1"; }

sh_blocks "$root/README.md" "A five-minute tour" >"$out/tour.sh" 2>"$out/tour.count"
(($(count_of "$out/tour.count") >= 4)) || fail "fewer than 4 sh blocks under \"## A five-minute tour\" in README.md"
sh_blocks "$root/docs/manual/getting-started/tour.md" >"$out/manual-tour.sh" 2>/dev/null
diff -u "$out/tour.sh" "$out/manual-tour.sh" >&2 ||
  fail "docs/manual/getting-started/tour.md's commands are not the README's tour's"
sh_blocks "$root/docs/manual/getting-started/first-worker.md" >"$out/tutorial.sh" 2>"$out/tutorial.count"
(($(count_of "$out/tutorial.count") >= 5)) || fail "fewer than 5 sh blocks in docs/manual/getting-started/first-worker.md"

export HOME="$out/home"
export DDE_REGISTRY_PORT DDE_MQS_PORT DDE_ACTIVATOR_PORT
DDE_REGISTRY_PORT=$(dde_free_port) DDE_MQS_PORT=$(dde_free_port) DDE_ACTIVATOR_PORT=$(dde_free_port)
# Whatever the commands started stops with the test, even when a step fails.
stop_clusters() {
  "$root/deploy/cluster.sh" down --dir "$HOME/dde-tour" >/dev/null 2>&1 || true
  "$root/deploy/cluster.sh" down --dir "$HOME/dde-cluster" >/dev/null 2>&1 || true
}
trap stop_clusters EXIT

# run NAME: runs $out/NAME.sh from the repository root, its output in $out/NAME.log.
run() {
  local status=0
  (cd "$root" && bash -euo pipefail "$out/$1.sh") >"$out/$1.log" 2>&1 || status=$?
  if ((status != 0)); then
    tail -40 "$out/$1.log" >&2
    fail "the $1's commands failed (status $status); script $out/$1.sh, log $out/$1.log"
  fi
}

run tour
grep -q '"version": 1' "$out/tour.log" || { tail -30 "$out/tour.log" >&2; fail "the tour's echo pool did not answer from version 1"; }
# Version 2 must answer after version 1 did: the swap happened while the pool ran.
awk '/"version": 1/ { one = NR } /"version": 2/ && one { two = NR } END { exit !two }' "$out/tour.log" ||
  { tail -30 "$out/tour.log" >&2; fail "the tour's echo pool did not answer from version 2 after the swap"; }
grep -Eq '^node-a +tour +consumer +running' "$out/tour.log" || { tail -30 "$out/tour.log" >&2; fail "ddectl status does not show tour/consumer running"; }
! "$root/deploy/cluster.sh" status --dir "$HOME/dde-tour" >/dev/null 2>&1 || fail "the tour left its cluster running"

run tutorial
grep -q '"text": "Hi, Ada!"' "$out/tutorial.log" || { tail -20 "$out/tutorial.log" >&2; fail "the worker's answer is not in the log"; }
! "$root/deploy/cluster.sh" status --dir "$HOME/dde-cluster" >/dev/null 2>&1 || fail "the tutorial left its cluster running"
echo "PASS: the README's tour ($(grep -c . "$out/tour.sh") lines of commands) and the manual's tutorial ($(grep -c . "$out/tutorial.sh") lines)"
