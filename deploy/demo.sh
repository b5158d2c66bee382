#!/usr/bin/env bash
# The first command: installs the Debian packages the daemons need (only those), builds the daemons,
# ddectl, the two workers it deploys and the raw baseline (no tests), starts a throw-away local cluster
# (deploy/cluster.sh: RabbitMQ, dde-registry, dde-mqs, dde-activator), deploys a consumer and a
# producer pool through the registry's REST API, moves messages producer -> MQS -> RabbitMQ -> consumer,
# runs a plain rabbitmq-c client through the same broker for comparison, stops everything and prints both.
#   demo.sh [--messages N] [--mode at-least-once|at-most-once] [--prefetch K] [--consumers C] [--timeout S]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

messages=200000 mode=at-least-once prefetch=64 consumers=2 timeout=300
while (($#)); do
  case "$1" in
    --messages) messages="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --prefetch) prefetch="$2"; shift 2 ;;
    --consumers) consumers="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    -h|--help) sed -n '2,7s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) dde_die "unknown argument $1 (see --help)" ;;
  esac
done
[[ $mode == at-least-once || $mode == at-most-once ]] || dde_die "--mode must be at-least-once or at-most-once"

started=$SECONDS
phase_start=$SECONDS
# One line as each phase ends, with its own and the total time.
phase_done() {
  dde_log "$1 done in $((SECONDS - phase_start)) s ($((SECONDS - started)) s in all)"
  phase_start=$SECONDS
}

dde_log "phase 1/4: Debian packages"
"$here/install-deps.sh" demo
phase_done "packages"

build="${DDE_BUILD_DIR:-$DDE_ROOT/build}"
dde_log "phase 2/4: building the daemons, ddectl and the workers in $build (log: $build/demo-build.log)"
mkdir -p "$build"
# The configure step keeps DDE_BUILD_TESTS as the cache has it (off unless deploy/test.sh turned it on);
# only the targets the demo runs are built. One progress line per tenth of the way.
set +e
DDE_BUILD_TARGETS="dde-registry dde-mqs dde-activator dde-isolate-system ddectl producer consumer dde-raw-amqp" \
  "$here/build.sh" 2>&1 | tee "$build/demo-build.log" | {
  shown=-10
  while IFS= read -r line; do
    # Ninja counts steps over every target ("[12/140]"), make per target ("[ 45%]").
    if [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]]; then
      percent=$((100 * BASH_REMATCH[1] / BASH_REMATCH[2]))
    elif [[ $line =~ ^\[\ *([0-9]+)%\] ]]; then
      percent=${BASH_REMATCH[1]}
    else
      continue
    fi
    if ((percent >= shown + 10)); then
      shown=$percent
      dde_log "build ${percent}% ($((SECONDS - phase_start)) s)"
    fi
  done
}
build_status=${PIPESTATUS[0]}
set -e
((build_status == 0)) || { tail -30 "$build/demo-build.log" >&2; dde_die "the build failed; see $build/demo-build.log"; }
phase_done "build"

run="$build/demo-run"
rm -rf "$run"
mkdir -p "$run/stats"
dde_log "phase 3/4: starting a local cluster (RabbitMQ, dde-registry, dde-mqs, dde-activator) in $run/cluster"
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

registry=$("$here/cluster.sh" up "${cluster[@]}")
node=$(dde_first_node "$build/bin/ddectl" "$registry")
[[ -n $node ]] || dde_die "no node registered with $registry"
mqs="ws://127.0.0.1:$mqs_port/mqs"
rabbitmq_port=$(cat "$run/cluster/rabbitmq.port")
dde_log "registry $registry, node $node, MQS $mqs (prefetch $prefetch), RabbitMQ on port $rabbitmq_port"
phase_done "cluster"

dde_log "phase 4/4: $messages messages of 64 bytes, $mode, $consumers consumers"
paths=$(printf '"localhost",%.0s' $(seq "$consumers")); paths="[${paths%,}]"
workers="$build/lib/workers"
# Deployed through the registry's REST API (thesis 3.2.2), as a user would with curl or ddectl.
dde_deploy_pool "$build/bin/ddectl" "$registry" "$node" "$mqs" demo consumer "$workers/libconsumer.so" "$paths" \
  "$mode" "\"credits\": $prefetch, \"args\": {\"stats_dir\": \"$run/stats\"}"
dde_deploy_pool "$build/bin/ddectl" "$registry" "$node" "$mqs" demo producer "$workers/libproducer.so" '["localhost"]' \
  "$mode" "\"args\": {\"to\": \"demo/consumer\", \"count\": $messages, \"size\": 64}"
dde_log "deployed demo/consumer ($consumers workers) and demo/producer over REST"

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

# The same messages through the same broker with no framework: one rabbitmq-c publisher and $consumers
# consuming connections at once, with the queue kind, persistence, confirms and prefetch the MQS uses
# for this mode, acking with `multiple` (the fastest a plain client consumes).
raw=(--port "$rabbitmq_port" --queue demo.raw --size 64 --count "$messages")
if [[ $mode == at-least-once ]]; then
  raw+=(--queue-type quorum)
  produce_flags=(--persistent --confirm-window 1000)
else
  raw+=(--queue-type transient)
  produce_flags=()
fi
"$build/bin/dde-raw-amqp" declare "${raw[@]}" >/dev/null
"$build/bin/dde-raw-amqp" produce "${raw[@]}" "${produce_flags[@]}" >"$run/raw-produce.txt" &
raw_producer=$!
raw_line=$("$build/bin/dde-raw-amqp" consume "${raw[@]}" --prefetch "$prefetch" --multiple-ack \
  --connections "$consumers" --idle-timeout 60) || raw_line=""
wait "$raw_producer" || true
raw_rate=$(grep -o 'rate=[0-9]*' <<<"$raw_line" | head -1 | cut -d= -f2)
phase_done "messages"

echo "DDE demo: $received of $messages messages producer -> dde-mqs -> RabbitMQ -> consumer ($mode, prefetch $prefetch, $consumers consumers) in ${seconds}s: $rate msg/s"
echo "raw rabbitmq-c through the same broker (same queue kind, $consumers consumers acking with multiple): ${raw_rate:-?} msg/s"
echo "total time: $((SECONDS - started)) s"
[[ $received -ge $messages ]]
