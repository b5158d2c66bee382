#!/usr/bin/env bash
# deploy/bench.sh --quick produces every result it promises: a CSV per experiment whose rows have the
# header's columns and a positive number in every throughput/latency column (a 0 marks a point that
# did not complete), summary.md with the targets and every table, and one PNG per thesis figure;
# experiment 8 (recovery) resumed in every run and lost nothing; experiment 9 read every daemon's memory;
# experiment 10 measured consumption on a cluster deploy/cluster.sh started, driven with ddectl;
# experiment 11 measured the end-to-end latency percentiles, ours and raw's;
# every payload our producers sent is exactly the size asked for. No throughput is asserted.
# Usage: bench_smoke_test.sh BUILD_DIR
set -euo pipefail
build=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$build/test-tmp/bench-smoke"
rm -rf "$out"
fail() { echo "FAIL: $*" >&2; exit 1; }

DDE_BUILD_DIR=$build "$root/deploy/bench.sh" --quick --no-build --out "$out" || fail "bench.sh --quick failed"

csvs=(exp1_consumers exp2_message_size exp3_mqs_scaling exp4_production exp5_simultaneous exp6_request_reply exp7_rtt
  exp8_recovery exp9_memory exp10_public_path exp11_latency)
for name in "${csvs[@]}"; do
  f="$out/$name.csv"
  [[ -s $f ]] || fail "$name.csv is missing or empty"
  awk -F, -v name="$name" '
    NR == 1 { n = NF; for (i = 1; i <= NF; i++) if ($i ~ /^(ours|raw)_/) measured[i] = $i; next }
    NF != n { printf "%s.csv line %d has %d fields, the header %d\n", name, NR, NF, n; bad = 1 }
    { for (i in measured) if (!($i ~ /^[0-9.]+$/ && $i + 0 > 0)) {
        printf "%s.csv line %d: %s = \"%s\" (a point that did not complete)\n", name, NR, measured[i], $i; bad = 1 } }
    END { if (NR < 2) { printf "%s.csv has no data rows\n", name; bad = 1 } exit bad }' "$f" >&2 ||
    fail "$name.csv is not well formed"
done

# Our producers' `size` is the exact payload size the broker holds (the peeked first message).
# The prefetch-64 points run long enough to measure the rate after their first second, ours and raw's.
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  $col["prefetch"] == 64 { rows++; for (k in want) if (!($col[want[k]] ~ /^[0-9.]+$/ && $col[want[k]] + 0 > 0)) {
    printf "exp1_consumers.csv line %d: %s = \"%s\"\n", NR, want[k], $col[want[k]]; bad = 1 } }
  BEGIN { want[1] = "steady_ours_msg_s"; want[2] = "steady_raw_best_msg_s" }
  END { if (!rows) { print "exp1_consumers.csv has no prefetch-64 row"; bad = 1 } exit bad }' "$out/exp1_consumers.csv" >&2 ||
  fail "a prefetch-64 point has no rate after its first second"

awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  $col["payload_bytes"] != $col["size"] {
    printf "exp2_message_size.csv line %d: size %s but payload_bytes %s\n", NR, $col["size"], $col["payload_bytes"]; bad = 1 }
  END { exit bad }' "$out/exp2_message_size.csv" >&2 || fail "a payload is not the size asked for"

# Experiment 8 (recovery): at-least-once loses nothing across a broker restart or an MQS kill (the
# resume columns are ours_*: a run that did not resume fails the check above).
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  $col["lost"] != 0 { printf "exp8_recovery.csv line %d (%s): %s lost\n", NR, $col["scenario"], $col["lost"]; bad = 1 }
  END { exit bad }' "$out/exp8_recovery.csv" >&2 || fail "messages were lost in a recovery"

# Experiment 9 (memory): every process was seen under load, and every one but the producer's pool
# (deployed only to fill the queue) idle before it.
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  !($col["peak_mib"] + 0 > 0) { printf "exp9_memory.csv line %d (%s): no peak\n", NR, $col["process"]; bad = 1 }
  $col["process"] !~ /producer/ && !($col["idle_mib"] + 0 > 0) {
    printf "exp9_memory.csv line %d (%s): no idle figure\n", NR, $col["process"]; bad = 1 }
  END { if (NR < 7) { print "exp9_memory.csv has fewer than 6 processes"; bad = 1 } exit bad }' "$out/exp9_memory.csv" >&2 ||
  fail "the resident memory of a process was not measured"

summary="$out/summary.md"
[[ -s $summary ]] || fail "summary.md is missing"
grep -q '^## Targets' "$summary" || fail "summary.md has no targets section"
grep -q '^| AMO consumption / best raw, prefetch 64, 64 B, 1 consumer |' "$summary" ||
  fail "summary.md lacks the consumption target against the best raw client"
for c in "1 consumer" "4 consumers"; do
  grep -qE "^\| AMO sustained consumption \(after the first second\) / best raw's, prefetch 64, 64 B, $c \| >= 0\.[0-9]+ \| [0-9.]+ \|" "$summary" ||
    fail "summary.md lacks a measured sustained-consumption target ($c)"
done
# Experiment 10: the same consumption on a cluster deploy/cluster.sh started, pools deployed with ddectl.
for c in "1 consumer" "4 consumers"; do
  grep -qE "^\| public path \(cluster.sh, ddectl\): AMO consumption / best raw, prefetch 64, 64 B, $c \| >= 0\.[0-9]+ \| [0-9.]+ \|" "$summary" ||
    fail "summary.md lacks a measured public-path consumption target ($c)"
  grep -qE "^\| public path: AMO sustained consumption \(after the first second\) / best raw's, $c \| >= 0\.[0-9]+ \| [0-9.]+ \|" "$summary" ||
    fail "summary.md lacks a measured public-path sustained-consumption target ($c)"
done
# Experiment 11: the end-to-end latency p99 against raw's, in both modes.
for mode in AMO ALO; do
  grep -qE "^\| $mode end-to-end latency p99 / raw's, at half the maximum rate \(exp 11\) \| <= 2\.00 \| [0-9.]+ \|" "$summary" ||
    fail "summary.md lacks a measured $mode latency target"
done
grep -q '^| payload bytes at the broker .* | met |$' "$summary" || fail "the payload size target is not met"
for name in "${csvs[@]}"; do grep -q "\`$name.csv\`" "$summary" || fail "summary.md lacks the $name table"; done
for what in "a broker restart" "an MQS kill"; do
  grep -q "^| consuming resumes after $what .* | \(met\|\*\*missed\*\*\) |\$" "$summary" ||
    fail "summary.md's recovery target after $what is not measured"
done

plots=(exp1_consumers exp2_consume_size exp2_produce_size exp3_consume_mqs exp3_produce_mqs exp4_production
  exp5_one_mqs exp5_two_mqs exp6_request_reply exp7_rtt)
for name in "${plots[@]}"; do
  png="$out/$name.png"
  [[ -s $png ]] || fail "$name.png is missing or empty"
  [[ $(head -c 8 "$png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "$name.png is not a PNG"
  grep -q "($name.png)" "$summary" || fail "summary.md does not show $name.png"
done
echo "PASS: bench.sh --quick wrote ${#csvs[@]} CSV files, summary.md and ${#plots[@]} plots"
