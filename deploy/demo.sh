#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, starts a throw-away local cluster
# (deploy/cluster.sh: RabbitMQ, dde-registry, dde-mqs, dde-activator), deploys a producer and a
# consumer pool through the registry's REST API, moves messages producer -> MQS -> RabbitMQ ->
# consumer, stops everything it started, and prints the throughput.
#   demo.sh [--messages N] [--mode at-least-once|at-most-once] [--prefetch K] [--consumers C] [--timeout S]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"

messages=200000 mode=at-least-once prefetch=64 consumers=2 timeout=300
while (($#)); do
  case "$1" in
    --messages) messages="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --prefetch) prefetch="$2"; shift 2 ;;
    --consumers) consumers="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    -h|--help) sed -n '2,6s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) dde_die "unknown argument $1 (see --help)" ;;
  esac
done
[[ $mode == at-least-once || $mode == at-most-once ]] || dde_die "--mode must be at-least-once or at-most-once"

"$here/install-deps.sh"
"$here/build.sh"
build="${DDE_BUILD_DIR:-$DDE_ROOT/build}"
run="$build/demo-run"
rm -rf "$run"
mkdir -p "$run/stats"

cluster=(--dir "$run/cluster" --prefetch "$prefetch")
# The thesis's ports when they are free, else any free ones.
for flag_port in registry-port:8000 mqs-port:42043 activator-port:42042; do
  flag=${flag_port%%:*} port=${flag_port##*:}
  dde_port_open "$port" && port=$(dde_free_port)
  cluster+=("--$flag" "$port")
  if [[ $flag == mqs-port ]]; then mqs_port=$port; fi
done
cleanup() { "$here/cluster.sh" down "${cluster[@]}" >/dev/null 2>&1 || true; }
trap cleanup EXIT

dde_log "starting a local cluster (RabbitMQ, dde-registry, dde-mqs, dde-activator) in $run/cluster"
registry=$("$here/cluster.sh" up "${cluster[@]}")
node=$(dde_first_node "$build/bin/ddectl" "$registry")
[[ -n $node ]] || dde_die "no node registered with $registry"
mqs="ws://127.0.0.1:$mqs_port/mqs"
dde_log "registry $registry, node $node, MQS $mqs (prefetch $prefetch)"

paths=$(printf '"localhost",%.0s' $(seq "$consumers")); paths="[${paths%,}]"
workers="$build/lib/workers"
# Deployed through the registry's REST API (thesis 3.2.2), as a user would with curl or ddectl.
dde_deploy_pool "$build/bin/ddectl" "$registry" "$node" "$mqs" demo consumer "$workers/libconsumer.so" "$paths" \
  "$mode" "\"credits\": $prefetch, \"args\": {\"stats_dir\": \"$run/stats\"}"
dde_deploy_pool "$build/bin/ddectl" "$registry" "$node" "$mqs" demo producer "$workers/libproducer.so" '["localhost"]' \
  "$mode" "\"args\": {\"to\": \"demo/consumer\", \"count\": $messages, \"size\": 64}"
dde_log "deployed demo/consumer ($consumers workers) and demo/producer: $messages messages of 64 bytes, $mode"

consumer_stat() { grep -o "\"$1\":[0-9]*" "$run/stats/"consumer-*.json 2>/dev/null | head -1 | cut -d: -f2; }
done_yet() { local r; r=$(consumer_stat received); [[ -n $r && $r -ge $messages ]]; }
last=0
deadline=$((SECONDS + timeout))
until done_yet; do
  if ((SECONDS >= deadline)); then dde_log "timed out after ${timeout}s"; break; fi
  if ((SECONDS - last >= 5)); then last=$SECONDS; dde_log "received $(consumer_stat received || echo 0) so far"; fi
  sleep 0.5
done
received=$(consumer_stat received); received=${received:-0}
first=$(consumer_stat first_us); last_us=$(consumer_stat last_us)
rate=$(awk -v n="$received" -v a="${first:-0}" -v b="${last_us:-0}" \
  'BEGIN { s = (b - a) / 1e6; if (s > 0) printf "%.0f", n / s; else print 0 }')
seconds=$(awk -v a="${first:-0}" -v b="${last_us:-0}" 'BEGIN { printf "%.2f", (b - a) / 1e6 }')
echo "DDE demo: $received of $messages messages producer -> dde-mqs -> RabbitMQ -> consumer ($mode, prefetch $prefetch, $consumers consumers) in ${seconds}s: $rate msg/s"
[[ $received -ge $messages ]]
