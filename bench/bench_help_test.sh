#!/usr/bin/env bash
# Every benchmark binary answers --help with its usage and exits 0 at once, and refuses an argument
# it does not know with exit 2, instead of starting a run (a run starts RabbitMQ and takes minutes).
# Usage: bench_help_test.sh BUILD_DIR
set -euo pipefail
bin="$1/bin"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
n=0
for b in dde-bench-backbone dde-bench-elastic dde-bench-features dde-bench-governance dde-bench-hotswap dde-bench-suite dde-raw-amqp; do
  [[ -x $bin/$b ]] || continue
  out=$(timeout 10 "$bin/$b" --help 2>&1) || fail "$b --help exited $? (or ran past 10 s): $out"
  grep -q "^usage: $b" <<<"$out" || fail "$b --help printed no usage line: $out"
  status=0
  timeout 10 "$bin/$b" --no-such-option >/dev/null 2>&1 || status=$?
  ((status == 2)) || fail "$b --no-such-option exited $status, not 2 (a usage error)"
  n=$((n + 1))
done
((n >= 2)) || fail "only $n benchmark binaries found in $bin"
# The scripts: --help prints their usage, a bad argument stops them before any cluster starts.
scripts="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out=$("$scripts/pool-scale.sh" --help) || fail "pool-scale.sh --help exited $?"
grep -q "bench/pool-scale.sh \[--pools" <<<"$out" || fail "pool-scale.sh --help printed no usage: $out"
out=$(timeout 10 "$scripts/pool-scale.sh" --pools 10,x 2>&1) && fail "pool-scale.sh --pools 10,x ran"
grep -q "not a count: x" <<<"$out" || fail "pool-scale.sh --pools 10,x said: $out"
echo "PASS: $n benchmark binaries answer --help and refuse unknown options"
