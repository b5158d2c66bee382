#!/usr/bin/env bash
# deploy/rabbitmq.sh cluster: three nodes joined; a quorum queue led by node 1 keeps every confirmed
# message when node 1 is killed (-9) and its leader moves; node 1 comes back into the cluster; a
# stopped cluster restarts with its names, ports and messages. Then deploy/cluster.sh runs DDE on
# that cluster (--rabbitmq-nodes 3), and `down` leaves no RabbitMQ VM behind.
# Usage: rabbitmq_cluster_script_test.sh BUILD_DIR
set -euo pipefail
build=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/deploy/lib.sh"
export DDE_BUILD_DIR=$build
rmq="$root/deploy/rabbitmq.sh" raw="$build/bin/dde-raw-amqp"
dir="$build/test-tmp/rabbitmq-cluster-script-$$"
cluster="$dir/cluster" rd="$dir/cluster/rabbitmq"  # cluster.sh's RabbitMQ dir, used first on its own
rm -rf "$dir"
mkdir -p "$dir"
fail() {
  echo "FAIL after ${SECONDS}s: $*" >&2
  "$root/deploy/cluster.sh" down --dir "$cluster" >/dev/null 2>&1 || true
  "$rmq" stop --dir "$rd" >/dev/null 2>&1 || true
  exit 1
}
pass() { echo "ok after ${SECONDS}s: $*"; }
[[ -x $raw ]] || fail "$raw is not built"

ctl() { local node=$1; shift; "$rmq" ctl --dir "$rd" --node "$node" -- -q "$@" 2>>"$dir/ctl.log"; }
# The node names in the JSON list "$1" of the JSON text $2, one a line.
json_names() {
  local list
  list=$(grep -o "\"$1\":\[[^]]*\]" <<<"$2") || return 0
  grep -o '"[^"]*@[^"]*"' <<<"$list" | tr -d '"' | sort
}
all_names() { printf '%s\n' "${cluster_names[@]}" | sort; }
# True when node $1's cluster_status lists every node of the cluster as running.
all_running() {
  local status; status=$(ctl "$1" cluster_status --formatter json) || return 1
  [[ $(json_names running_nodes "$status") == "$(all_names)" ]]
}
# Each rabbitmqctl call boots a VM for the CLI (10-15 s on a loaded 2-core machine): the checks
# below ask as little as they can.
# Queue q as node $1 sees it: "type members leader", members comma-separated, leader - when none.
queue_view() {
  local json type leader
  json=$(ctl "$1" list_queues name type members leader --formatter json) || return 1
  [[ $json == *'"name":"q"'* ]] || return 1
  type=$(grep -o '"type":"[^"]*"' <<<"$json" | cut -d'"' -f4) || return 1
  leader=$(grep -o '"leader":"[^"]*"' <<<"$json" | cut -d'"' -f4) || true
  echo "$type $(json_names members "$json" | paste -sd,) ${leader:--}"
}
# True when node $1 sees q led by a node other than $2; keeps what it saw in $view.
view=""
led_elsewhere() {
  view=$(queue_view "$1") || return 1
  [[ ${view##* } == *@* && ${view##* } != "$2" ]]
}
# True when node $1 sees q with a leader.
led() { led_elsewhere "$1" none; }
# beam.smp processes of this test (their environment names our dir), one pid a line.
test_vms() {
  local pid environ
  for pid in $(pgrep -x beam.smp || true); do
    environ=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null) || continue
    [[ $environ == *"RABBITMQ_MNESIA_BASE=$dir/"* ]] && echo "$pid"
  done
  return 0
}
queue=(--queue q --queue-type quorum --queue-arg x-queue-leader-locator=client-local)

# Three nodes, joined.
"$rmq" cluster --dir "$rd" --port "$(dde_free_port)" --nodes 3 || fail "rabbitmq.sh cluster failed"
cluster_names=() cluster_ports=()
# shellcheck source=/dev/null  # the arrays cluster_names, cluster_ports and cluster_dirs
source "$rd/cluster.env"
[[ ${#cluster_ports[@]} -eq 3 ]] || fail "cluster.env lists ${#cluster_ports[@]} nodes, not 3"
all_running 1 || fail "cluster_status on node 1 does not list the 3 nodes as running"
"$rmq" status --dir "$rd" >/dev/null || fail "status of the running cluster is not 0"
pass "3 nodes running"

# A quorum queue declared on node 1: client-local puts its leader there (balanced could put it on any
# node), so killing node 1 must move the leader.
"$raw" declare --port "${cluster_ports[0]}" "${queue[@]}" >/dev/null || fail "declaring q on node 1 failed"
dde_wait_until 30 led 1 || fail "q has no leader: $view"
[[ $view == "quorum $(all_names | paste -sd,) ${cluster_names[0]}" ]] ||
  fail "q is not a quorum queue on all 3 nodes led by node 1: $view"
"$raw" produce --port "${cluster_ports[0]}" "${queue[@]}" --count 1000 --confirm-window 100 --persistent \
  >/dev/null || fail "publishing 1000 confirmed messages on node 1 failed"
pass "quorum queue with members and leader: $view; 1000 messages confirmed"

# Node 1 killed: node 2 serves every message once a new leader is elected.
"$rmq" kill --dir "$rd" --node 1 || fail "rabbitmq.sh kill --node 1 failed"
status=0; "$rmq" status --dir "$rd" >/dev/null || status=$?
[[ $status -eq 3 ]] || fail "status with node 1 killed is $status, not 3"
dde_wait_until 60 led_elsewhere 2 "${cluster_names[0]}" || fail "q's leader did not move: $view"
got=$("$raw" consume --port "${cluster_ports[1]}" "${queue[@]}" --count 1000 --prefetch 64 --multiple-ack \
  --idle-timeout 30) || fail "consuming 1000 messages on node 2 failed: $got"
[[ $got == *" count=1000 "* ]] || fail "node 2 did not deliver 1000 messages: $got"
pass "node 1 killed, leader moved to ${view##* }, 1000 messages read on node 2"

# Node 1 back: it rejoins by itself.
"$rmq" start --dir "$rd" --node 1 || fail "rabbitmq.sh start --node 1 failed"
dde_wait_until 60 all_running 1 || fail "node 1 does not see the 3 nodes running after its restart"
pass "node 1 back, 3 nodes running"

# A stopped cluster restarts with its names, ports and messages.
"$raw" produce --port "${cluster_ports[2]}" "${queue[@]}" --count 10 --confirm-window 10 --persistent \
  >/dev/null || fail "publishing 10 confirmed messages on node 3 failed"
"$rmq" stop --dir "$rd" || fail "rabbitmq.sh stop failed"
status=0; "$rmq" status --dir "$rd" >/dev/null || status=$?
[[ $status -eq 3 ]] || fail "status after stop is $status, not 3"
vms=$(test_vms)
[[ -z $vms ]] || fail "beam.smp still running after stop: $vms"
pass "cluster stopped, no VM left"

# deploy/cluster.sh on it: up restarts the stopped cluster.
ports=(--registry-port "$(dde_free_port)" --mqs-port "$(dde_free_port)" --activator-port "$(dde_free_port)")
"$root/deploy/cluster.sh" up --dir "$cluster" --rabbitmq-nodes 3 "${ports[@]}" >/dev/null ||
  fail "cluster.sh up --rabbitmq-nodes 3 failed; see $cluster/rabbitmq-script.log"
urls=$(cat "$cluster/urls")
want="rabbitmq=amqp://127.0.0.1:${cluster_ports[0]} rabbitmq_nodes=\"amqp://127.0.0.1:${cluster_ports[0]}"
want+=" amqp://127.0.0.1:${cluster_ports[1]} amqp://127.0.0.1:${cluster_ports[2]}\""
[[ $urls == *"$want"* ]] || fail "urls do not name the cluster's nodes on their old ports: $urls"
dde_wait_until 60 led 3 || fail "q has no leader after the restart: $view"
got=$("$raw" consume --port "${cluster_ports[2]}" "${queue[@]}" --count 10 --idle-timeout 30) ||
  fail "consuming the 10 messages after the restart failed: $got"
[[ $got == *" count=10 "* ]] || fail "the restarted cluster did not keep the 10 messages: $got"
out=$("$root/deploy/cluster.sh" status --dir "$cluster") || fail "cluster.sh status is not 0: $out"
[[ $(grep -c '^running node=' <<<"$out") -eq 3 ]] || fail "cluster.sh status does not show 3 RabbitMQ nodes: $out"
pass "cluster.sh up on the restarted cluster, same ports, 10 messages kept"

"$root/deploy/cluster.sh" down --dir "$cluster" >/dev/null 2>&1 || fail "cluster.sh down failed"
status=0; "$root/deploy/cluster.sh" status --dir "$cluster" >/dev/null 2>&1 || status=$?
[[ $status -eq 3 ]] || fail "cluster.sh status after down is $status, not 3"
vms=$(test_vms)
[[ -z $vms ]] || fail "beam.smp still running after cluster.sh down: $vms"
echo "PASS: rabbitmq.sh cluster, kill and start of a node, cluster.sh --rabbitmq-nodes 3 (${SECONDS}s)"
