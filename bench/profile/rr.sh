#!/bin/bash
# Profile of DDE's request-reply beside the raw rabbitmq-c client's on the same broker.
#   bench/profile/rr.sh BUILD OUT [MODE] [REQUESTERS] [ASKS_EACH]
# Starts a local cluster (deploy/cluster.sh) under OUT from BUILD's binaries; the raw client's
# requesters (a connection each) ask its one supplier (prefetch 8) REQUESTERS x ASKS_EACH times;
# then a supplier pool of 1 worker (credits 8) and a requester pool of REQUESTERS workers in one
# isolate system ask as many times, one ask in flight each (as experiments 6/7 of the suite do).
# Prints both rates and round-trip percentiles, and for the span of DDE's asks the time each
# process's threads ran and waited for a core (/proc/<pid>/task/*/schedstat): broker, MQS, the
# supplier's isolate system, the requesters'.
# Environment: PERF=1 records `perf record -a -g` for 1 s of DDE's asks into OUT/perf.data;
# EV=events has `perf stat` count them for each process over 1 s (OUT/{broker,mqs,supplier,requester}.stat);
# and the broker's over the raw client's whole run (OUT/broker-raw.stat); STRACE=1 counts the syscalls of the MQS and both isolate systems over 1 s instead (OUT/*.strace);
# DDE_MQS_ARGS and DDE_ACTIVATOR_ARGS as for deploy/cluster.sh; PREFETCH the MQS's (default 8).
set -uo pipefail
build=$1 out=$2 mode=${3:-at-most-once} requesters=${4:-16} each=${5:-1000}
root=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=../../deploy/lib.sh
source "$root/deploy/lib.sh"
set +e
mkdir -p "$out"; rm -rf "${out:?}"/*
export DDE_BUILD_DIR=$build
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "$0")/lib.sh"
# The MQS's prefetch is the raw supplier's, 8, as in the suite (cluster.sh's default is 1, which
# held the supplier to one request at a time); PREFETCH sets another.
profile_cluster_up "$out" --prefetch "${PREFETCH:-8}" || exit 1
profile_place "$out" || exit 1  # PIN, BATCH: as for consume.sh
mqs=$(pgrep -f "dde-mqs --port $mp" | head -1)
qt=(--queue-type transient); [[ $mode == at-least-once ]] && qt=(--queue-type quorum --persistent)
r0=$(sched "$beam")
[[ -n ${EV:-} ]] && { perf stat -e "$EV" -p "$beam" -o "$out/broker-raw.stat" & rawstat=$!; sleep 0.2; }
echo "raw: $("$build/bin/dde-raw-amqp" rpc --port "$rmq" --queue rawrpc --count $((requesters * each)) \
  --connections "$requesters" --suppliers 1 --prefetch 8 --size 64 "${qt[@]}")"
r1=$(sched "$beam")
[[ -n ${EV:-} ]] && { kill -INT $rawstat; wait $rawstat; }
echo "raw: $(sched_delta broker "$r0" "$r1")(client start and stop included)"
node=$(dde_first_node "$build/bin/ddectl" "$registry")
mkdir -p "$out/stats"
go=$out/stats/go
dde_deploy_pool "$build/bin/ddectl" "$registry" "$node" "ws://127.0.0.1:$mp/mqs" demo supplier \
  "$build/lib/workers/libsupplier.so" '["localhost"]' "$mode" '"credits": 8'
# SYSTEMS=N spreads the requesters over N isolate systems (demor, demor2, ...), as the suite spreads
# them over its four nodes; the schedstat line reports the first.
systems=${SYSTEMS:-1}
for ((k = 0; k < systems; ++k)); do
  workers=$((requesters / systems + (k < requesters % systems ? 1 : 0)))
  ((workers > 0)) || continue
  name=demor; ((k)) && name=demor$((k + 1))
  paths=$(printf '"localhost",%.0s' $(seq "$workers")); paths="[${paths%,}]"
  dde_deploy_pool "$build/bin/ddectl" "$registry" "$node" "ws://127.0.0.1:$mp/mqs" "$name" requester \
    "$build/lib/workers/librequester.so" "$paths" "$mode" "\"credits\": 8, \"args\": {\"to\": \"demo/supplier\",
     \"count\": $each, \"stats_dir\": \"$out/stats\", \"rtt_log\": true, \"timeout_ms\": 5000,
     \"start_file\": \"$go\", \"warmup\": 1}"
done
sum() { grep -ho "\"$1\":[0-9a-z]*" "$out"/stats/requester-*.json 2>/dev/null | cut -d: -f2 | sed 's/true/1/;s/false/0/' | awk '{s+=$1} END{print s+0}'; }
until (( $(sum warmed) >= requesters )); do sleep 0.05; done
supplier=$(pgrep -f "dde-isolate-system --name demo --" | head -1)
requester=$(pgrep -f "dde-isolate-system --name demor --" | head -1)
s0=$(sched "$beam" "$mqs" "$supplier" "$requester"); t0=$(date +%s%N)
touch "$go"
if [[ ${PERF:-0} == 1 ]]; then
  perf record -F 1999 -g -o "$out/perf.data" -a -- sleep 1 >/dev/null 2>&1
elif [[ ${STRACE:-0} == 1 ]]; then
  probes=()
  for p in ${STRACED:-mqs:$mqs supplier:$supplier requester:$requester}; do
    [[ $p == broker ]] && p=broker:$beam
    timeout 1 strace -c -f -p "${p#*:}" -o "$out/${p%%:*}.strace" >/dev/null 2>&1 & probes+=($!)
  done
  wait "${probes[@]}"
elif [[ -n ${EV:-} ]]; then
  probes=()
  for p in broker:$beam mqs:$mqs supplier:$supplier requester:$requester; do
    perf stat -e "$EV" -p "${p#*:}" -o "$out/${p%%:*}.stat" -- sleep 1 >/dev/null 2>&1 & probes+=($!)
  done
  wait "${probes[@]}"
fi
# Each requester writes its .rtt file once it finished. Counted with a glob and waited for with
# read -t, no process is forked while DDE's asks run: forking grep, sed and awk every 50 ms stalled
# every round trip in flight for 2-3 ms, the tail of what this script measured.
exec {idle}<> <(:)
until rtts=("$out"/stats/*.rtt); [[ -e ${rtts[0]} ]] && (( ${#rtts[@]} >= requesters )); do read -rt 0.2 -u $idle; done
exec {idle}>&-
s1=$(sched "$beam" "$mqs" "$supplier" "$requester"); t1=$(date +%s%N)
first=$(grep -ho '"first_us":[0-9]*' "$out"/stats/requester-*.json | cut -d: -f2 | sort -n | head -1)
last=$(grep -ho '"last_us":[0-9]*' "$out"/stats/requester-*.json | cut -d: -f2 | sort -n | tail -1)
replied=$(sum replied)
cat "$out"/stats/*.rtt | sort -n > "$out/rtt.txt"
pct() { awk -v p="$1" '{a[NR]=$1} END{i=int(p*NR)+1; if (i>NR) i=NR; printf "%.2f", a[i]/1000}' "$out/rtt.txt"; }
echo "dde: $replied asks in $(( (last-first)/1000 )) ms: $(( replied*1000000/(last-first) )) asks/s" \
  "p50 $(pct 0.5) p90 $(pct 0.9) p99 $(pct 0.99) ms, lost $(sum lost)"
echo "span $(( (t1-t0)/1000000 )) ms: $(sched_delta "broker mqs supplier requester" "$s0" "$s1")"
[[ -n ${EV:-} ]] && grep -H -E "^ +[0-9]" "$out"/*.stat
exit 0
