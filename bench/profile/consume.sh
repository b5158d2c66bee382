#!/bin/bash
# Profile of DDE consumption on a quiet machine, beside the best raw rabbitmq-c client on the same broker.
#   bench/profile/consume.sh BUILD OUT [MODE] [CONSUMERS] [N]
# Starts a local cluster (deploy/cluster.sh) under OUT from BUILD's binaries, has the raw client
# fill and consume N 64-byte messages (acks with `multiple`), then a producer pool fill the topic
# and a consumer pool of CONSUMERS workers consume it (prefetch 64, or PREFETCH for the MQS alone;
# credits 64, or CREDITS). Prints both rates and the CPU ticks (10 ms) of the broker, the MQS and the
# consuming isolate system.
# Environment: PERF=1 (default) records `perf record -a -g` for 3 s into OUT/perf.data; EV=events
# for `perf stat` of the host and the MQS for 2 s (OUT/host.stat, OUT/mqs.stat); STRACE=1 counts
# their syscalls instead (OUT/*.strace); ROOT=dir takes deploy/ from another checkout;
# DDE_MQS_ARGS and DDE_ACTIVATOR_ARGS (deploy/cluster.sh) add options to the MQS and the activator,
# for A/B runs of one build (e.g. "--dequeuer-thread"). Each span also prints, per process, the time its
# threads ran and the time they were runnable but waited for a core (/proc/<pid>/task/*/schedstat):
# ran + waited far below the span's cores means the processes sleep waiting for each other (read it
# with PERF=0: perf record's own work would fall in the span). PIN and BATCH: below, where they apply.
# RAW_ON_DDE=1 has the raw client consume the queue the producer pool filled instead of DDE (then
# stops); BEV=events counts those events of the broker while each client consumes (perf stat:
# OUT/broker-raw.stat, OUT/broker-dde.stat), e.g. BEV=raw_syscalls:sys_enter,page-faults; QINFO=1
# prints the broker's queue process heap before consuming, GC=1 collects it first.
set -uo pipefail
build=$1 out=$2 mode=${3:-at-most-once} consumers=${4:-1} n=${5:-400000}
root=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=../../deploy/lib.sh
source "$root/deploy/lib.sh"
set +e  # lib.sh sets -e; this script checks what it needs itself
mkdir -p "$out"; rm -rf "${out:?}"/*
export DDE_BUILD_DIR=$build
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
profile_cluster_up "$out" --prefetch "${PREFETCH:-64}" || exit 1
ctl() { "$root/deploy/rabbitmq.sh" ctl --dir "$out/cluster/rabbitmq" -- -q "$@"; }
depth() { ctl list_queues name messages 2>/dev/null | awk -v q="$1" '$1==q{print $2}'; }
# Placement for experiments on the kernel's scheduling (PIN, BATCH): see profile_place in lib.sh.
profile_place "$out" || exit 1
qt=transient; [[ $mode == at-least-once ]] && qt=quorum
raw=$build/bin/dde-raw-amqp
# raw best
# RAW_PROPS=1: the raw producer sets the MQS's properties (dde-raw-amqp --dde-props).
props=(); [[ ${RAW_PROPS:-0} == 1 ]] && props=(--dde-props)
$raw produce --port $rmq --queue rawq --queue-type $qt --count $n --size 64 --confirm-window 256 "${props[@]}" >/dev/null
# perf stat of the broker while a client consumes (BEV): broker_stat_start FILE, then broker_stat_stop.
broker_stat_start() { [[ -n ${BEV:-} ]] && { perf stat -e "$BEV" -p "$beam" -o "$1" & bstat=$!; sleep 0.2; }; }
broker_stat_stop() { [[ -n ${BEV:-} ]] && { kill -INT $bstat; wait $bstat; grep -E "^ +[0-9]" "$1"; }; }
b0=$(awk '{print $14+$15}' /proc/$beam/stat)
broker_stat_start $out/broker-raw.stat
s0=$(sched $beam); t0=$(date +%s%N)
# RAW_BATCH=1: the raw consumer runs SCHED_BATCH, as DDE's daemons do by default.
rawsched=(); [[ ${RAW_BATCH:-0} == 1 ]] && rawsched=(chrt -b 0)
"${rawsched[@]}" $raw consume --port $rmq --queue rawq --queue-type $qt --count $n --prefetch 64 --multiple-ack --connections $consumers > "$out/raw.txt"
s1=$(sched $beam); t1=$(date +%s%N)
broker_stat_stop $out/broker-raw.stat
b1=$(awk '{print $14+$15}' /proc/$beam/stat)
echo "raw: $(cat $out/raw.txt) broker_ticks=$((b1-b0))"
echo "raw span $(( (t1-t0)/1000000 )) ms (client start and stop included): $(sched_delta broker "$s0" "$s1")"
node=$(dde_first_node "$build/bin/ddectl" "$registry")
mkdir -p $out/stats
dde_deploy_pool "$build/bin/ddectl" "$registry" "$node" "ws://127.0.0.1:$mp/mqs" pp producer \
  "$build/lib/workers/libproducer.so" '["localhost"]' "$mode" \
  "\"args\": {\"to\": \"demo/consumer\", \"count\": $n, \"size\": 64}"
until [[ $(depth demo.consumer) == "$n" ]]; do sleep 0.5; done
echo "filled $n"
# The queue process's heap and garbage collection (QINFO=1), after a forced collection with GC=1.
qinfo() {
  ctl eval '{ok, Q} = rabbit_amqqueue:lookup(rabbit_misc:r(<<"/">>, queue, <<"demo.consumer">>)), P = amqqueue:get_pid(Q), '"$1"' process_info(P, [heap_size, total_heap_size, memory, message_queue_len, garbage_collection]).' 2>&1 | tr -s ' \n' ' '
}
[[ ${GC:-0} == 1 ]] && echo "queue process after a forced GC: $(qinfo 'erlang:garbage_collect(P),')"
[[ ${QINFO:-0} == 1 ]] && echo "queue process: $(qinfo '')"
if [[ ${RAW_ON_DDE:-0} == 1 ]]; then  # the raw client consumes what the producer pool sent, then stop
  b0=$(awk '{print $14+$15}' /proc/$beam/stat)
  $raw consume --port $rmq --queue demo.consumer --queue-type $qt --count $n --prefetch 64 --multiple-ack > "$out/raw-on-dde.txt"
  b1=$(awk '{print $14+$15}' /proc/$beam/stat)
  echo "raw on dde's queue: $(cat $out/raw-on-dde.txt) broker_ticks=$((b1-b0))"
  exit 0
fi
paths=$(printf '"localhost",%.0s' $(seq "$consumers")); paths="[${paths%,}]"
mqs=$(pgrep -f "dde-mqs --port $mp" | head -1)
m0=$(awk '{print $14+$15}' /proc/$mqs/stat)
b0=$(awk '{print $14+$15}' /proc/$beam/stat)
broker_stat_start $out/broker-dde.stat
dde_deploy_pool "$build/bin/ddectl" "$registry" "$node" "ws://127.0.0.1:$mp/mqs" demo consumer \
  "$build/lib/workers/libconsumer.so" "$paths" "$mode" "\"credits\": ${CREDITS:-64}, \"args\": {\"stats_dir\": \"$out/stats\"}"
until host=$(pgrep -f "dde-isolate-system.*demo" | head -1); [[ -n $host ]]; do sleep 0.1; done
sleep 1
s0=$(sched $beam $mqs $host); t0=$(date +%s%N)
if [[ ${PERF:-1} == 1 ]]; then
  perf record -F 1999 -g -o $out/perf.data -a -- sleep 3 >/dev/null 2>&1
fi
if [[ ${STRACE:-0} == 1 ]]; then
  timeout 2 strace -c -f -p $host -o $out/host.strace >/dev/null 2>&1 & probes=($!)
  timeout 2 strace -c -f -p $mqs -o $out/mqs.strace > /dev/null 2>&1 & probes+=($!)
else
  perf stat -e ${EV:-context-switches,cpu-clock} -p $host -o $out/host.stat -- sleep 2 >/dev/null 2>&1 & probes=($!)
  perf stat -e ${EV:-context-switches,cpu-clock} -p $mqs -o $out/mqs.stat -- sleep 2 >/dev/null 2>&1 & probes+=($!)
fi
wait "${probes[@]}"  # not the broker's perf stat (BEV), which runs until consumption ends
stat() { grep -ho "\"$1\":[0-9]*" $out/stats/consumer-*.json 2>/dev/null | cut -d: -f2 | sort -n; }
until (( $(stat received | awk '{s+=$1} END{print s+0}') >= n )); do sleep 0.2; done
s1=$(sched $beam $mqs $host); t1=$(date +%s%N)
broker_stat_stop $out/broker-dde.stat
b1=$(awk '{print $14+$15}' /proc/$beam/stat); m1=$(awk '{print $14+$15}' /proc/$mqs/stat); h1=$(awk '{print $14+$15}' /proc/$host/stat)
f=$(stat first_us | head -1); l=$(stat last_us | tail -1)
echo "dde: $n in $(( (l-f)/1000 )) ms: $(( n*1000000/(l-f) )) msg/s broker_ticks=$((b1-b0)) mqs_ticks=$((m1-m0)) host_ticks=$h1 (ticks of 10 ms; the host's since it started)"
echo "dde span $(( (t1-t0)/1000000 )) ms (from 1 s after the pool started): $(sched_delta "broker mqs host" "$s0" "$s1")"
grep -E "context|cpu-clock|sys_enter|sched" $out/host.stat $out/mqs.stat
# The consuming isolate system's threads (dde/core/net/elastic_threads.hpp): how many run now, how often one joined.
ops=$(ss -ltnp 2>/dev/null | grep "pid=$host," | grep -o "127.0.0.1:[0-9]*" | head -1)
[[ -n $ops ]] && curl -s "http://$ops/metrics" | grep -E "^dde_host_thread" | tr '\n' ' ' && echo
