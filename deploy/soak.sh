#!/usr/bin/env bash
# A bounded soak run (not part of CI): a throw-away local cluster (deploy/cluster.sh),
# a calibration burst that measures the maximum end-to-end throughput (producer -> dde-mqs ->
# RabbitMQ -> consumer, at-least-once), then a steady load at --load of it for --minutes, sampling
# the resident memory of every daemon every --sample-seconds. Prints the samples' summary: memory
# after warm-up and at the end, messages produced, consumed, lost, duplicated, errors logged.
#   soak.sh [--minutes 10] [--load 0.8] [--sample-seconds 5] [--calibrate 100000] [--consumers 2]
#           [--prefetch 64] [--dir D]    (samples in D/rss.csv; default D = build/soak-run)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"

minutes=10 load=0.8 sample=5 calibrate=100000 consumers=2 prefetch=64 run=""
while (($#)); do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --load) load="$2"; shift 2 ;;
    --sample-seconds) sample="$2"; shift 2 ;;
    --calibrate) calibrate="$2"; shift 2 ;;
    --consumers) consumers="$2"; shift 2 ;;
    --prefetch) prefetch="$2"; shift 2 ;;
    --dir) run="$2"; shift 2 ;;
    -h|--help) sed -n '2,8s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) dde_die "unknown argument $1 (see --help)" ;;
  esac
done
build="${DDE_BUILD_DIR:-$DDE_ROOT/build}"
[[ -x $build/bin/dde-mqs ]] || dde_die "not built: run deploy/build.sh"
run="${run:-$build/soak-run}"
rm -rf "$run"
mkdir -p "$run/cal" "$run/soak"

cluster=(--dir "$run/cluster" --prefetch "$prefetch" --registry-port "$(dde_free_port)"
         --mqs-port "$(dde_free_port)" --activator-port "$(dde_free_port)" --name soak-node)
cleanup() { "$here/cluster.sh" down "${cluster[@]}" >/dev/null 2>&1 || true; }
trap cleanup EXIT
registry=$("$here/cluster.sh" up "${cluster[@]}")
# shellcheck disable=SC1091  # written by cluster.sh up: registry=... mqs=...
source "$run/cluster/urls"
: "${mqs:?cluster.sh up did not name the MQS in $run/cluster/urls}"
ddectl=("$build/bin/ddectl" --registry "$registry")
node=$("${ddectl[@]}" -o json list | grep -o '"bootstrapperId": *"[0-9]*"' | head -1 | grep -o '[0-9][0-9]*')
[[ -n $node ]] || dde_die "no node registered with $registry"
paths=$(printf '"localhost",%.0s' $(seq "$consumers")); paths="[${paths%,}]"
workers="$build/lib/workers"

# deploy SYSTEM COUNT RATE STATS_DIR: a consumer pool and a producer feeding it.
deploy() {
  "${ddectl[@]}" deploy - >/dev/null <<JSON
{"bootstrapperId": "$node", "action": "action.addIsolate", "messageQueuingSystemServer": "$mqs",
 "isolateSystemName": "$1", "isolateName": "consumer", "uri": "$workers/libconsumer.so",
 "workersPaths": $paths, "routerType": "roundRobin", "hotDeployment": false,
 "credits": $prefetch, "args": {"stats_dir": "$4"}}
JSON
  "${ddectl[@]}" deploy - >/dev/null <<JSON
{"bootstrapperId": "$node", "action": "action.addIsolate", "messageQueuingSystemServer": "$mqs",
 "isolateSystemName": "$1", "isolateName": "producer", "uri": "$workers/libproducer.so",
 "workersPaths": ["localhost"], "routerType": "roundRobin", "hotDeployment": false,
 "args": {"to": "$1/consumer", "count": $2, "rate": $3, "size": 64, "stats_dir": "$4"}}
JSON
}
stat_of() { grep -ho "\"$2\":[0-9]*" "$1"/"$3"-*.json 2>/dev/null | head -1 | cut -d: -f2; }
received() { local r; r=$(stat_of "$1" received consumer); echo "${r:-0}"; }

dde_log "calibrating: $calibrate messages as fast as they go"
deploy soakcal "$calibrate" 0 "$run/cal"
dde_wait_until 600 bash -c "[[ \$(grep -ho '\"received\":[0-9]*' '$run/cal'/consumer-*.json 2>/dev/null | cut -d: -f2) -ge $calibrate ]]" ||
  dde_die "calibration did not finish; see $run/cluster"
first=$(stat_of "$run/cal" first_us consumer) last=$(stat_of "$run/cal" last_us consumer)
max_rate=$(awk -v n="$calibrate" -v a="$first" -v b="$last" 'BEGIN { printf "%.0f", n / ((b - a) / 1e6) }')
rate=$(awk -v m="$max_rate" -v l="$load" 'BEGIN { printf "%.0f", m * l }')
count=$((rate * minutes * 60))
"${ddectl[@]}" shutdown "$node" soakcal >/dev/null 2>&1 || true
dde_log "maximum $max_rate msg/s; soaking at $rate msg/s ($load) for $minutes min: $count messages"

deploy soak "$count" "$rate" "$run/soak"
rss() { local pid=$1; [[ -n $pid ]] && awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0; }
hosts_rss() {
  local total=0 pid
  for pid in $(pgrep -P "$(cat "$run/cluster/activator.pid")" 2>/dev/null); do total=$((total + $(rss "$pid"))); done
  echo "$total"
}
echo "seconds,received,mqs_kib,registry_kib,activator_kib,isolate_systems_kib,rabbitmq_kib" >"$run/rss.csv"
start=$SECONDS deadline=$((SECONDS + minutes * 60 + 300))
while :; do
  got=$(received "$run/soak")
  echo "$((SECONDS - start)),$got,$(rss "$(cat "$run/cluster/mqs.pid")"),$(rss "$(cat "$run/cluster/registry.pid")"),$(rss "$(cat "$run/cluster/activator.pid")"),$(hosts_rss),$(rss "$(cat "$run/cluster/rabbitmq/server.pid" 2>/dev/null)")" >>"$run/rss.csv"
  ((got >= count)) && break
  ((SECONDS < deadline)) || { dde_log "timed out"; break; }
  sleep "$sample"
done

unique=$(stat_of "$run/soak" unique consumer) dups=$(stat_of "$run/soak" duplicates consumer)
sent=$(stat_of "$run/soak" sent producer)
errors=$(cat "$run/cluster"/*.log "$run/cluster/systems"/*.log 2>/dev/null | grep -c '\[error\]' || true)
echo "DDE soak: max $max_rate msg/s, load $rate msg/s for $minutes min; produced ${sent:-0}, consumed ${unique:-0}," \
  "lost $((count - ${unique:-0})), duplicated ${dups:-0}, errors logged $errors"
# Memory: the first sample after a fifth of the run (warm-up) against the last one and the peak.
awk -F, -v warm=$((minutes * 12)) 'NR == 1 { for (i = 3; i <= NF; ++i) name[i] = $i; next }
  { for (i = 3; i <= NF; ++i) { if (!seen && $1 >= warm) w[i] = $i; last[i] = $i; if ($i > peak[i]) peak[i] = $i } if ($1 >= warm) seen = 1 }
  END { for (i = 3; i <= 7; ++i) printf "  %-20s after warm-up %7d KiB  end %7d KiB  peak %7d KiB\n", name[i], w[i], last[i], peak[i] }' \
  "$run/rss.csv"
[[ ${unique:-0} -ge $count ]]
