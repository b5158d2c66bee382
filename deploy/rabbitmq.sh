#!/usr/bin/env bash
# A throw-away RabbitMQ node for demos and benchmarks, everything under one directory.
#   rabbitmq.sh start --dir D --port P [--name N]   start (or keep) the node (named dde-P unless --name),
#                                                    wait until AMQP logins work
#   rabbitmq.sh stop --dir D                         stop exactly the node started in D
#   rabbitmq.sh status --dir D                       exit 0 and print details when running, else exit 3
#   rabbitmq.sh ctl --dir D -- ARGS...               rabbitmqctl ARGS against the node started in D
# D/node.env records node name, ports and paths; restarting a stopped D keeps data, name and ports.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,8s/^# \{0,1\}//p' "$0"; exit "${1:-2}"; }

command="${1:-}"
case "$command" in -h|--help) usage 0 ;; "") usage ;; esac
shift
dir="" port="" name="" ctl_args=()
while (($#)); do
  case "$1" in
    --) shift; ctl_args=("$@"); break ;;
    --dir) dir="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    -h|--help) usage 0 ;;
    *) dde_die "unknown argument $1" ;;
  esac
done
[[ -n $dir ]] || dde_die "--dir is required"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
env_file="$dir/node.env" pid_file="$dir/server.pid"

# Exports the node's environment (the same recipe as tests/support/rabbitmq_node.cpp).
load_env() {
  [[ -r $env_file ]] || return 1
  # Written by write_env below.
  set -a
  # shellcheck disable=SC1090
  source "$env_file"
  set +a
}

node_pid() { [[ -r $pid_file ]] && cat "$pid_file"; }

# True when the recorded pid is alive and is the Erlang VM of our node (not a recycled pid).
running() {
  local pid; pid=$(node_pid) || return 1
  dde_pid_alive "$pid" || return 1
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == beam.smp ]] || return 1
  local environ; environ=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null) || return 1
  grep -qx "RABBITMQ_NODENAME=$RABBITMQ_NODENAME" <<<"$environ"
}

# An AMQP login plus one harmless RPC (deleting a queue that does not exist is a no-op).
amqp_ready() {
  dde_port_open "$RABBITMQ_NODE_PORT" &&
    timeout 5 amqp-delete-queue --url "amqp://guest:guest@127.0.0.1:$RABBITMQ_NODE_PORT" \
      -q dde.readiness-probe >/dev/null 2>&1
}

vm_pid=""
vm_gone() { ! dde_pid_alive "$vm_pid"; }
boot_finished() { vm_gone || amqp_ready; }
port_closed() { ! dde_port_open "$RABBITMQ_NODE_PORT"; }

ctl() {
  # The CLI is an Erlang node too; give it its own free distribution port.
  local cli_port; cli_port=$(dde_free_port)
  RABBITMQ_CTL_DIST_PORT_MIN=$cli_port RABBITMQ_CTL_DIST_PORT_MAX=$cli_port \
    "$DDE_RABBITMQCTL" -n "$RABBITMQ_NODENAME" "$@"
}

write_env() {
  local node_port=$1 dist_port=$2 node_name=$3
  mkdir -p "$dir/home" "$dir/log" "$dir/mnesia"
  echo "listeners.tcp.1 = 127.0.0.1:$node_port" >"$dir/rabbitmq.conf"
  echo "[]." >"$dir/enabled_plugins"
  : >"$dir/rabbitmq-env.conf"
  cat >"$env_file" <<ENV
RABBITMQ_NODENAME='$node_name@localhost'
RABBITMQ_NODE_PORT='$node_port'
RABBITMQ_DIST_PORT='$dist_port'
RABBITMQ_MNESIA_BASE='$dir/mnesia'
RABBITMQ_LOG_BASE='$dir/log'
RABBITMQ_PID_FILE='$dir/rabbitmq.pid'
RABBITMQ_CONFIG_FILE='$dir/rabbitmq.conf'
RABBITMQ_ENABLED_PLUGINS_FILE='$dir/enabled_plugins'
RABBITMQ_CONF_ENV_FILE='$dir/rabbitmq-env.conf'
RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='-kernel inet_dist_use_interface {127,0,0,1}'
RABBITMQ_ALLOW_INPUT='true'
ERL_CRASH_DUMP='$dir/erl_crash.dump'
HOME='$dir/home'
ENV
}

start() {
  [[ -n $port ]] || dde_die "--port is required"
  if load_env; then
    running && { dde_log "already running: $RABBITMQ_NODENAME on port $RABBITMQ_NODE_PORT"; return 0; }
    # A restart keeps node name and distribution port, so the data directory stays valid.
    [[ -n $name && "$name@localhost" != "$RABBITMQ_NODENAME" ]] &&
      dde_die "$dir holds node $RABBITMQ_NODENAME; use another --dir for --name $name"
    write_env "$port" "$RABBITMQ_DIST_PORT" "${RABBITMQ_NODENAME%@localhost}"
  else
    local dist_port
    while dist_port=$(dde_free_port) && [[ $dist_port == "$port" ]]; do :; done
    # Named by its port unless told: two nodes on one machine (a demo and a test run, say) never
    # share a node name, which Erlang refuses.
    write_env "$port" "$dist_port" "${name:-dde-$port}"
  fi
  load_env
  dde_port_open "$port" && dde_die "port $port is already in use"
  dde_log "starting $RABBITMQ_NODENAME on 127.0.0.1:$port (dist $RABBITMQ_DIST_PORT) in $dir"
  # RABBITMQ_ALLOW_INPUT makes the script exec the VM, so the inner $! is beam.smp itself. A small
  # bash in its own session (setsid) waits for it, so the VM is reaped when it exits instead of
  # lingering as a zombie; it also records the exit status.
  rm -f "$pid_file" "$dir/exit-status"
  # The single-quoted script is expanded by the inner bash.
  # shellcheck disable=SC2016
  setsid bash -c '"$0" -noinput & echo $! >"$1"; wait $!; echo $? >"$2"' \
    "$DDE_RABBITMQ_SERVER" "$pid_file" "$dir/exit-status" >>"$dir/server.log" 2>&1 </dev/null &
  dde_wait_until 10 test -s "$pid_file" || dde_die "the server did not start; see $dir/server.log"
  vm_pid=$(node_pid)
  if ! dde_wait_until 90 boot_finished || ! running; then
    dde_log "node did not come up; tail of $dir/server.log and the node log:"
    tail -n 20 "$dir/server.log" "$dir/log/$RABBITMQ_NODENAME.log" >&2 2>/dev/null || true
    kill -KILL "$(node_pid)" 2>/dev/null || true
    exit 1
  fi
  dde_log "ready after ${SECONDS}s: amqp://guest:guest@127.0.0.1:$port"
}

stop() {
  load_env || { dde_log "nothing was started in $dir"; return 0; }
  running || { dde_log "$RABBITMQ_NODENAME is not running"; rm -f "$pid_file"; return 0; }
  vm_pid=$(node_pid)
  dde_log "stopping $RABBITMQ_NODENAME (pid $vm_pid)"
  ctl stop >>"$dir/rabbitmqctl.log" 2>&1 || dde_log "rabbitmqctl stop failed; see $dir/rabbitmqctl.log"
  if ! dde_wait_until 30 vm_gone; then
    dde_log "still running; SIGTERM, then SIGKILL"
    kill -TERM "$vm_pid" 2>/dev/null || true
    dde_wait_until 10 vm_gone || kill -KILL "$vm_pid" 2>/dev/null || true
  fi
  dde_wait_until 10 port_closed || dde_log "warning: port $RABBITMQ_NODE_PORT still open"
  rm -f "$pid_file"
  dde_log "stopped"
}

status() {
  if load_env && running; then
    echo "running node=$RABBITMQ_NODENAME port=$RABBITMQ_NODE_PORT dist_port=$RABBITMQ_DIST_PORT pid=$(node_pid) dir=$dir"
  else
    echo "stopped dir=$dir"
    exit 3
  fi
}

case "$command" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  ctl) load_env || dde_die "nothing was started in $dir"; ctl "${ctl_args[@]}" ;;
  *) usage ;;
esac
