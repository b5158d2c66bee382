#!/bin/bash
# Which of the MQS's AMQP properties leave a RabbitMQ queue slow to consume (the slow state: some runs
# drain a queue the MQS filled at a fraction of the usual rate), with the raw rabbitmq-c client alone:
# no DDE process runs.
#   bench/profile/props.sh BUILD OUT N ROUNDS VARIANT...
# VARIANT: none, or a comma-separated subset of id, app, ts (dde-raw-amqp --props), or all.
# Each round runs every variant in turn, each on a fresh broker node: fill a transient queue with N
# 64-byte messages (confirm window 256), then consume them (prefetch 64, acks with `multiple`).
# One line a run: the variant, the consumer's rate and the broker's CPU ticks (10 ms) while consuming.
# QINFO=1 adds the queue process's off-heap binaries (count, bytes), memory and garbage collection
# before consuming. QARGS="x-queue-version=2 x-queue-mode=lazy": declare the queue with these arguments.
set -euo pipefail
build=$1 out=$2 n=$3 rounds=$4; shift 4
root=$(cd "$(dirname "$0")/../.." && pwd)
raw=$build/bin/dde-raw-amqp
mkdir -p "$out"
qargs=()
for a in ${QARGS:-}; do qargs+=(--queue-arg "$a"); done
# The queue process of the node in $1: its off-heap binaries, memory and garbage collection.
queue_info() {
  "$root/deploy/rabbitmq.sh" ctl --dir "$1" -- -q eval '{ok, Q} = rabbit_amqqueue:lookup(rabbit_misc:r(<<"/">>, queue, <<"q">>)), P = amqqueue:get_pid(Q), {binary, B} = process_info(P, binary), I = process_info(P, [memory, heap_size, total_heap_size, garbage_collection]), {length(B), lists:sum([S || {_, S, _} <- B]), I}.' 2>&1 | tr -s ' \n' ' '
}
for ((r = 1; r <= rounds; r++)); do
  for v in "$@"; do
    dir=$out/node-$r-$v
    rm -rf "$dir" 2>/dev/null || true  # a stopping node may still write into it
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$root/deploy/rabbitmq.sh" start --dir "$dir" --port "$port" >/dev/null
    beam=$(pgrep -f "beam.smp.*$dir" | head -1)
    props=()
    case $v in none) ;; all) props=(--dde-props) ;; *) props=(--props "$v") ;; esac
    "$raw" produce --port "$port" --queue q --queue-type transient "${qargs[@]}" --count "$n" --size 64 --confirm-window 256 \
      "${props[@]}" >/dev/null
    [[ ${QINFO:-0} == 1 ]] && echo "round $r props $v: queue before consuming: $(queue_info "$dir")"
    b0=$(awk '{print $14+$15}' "/proc/$beam/stat")
    rate=$("$raw" consume --port "$port" --queue q --queue-type transient "${qargs[@]}" --count "$n" --prefetch 64 --multiple-ack)
    b1=$(awk '{print $14+$15}' "/proc/$beam/stat")
    echo "round $r props $v: $rate broker_ticks=$((b1 - b0))"
    "$root/deploy/rabbitmq.sh" stop --dir "$dir" >/dev/null
    rm -rf "$dir" 2>/dev/null || true  # a stopping node may still write into it
  done
done
