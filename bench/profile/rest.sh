#!/bin/bash
# What a rested backlog costs the broker, without DDE: the raw rabbitmq-c client (acking with
# `multiple` every 32, prefetch 64) drains N (200,000) at-most-once messages of 64 B from a
# non-durable classic queue right after filling it, and after the filled queue sat idle for REST
# seconds (3), alternating, ROUNDS (3) times each; prints each drain and the medians.
#   bench/profile/rest.sh BUILD OUT [N] [REST] [ROUNDS]
# A RabbitMQ 3.10 classic queue process hibernates after about a second without traffic; a backlog
# drained after that costs the broker several times the CPU per message, whatever the client does.
set -uo pipefail
build=$1 out=$2 n=${3:-200000} rest=${4:-3} rounds=${5:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
raw=$build/bin/dde-raw-amqp
[[ -x $raw ]] || { echo "rest.sh: $raw is not built" >&2; exit 2; }
mkdir -p "$out"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$root/deploy/rabbitmq.sh" start --dir "$out/rabbitmq" --port "$port" >"$out/rabbitmq.log" 2>&1 ||
  { cat "$out/rabbitmq.log" >&2; exit 1; }
trap '"$root/deploy/rabbitmq.sh" stop --dir "$out/rabbitmq" >/dev/null 2>&1' EXIT
q=(--port "$port" --queue rest.backlog --queue-type transient)
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }
declare -A rates
for ((r = 1; r <= rounds; r++)); do
  for wait in 0 "$rest"; do
    "$raw" delete "${q[@]}" >/dev/null 2>&1
    "$raw" produce "${q[@]}" --count "$n" --size 64 >/dev/null || exit 1
    sleep "$wait"  # the state under test: how long the backlog rested
    line=$("$raw" consume "${q[@]}" --count "$n" --prefetch 64 --multiple-ack) || exit 1
    rate=$(field rate <<<"$line") steady=$(field steady_rate <<<"$line")
    echo "round $r, rested $wait s: $rate msg/s (after the first second $steady)"
    rates[$wait]+="$rate "
  done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }
echo "median: drained at once $(median <<<"${rates[0]}") msg/s, after resting $rest s $(median <<<"${rates[$rest]}") msg/s"
