#!/bin/bash
# A long drain, second by second: what each process spends while the rate changes.
#   bench/profile/drain.sh BUILD OUT [N] [SECONDS]
# Starts a local cluster (deploy/cluster.sh) under OUT from BUILD's binaries, has a producer pool fill
# a queue with N (1,000,000) at-most-once messages of 64 B, then a consumer pool of one worker
# (credits 64, MQS prefetch 64) drain it, and prints for each of SECONDS (25) seconds the messages
# consumed, and the CPU ms and context switches of the broker, the MQS and the consuming isolate
# system (perf stat -I 1000). RAW=1 has the raw rabbitmq-c client (acking with `multiple` every 32)
# drain the same queue instead, with the broker's figures: the broker's share of a slowdown shows
# as the same curve for both.
set -uo pipefail
build=$1 out=$2 n=${3:-1000000} seconds=${4:-25}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../deploy/lib.sh
source "$root/deploy/lib.sh"
set +e  # lib.sh sets -e; this script checks what it needs itself
mkdir -p "$out"; rm -rf "${out:?}"/*
export DDE_BUILD_DIR=$build
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
profile_cluster_up "$out" --prefetch 64 || exit 1
ctl() { "$root/deploy/rabbitmq.sh" ctl --dir "$out/cluster/rabbitmq" -- -q "$@"; }
depth() { ctl list_queues name messages 2>/dev/null | awk -v q="$1" '$1==q{print $2}'; }
node=$(dde_first_node "$build/bin/ddectl" "$registry")
mkdir -p "$out/stats"
dde_deploy_pool "$build/bin/ddectl" "$registry" "$node" "ws://127.0.0.1:$mp/mqs" pp producer \
  "$build/lib/workers/libproducer.so" '["localhost"]' at-most-once \
  "\"args\": {\"to\": \"demo/consumer\", \"count\": $n, \"size\": 64}"
until [[ $(depth demo.consumer) == "$n" ]]; do sleep 0.5; done
echo "filled $n"
# perf stat of pid $2 each second into OUT/$1.iv, for the run's seconds.
watch_pid() { perf stat -I 1000 -e cpu-clock,context-switches -p "$2" -o "$out/$1.iv" -- sleep "$seconds" >/dev/null 2>&1; }
# "NAME cpu ms: ...", "NAME wake-ups: ..." from OUT/NAME.iv
show() {
  echo "$1 cpu ms:   $(awk '/cpu-clock/ {printf "%d ", $2}' "$out/$1.iv")"
  echo "$1 switches: $(awk '/context-switches/ {printf "%d ", $2}' "$out/$1.iv")"
}
if [[ ${RAW:-0} == 1 ]]; then
  watch_pid broker "$beam" & probe=$!
  "$build/bin/dde-raw-amqp" consume --port "$rmq" --queue demo.consumer --queue-type transient --count "$n" \
    --prefetch 64 --multiple-ack --progress 2>"$out/raw.progress" | cut -d' ' -f1-7
  wait $probe
  echo "consumed:   $(awk '{printf "%d ", $3 - p; p = $3}' "$out/raw.progress")"
  show broker
  exit 0
fi
mqs=$(pgrep -f "dde-mqs --port $mp" | head -1)
dde_deploy_pool "$build/bin/ddectl" "$registry" "$node" "ws://127.0.0.1:$mp/mqs" demo consumer \
  "$build/lib/workers/libconsumer.so" '["localhost"]' at-most-once \
  "\"credits\": 64, \"args\": {\"stats_dir\": \"$out/stats\"}"
until host=$(pgrep -f "dde-isolate-system.*demo" | head -1); [[ -n $host ]]; do sleep 0.05; done
watch_pid broker "$beam" & probes=($!)
watch_pid mqs "$mqs" & probes+=($!)
watch_pid host "$host" & probes+=($!)
received() { grep -ho '"received":[0-9]*' "$out"/stats/consumer-*.json 2>/dev/null | cut -d: -f2 | awk '{s+=$1} END{print s+0}'; }
counts="" prev=0
for _ in $(seq "$seconds"); do
  sleep 1
  now=$(received)
  counts+="$((now - prev)) " prev=$now
done
wait "${probes[@]}"
echo "consumed:   $counts"
show broker; show mqs; show host
