#!/bin/bash
# Alternating runs of bench/profile/consume.sh on two build trees (A, then B, ROUNDS times):
#   bench/profile/ab.sh BUILD_A BUILD_B [MODE] [CONSUMERS] [N] [ROUNDS]
# One line a run: the raw client's rate, DDE's, the CPU ticks, and the consuming host's syscalls,
# context switches and CPU milliseconds over 2 s of the consumption.
set -uo pipefail
a=$1 b=$2 mode=${3:-at-most-once} c=${4:-1} n=${5:-150000} rounds=${6:-3}
here=$(dirname "$0")
for _ in $(seq "$rounds"); do
  for build in "$a" "$b"; do
    out=/tmp/dde-ab-$(basename "$(dirname "$build")")
    r=$(PERF=0 EV="raw_syscalls:sys_enter,context-switches,cpu-clock" timeout 600 "$here/consume.sh" "$build" "$out" "$mode" "$c" "$n" 2>&1)
    host=$(grep -hE "sys_enter|context|cpu-clock" "$out/host.stat" 2>/dev/null | awk '{printf "%s ", $1}')
    echo "$mode c$c $build: raw $(echo "$r" | grep -o 'rate=[0-9]*' | head -1) dde $(echo "$r" | grep -o '[0-9]* msg/s broker_ticks=[0-9]* mqs_ticks=[0-9]* host_ticks=[0-9]*') | host syscalls/cs/ms: $host"
  done
done
