#!/usr/bin/env bash
# The hostile-input checks: builds DDE with clang, AddressSanitizer and UndefinedBehaviorSanitizer
# (in <repo>/build-san, or $DDE_SAN_BUILD_DIR), runs the unit tests there, then each libFuzzer target
# of tests/fuzz for $DDE_FUZZ_SECONDS seconds (30) against its corpus in tests/fuzz/corpus/<name>.
# New inputs the fuzzers find go to build-san/fuzz/<name>; a crash leaves its input in
# build-san/fuzz/crash-* and fails the run. deploy/test.sh calls this after the main suite.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build_dir="${DDE_SAN_BUILD_DIR:-$DDE_ROOT/build-san}"
seconds="${DDE_FUZZ_SECONDS:-30}"
fuzzers=(wire_fuzz envelope_fuzz registry_rest_fuzz registry_frames_fuzz protocol_fuzz)
unit_tests=(framework_unittest mqs_unittest mqs_cores_unittest registry_unittest workers_unittest protocol_unittest
  host_unittest activator_unittest runtime_unittest)

command -v clang++ >/dev/null || dde_die "clang++ is missing (deploy/install-deps.sh installs it)"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$DDE_ROOT}"
# As in build.sh: with -g ccache would hash the working directory, so no clone hit another's objects.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
mkdir -p "$build_dir"
CC=clang CXX=clang++ cmake -S "$DDE_ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDE_FUZZ=ON -DDDE_BUILD_TESTS=ON \
  >"$build_dir/configure.log" 2>&1 || { cat "$build_dir/configure.log"; dde_die "configure failed"; }
dde_log "building the unit tests and fuzzers with ASan + UBSan in $build_dir"
cmake --build "$build_dir" -j"${DDE_BUILD_JOBS:-2}" --target "${unit_tests[@]}" dde_fuzzers

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0
tests_regex="^($(IFS='|'; echo "${unit_tests[*]}"))\$"
ctest --test-dir "$build_dir" --output-on-failure -j"${DDE_TEST_JOBS:-2}" -R "$tests_regex" || status=1

for fuzzer in "${fuzzers[@]}"; do
  work="$build_dir/fuzz/$fuzzer"
  mkdir -p "$work"
  dde_log "fuzzing $fuzzer for ${seconds}s"
  # The first directory takes new inputs; the committed corpus is only read.
  if ! "$build_dir/bin/$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build_dir/fuzz/crash-$fuzzer-" "$work" "$DDE_ROOT/tests/fuzz/corpus/$fuzzer" \
      >"$work.log" 2>&1; then
    tail -n 60 "$work.log" >&2
    dde_log "$fuzzer failed; its input is in $build_dir/fuzz/crash-$fuzzer-*"
    status=1
  else
    grep -aE "^stat::(number_of_executed_units|new_units_added)" "$work.log" | tr '\n' ' ' >&2
    echo >&2
  fi
done
exit "$status"
