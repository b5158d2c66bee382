#!/usr/bin/env bash
# A local DDE cluster on loopback: a throw-away RabbitMQ node (or cluster), dde-registry, dde-mqs and
# one dde-activator, each in the background with its log and pid under --dir (default build/cluster).
#   cluster.sh up [--dir D] [--registry-port 8000] [--mqs-port 42043] [--activator-port 42042]
#                 [--rabbitmq-port P] [--rabbitmq-nodes 1] [--prefetch 1] [--name node-a]
#       starts what is not running, returns once every daemon is ready, prints the registry URL;
#       --rabbitmq-nodes N > 1: an N-node RabbitMQ cluster (rabbitmq.sh cluster, AMQP ports from P),
#       dde-mqs on node 1; a D keeps the RabbitMQ it was first brought up with
#   cluster.sh down [--dir D]      stops exactly what `up` started (activator first: its pools drain)
#   cluster.sh status [--dir D]    one line per daemon; exit 0 when all run, 3 otherwise
# Needs a build (deploy/build.sh); DDE_BUILD_DIR picks another build folder. DDE_REGISTRY_PORT,
# DDE_MQS_PORT and DDE_ACTIVATOR_PORT change the default ports. D/urls holds the URLs as shell
# assignments (registry=... mqs=... activator=... rabbitmq=... rabbitmq_nodes="..."), for
# `source D/urls`: rabbitmq is node 1's AMQP URL, rabbitmq_nodes every node's.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

usage() { sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 2; }
command="${1:-}"; [[ -n $command ]] || usage; shift
build="${DDE_BUILD_DIR:-$DDE_ROOT/build}"
dir="$build/cluster" rabbitmq_port="" rabbitmq_nodes="" prefetch=1
registry_port=${DDE_REGISTRY_PORT:-8000} mqs_port=${DDE_MQS_PORT:-42043} activator_port=${DDE_ACTIVATOR_PORT:-42042}
name=node-a
while (($#)); do
  case "$1" in
    --dir) dir="$2"; shift 2 ;;
    --registry-port) registry_port="$2"; shift 2 ;;
    --mqs-port) mqs_port="$2"; shift 2 ;;
    --activator-port) activator_port="$2"; shift 2 ;;
    --rabbitmq-port) rabbitmq_port="$2"; shift 2 ;;
    --rabbitmq-nodes) rabbitmq_nodes="$2"; shift 2 ;;
    --prefetch) prefetch="$2"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) dde_die "unknown argument $1 (see --help)" ;;
  esac
done
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

pid_of() { dde_daemon_pid "$dir" "$1"; }
alive() { dde_daemon_alive "$dir" "$1"; }
launch() { dde_daemon_start "$dir" "$@"; }

registry_ready() { curl -fsS "http://127.0.0.1:$registry_port/registry/health" >/dev/null 2>&1; }
node_registered() {  # the list read whole: `curl | grep -q` under pipefail fails if grep stops first
  local list
  list=$(curl -fsS "http://127.0.0.1:$registry_port/registry/system/list" 2>/dev/null) || return 1
  [[ $list == *"\"name\":\"$name\""* ]]
}

# Starts the RabbitMQ node, or cluster, under D/rabbitmq; sets amqp_ports (node 1 first).
start_rabbitmq() {
  local rmq="$dir/rabbitmq" cluster_env="$dir/rabbitmq/cluster.env"
  [[ -z $rabbitmq_nodes || $rabbitmq_nodes =~ ^[1-9][0-9]*$ ]] ||
    dde_die "--rabbitmq-nodes wants a number from 1, not $rabbitmq_nodes"
  if [[ -r $cluster_env || ${rabbitmq_nodes:-1} -gt 1 ]]; then
    local nodes=(); [[ -z $rabbitmq_nodes ]] || nodes=(--nodes "$rabbitmq_nodes")
    "$here/rabbitmq.sh" cluster --dir "$rmq" --port "$rabbitmq_port" "${nodes[@]}" >>"$dir/rabbitmq-script.log" 2>&1 ||
      dde_die "the RabbitMQ cluster did not start; see $dir/rabbitmq-script.log"
    # shellcheck disable=SC1090,SC2154  # cluster_ports: written by rabbitmq.sh cluster
    read -ra amqp_ports <<<"$(source "$cluster_env" && echo "${cluster_ports[@]}")"
  else
    "$here/rabbitmq.sh" start --dir "$rmq" --port "$rabbitmq_port" >>"$dir/rabbitmq-script.log" 2>&1 ||
      dde_die "RabbitMQ did not start; see $dir/rabbitmq-script.log"
    amqp_ports=("$rabbitmq_port")
  fi
}

up() {
  if [[ -z $rabbitmq_port ]]; then
    if [[ -r $dir/rabbitmq.port ]]; then rabbitmq_port=$(cat "$dir/rabbitmq.port"); else rabbitmq_port=$(dde_free_port); fi
  fi
  echo "$rabbitmq_port" >"$dir/rabbitmq.port"
  start_rabbitmq
  launch registry "$build/bin/dde-registry" --port "$registry_port"
  dde_wait_until 20 registry_ready || dde_die "dde-registry did not start; see $dir/registry.log"
  # DDE_MQS_ARGS / DDE_ACTIVATOR_ARGS: extra options, split on spaces (A/B runs, bench/profile).
  # DDE_MQS_WRAPPER: a command the MQS runs under (e.g. a script that execs valgrind on its arguments).
  # Every node of the RabbitMQ cluster: the MQS moves to the next when the one it is on goes away.
  local nodes; nodes=$(printf '127.0.0.1:%s,' "${amqp_ports[@]}")
  # shellcheck disable=SC2086
  launch mqs ${DDE_MQS_WRAPPER:-} "$build/bin/dde-mqs" --port "$mqs_port" --broker "amqp://guest@${nodes%,}/" --prefetch "$prefetch" ${DDE_MQS_ARGS:-}
  dde_wait_until 20 dde_port_open "$mqs_port" || dde_die "dde-mqs did not start; see $dir/mqs.log"
  mkdir -p "$dir/systems"
  # shellcheck disable=SC2086
  launch activator "$build/bin/dde-activator" --registry "ws://127.0.0.1:$registry_port/registry" \
    --port "$activator_port" --name "$name" --log-dir "$dir/systems" ${DDE_ACTIVATOR_ARGS:-}
  dde_wait_until 20 node_registered || dde_die "dde-activator did not register; see $dir/activator.log"
  local amqp_urls=("${amqp_ports[@]/#/amqp://127.0.0.1:}")
  echo "registry=http://127.0.0.1:$registry_port mqs=ws://127.0.0.1:$mqs_port/mqs" \
    "activator=ws://127.0.0.1:$activator_port/activator rabbitmq=${amqp_urls[0]}" \
    "rabbitmq_nodes=\"${amqp_urls[*]}\"" >"$dir/urls"
  echo "http://127.0.0.1:$registry_port"
}

stop_daemon() { dde_daemon_stop "$dir" "$1"; }

down() {
  stop_daemon activator
  stop_daemon mqs
  stop_daemon registry
  "$here/rabbitmq.sh" stop --dir "$dir/rabbitmq" >>"$dir/rabbitmq-script.log" 2>&1 || true
  dde_log "cluster in $dir stopped"
}

status() {
  local all=0 daemon
  for daemon in registry mqs activator; do
    if alive "$daemon"; then echo "$daemon running pid $(pid_of "$daemon")"; else echo "$daemon stopped"; all=3; fi
  done
  "$here/rabbitmq.sh" status --dir "$dir/rabbitmq" || all=3
  [[ -r $dir/urls ]] && cat "$dir/urls"
  return $all
}

case "$command" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) usage ;;
esac
