#!/usr/bin/env bash
# A throw-away RabbitMQ node, or a cluster of them, for demos, tests and benchmarks, everything under
# one directory.
#   rabbitmq.sh start --dir D --port P [--name N]   start (or keep) the node (named dde-P unless --name),
#                                                    wait until AMQP logins work
#   rabbitmq.sh stop --dir D                         stop exactly the node started in D
#   rabbitmq.sh status --dir D                       exit 0 and print details when running, else exit 3
#   rabbitmq.sh ctl --dir D -- ARGS...               rabbitmqctl ARGS against the node started in D
# D/node.env records node name, ports and paths; restarting a stopped D keeps data, name and ports.
#
#   rabbitmq.sh cluster --dir D --port P [--nodes 3] start (or keep) N nodes in D/node-1 .. D/node-N on
#                                                    AMQP ports P, P+1, ... (a free port instead of each
#                                                    one taken), named dde-PORT, sharing the Erlang
#                                                    cookie D/home/.erlang.cookie; join nodes 2..N to
#                                                    node 1; wait until node 1 sees all N running
#   rabbitmq.sh start --dir D [--node I]             start the cluster's nodes again, or only node I
#                                                    (its data remembers the cluster: it rejoins)
#   rabbitmq.sh kill --dir D [--node I]              kill -9 node I's VM (a single node's D: no --node)
#   stop, status and ctl take a cluster's D too: stop stops every node; status prints one line per
#   node and exits 3 unless all run; ctl --dir D [--node I] -- ARGS talks to node I (default 1).
# D/cluster.env records the nodes' names, AMQP ports and dirs; restarting a stopped cluster keeps
# data, names and ports (its --port is then not needed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,22s/^# \{0,1\}//p' "$0"; exit "${1:-2}"; }

command="${1:-}"
case "$command" in -h|--help) usage 0 ;; "") usage ;; esac
shift
dir="" port="" name="" nodes_wanted="" node="" ctl_args=()
while (($#)); do
  case "$1" in
    --) shift; ctl_args=("$@"); break ;;
    --dir) dir="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --name) name="$2"; shift 2 ;;
    --nodes) nodes_wanted="$2"; shift 2 ;;
    --node) node="$2"; shift 2 ;;
    -h|--help) usage 0 ;;
    *) dde_die "unknown argument $1" ;;
  esac
done
[[ -n $dir ]] || dde_die "--dir is required"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
env_file="$dir/node.env" pid_file="$dir/server.pid"
cluster_dir="$dir" cluster_file="$dir/cluster.env"

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
  # The CLI is an Erlang node too; give it its own free distribution port. Its schedulers do not
  # busy-wait (the server's already do not): on 2 cores beside two busy loops that took a call from
  # 8-13 s to 3-4 s.
  local cli_port; cli_port=$(dde_free_port)
  RABBITMQ_CTL_DIST_PORT_MIN=$cli_port RABBITMQ_CTL_DIST_PORT_MAX=$cli_port \
    RABBITMQ_CTL_ERL_ARGS="+sbwt none +sbwtdcpu none +sbwtdio none" \
    "$DDE_RABBITMQCTL" -n "$RABBITMQ_NODENAME" "$@"
}

write_env() {
  local node_port=$1 dist_port=$2 node_name=$3 home=$4
  mkdir -p "$home" "$dir/log" "$dir/mnesia"
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
HOME='$home'
ENV
}

start() {
  [[ -n $port ]] || dde_die "--port is required"
  if load_env; then
    running && { dde_log "already running: $RABBITMQ_NODENAME on port $RABBITMQ_NODE_PORT"; return 0; }
    # A restart keeps node name and distribution port, so the data directory stays valid.
    [[ -n $name && "$name@localhost" != "$RABBITMQ_NODENAME" ]] &&
      dde_die "$dir holds node $RABBITMQ_NODENAME; use another --dir for --name $name"
    write_env "$port" "$RABBITMQ_DIST_PORT" "${RABBITMQ_NODENAME%@localhost}" "$HOME"
  else
    local dist_port
    while dist_port=$(dde_free_port) && [[ $dist_port == "$port" ]]; do :; done
    # Named by its port unless told: two nodes on one machine (a demo and a test run, say) never
    # share a node name, which Erlang refuses.
    write_env "$port" "$dist_port" "${name:-dde-$port}" "$dir/home"
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

kill_node() {
  load_env || dde_die "nothing was started in $dir"
  running || { dde_log "$RABBITMQ_NODENAME is not running"; return 0; }
  vm_pid=$(node_pid)
  dde_log "killing $RABBITMQ_NODENAME (pid $vm_pid) with SIGKILL"
  kill -KILL "$vm_pid" 2>/dev/null || true
  dde_wait_until 10 vm_gone || dde_die "pid $vm_pid outlived SIGKILL"
  dde_wait_until 10 port_closed || dde_log "warning: port $RABBITMQ_NODE_PORT still open"
  rm -f "$pid_file"
}

ctl_command() { load_env || dde_die "nothing was started in $dir"; ctl "${ctl_args[@]}"; }

# --- A cluster: D/node-I are single-node dirs as above, D/cluster.env lists them. ---

is_cluster() { [[ -r $cluster_file ]]; }

# Reads D/cluster.env: the arrays cluster_names, cluster_ports and cluster_dirs, node I at I-1.
load_cluster() {
  # shellcheck disable=SC1090
  source "$cluster_file"
  nodes=${#cluster_dirs[@]}
}

# Runs "$@" (one of the single-node functions above) for cluster node $1, in a subshell: the node's
# environment (load_env) and a dde_die stay there.
on_node() { (at_node "$@"); }
at_node() {
  local i=$1; shift
  local dir=${cluster_dirs[i - 1]} port=${cluster_ports[i - 1]} name=${cluster_names[i - 1]%@localhost}
  local env_file="$dir/node.env" pid_file="$dir/server.pid"
  "$@"
}

# A free port that none of the words in $1 is.
fresh_port() {
  local candidate
  while candidate=$(dde_free_port) && [[ " $1 " == *" $candidate "* ]]; do :; done
  echo "$candidate"
}

write_node_env() { mkdir -p "$dir"; write_env "$port" "$1" "$name" "$2"; }

# Chooses the ports and names of a new cluster and writes the cookie, each node's node.env and
# D/cluster.env.
plan_cluster() {
  [[ -n $port ]] || dde_die "--port is required"
  [[ -z $name ]] || dde_die "--name is for a single node; cluster nodes are named dde-PORT"
  [[ -r $env_file ]] && dde_die "$dir holds a single node; use another --dir for a cluster"
  local i candidate used="" dist_ports=()
  cluster_names=() cluster_ports=() cluster_dirs=()
  for ((i = 1; i <= nodes; i++)); do
    candidate=$((port + i - 1))
    if ((candidate > 65535)) || [[ " $used " == *" $candidate "* ]] || dde_port_open "$candidate"; then
      candidate=$(fresh_port "$used")
    fi
    used+=" $candidate"
    cluster_ports+=("$candidate") cluster_names+=("dde-$candidate@localhost") cluster_dirs+=("$dir/node-$i")
  done
  # Distribution ports last, so that none is a node's AMQP port.
  for ((i = 1; i <= nodes; i++)); do
    candidate=$(fresh_port "$used")
    used+=" $candidate"
    dist_ports+=("$candidate")
  done
  # Every node and every rabbitmqctl call runs with HOME=D/home, so all read this one cookie.
  mkdir -p "$dir/home"
  if [[ ! -s $dir/home/.erlang.cookie ]]; then
    (umask 077 && head -c 15 /dev/urandom | base32 | tr -d '=\n' >"$dir/home/.erlang.cookie")
    chmod 400 "$dir/home/.erlang.cookie"  # Erlang refuses a cookie others can read
  fi
  for ((i = 1; i <= nodes; i++)); do
    on_node "$i" write_node_env "${dist_ports[i - 1]}" "$cluster_dir/home"
  done
  {
    echo "# Written by rabbitmq.sh cluster; node I is element I-1 of each array."
    echo "cluster_names=($(printf '%q ' "${cluster_names[@]}"))"
    echo "cluster_ports=($(printf '%q ' "${cluster_ports[@]}"))"
    echo "cluster_dirs=($(printf '%q ' "${cluster_dirs[@]}"))"
  } >"$cluster_file"
}

# Starts every node that is not running, all at once: nodes of a stopped cluster wait at boot for
# the node that stopped last, whichever it was.
start_nodes() {
  local i pids=() failed=0
  for ((i = 1; i <= nodes; i++)); do
    on_node "$i" start &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || failed=1; done
  ((failed == 0)) || dde_die "not every node started; \`$(basename "$0") stop --dir $cluster_dir\` stops the others"
}

# The node names in list $1 ("running_nodes", "disk_nodes") of `rabbitmqctl cluster_status
# --formatter json` on stdin, one a line.
status_nodes() { { grep -o "\"$1\":\[[^]]*\]" | grep -o '"[^"]*@[^"]*"' | tr -d '"'; } || true; }

# True when node 1's cluster_status lists every node of the cluster as running.
all_running() {
  local status listed member
  status=$(on_node 1 node1_cluster_status) || return 1
  listed=$(status_nodes running_nodes <<<"$status")
  for member in "${cluster_names[@]}"; do grep -qx "$member" <<<"$listed" || return 1; done
}
node1_cluster_status() { load_env && ctl -q cluster_status --formatter json 2>/dev/null; }

# Joins node I to node 1: stop_app, join_cluster and start_app in one rabbitmqctl eval, since each
# rabbitmqctl call boots an Erlang VM for the CLI (~1.3 CPU-seconds; 3-4 s on 2 cores beside two
# busy loops).
join_node() {
  dde_log "joining ${cluster_names[$1 - 1]} to ${cluster_names[0]}"
  on_node "$1" join_seed "${cluster_names[0]}"
}
join_seed() {
  load_env
  local out="" answer
  # The eval's answer is its last line; log lines of the node may come before it.
  out=$(ctl -q eval "ok = rabbit:stop(), Joined = rabbit_mnesia:join_cluster('$1', disc), ok = rabbit:start(), Joined." 2>&1) ||
    true
  echo "$out" >>"$dir/rabbitmqctl.log"
  answer=$(tail -n 1 <<<"$out")
  [[ $answer == ok || $answer == "{ok,already_member}" ]] ||
    dde_die "$RABBITMQ_NODENAME did not join $1: $answer (see $dir/rabbitmqctl.log)"
}

cluster_up() {
  [[ -z $nodes_wanted || $nodes_wanted =~ ^[1-9][0-9]*$ ]] || dde_die "--nodes wants a number from 1, not $nodes_wanted"
  local i fresh="" status members=""
  if is_cluster; then
    [[ -z $nodes_wanted || $nodes_wanted == "$nodes" ]] ||
      dde_die "$dir holds a $nodes-node cluster; use another --dir for --nodes $nodes_wanted"
  else
    nodes=${nodes_wanted:-3}
    plan_cluster
    fresh=yes
  fi
  start_nodes
  # Nodes of a new cluster are no members yet; a started one asks node 1 (a failed join is retried).
  if [[ -z $fresh ]]; then
    status=$(on_node 1 node1_cluster_status) || dde_die "rabbitmqctl cluster_status on node 1 failed"
    members=$(status_nodes disk_nodes <<<"$status")
  fi
  for ((i = 2; i <= nodes; i++)); do
    grep -qx "${cluster_names[i - 1]}" <<<"$members" || join_node "$i"
  done
  dde_wait_until 60 all_running ||
    dde_die "node 1 does not see all $nodes nodes running; see the logs under $dir/node-*/log"
  dde_log "cluster of $nodes ready after ${SECONDS}s: AMQP ports ${cluster_ports[*]}"
}

# Node I of the cluster, from --node, checked.
chosen_node() {
  local default=$1
  node=${node:-$default}
  [[ -n $node ]] || dde_die "$dir holds a cluster: say which node with --node I"
  if [[ ! $node =~ ^[1-9][0-9]*$ ]] || ((node > nodes)); then dde_die "--node wants 1 to $nodes, not $node"; fi
}

cluster_stop() {
  local i pids=()
  for ((i = 1; i <= nodes; i++)); do
    on_node "$i" stop &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || true; done
}

cluster_status() {
  local i all=0
  for ((i = 1; i <= nodes; i++)); do on_node "$i" status || all=3; done
  return $all
}

if is_cluster; then
  load_cluster
  case "$command" in
    cluster) cluster_up ;;
    start) if [[ -n $node ]]; then chosen_node ""; on_node "$node" start; else cluster_up; fi ;;
    stop) cluster_stop ;;
    status) cluster_status ;;
    ctl) chosen_node 1; on_node "$node" ctl_command ;;
    kill) chosen_node ""; on_node "$node" kill_node ;;
    *) usage ;;
  esac
  exit
fi
[[ -z $node ]] || dde_die "--node: $dir holds no cluster"
case "$command" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  ctl) ctl_command ;;
  kill) kill_node ;;
  cluster) cluster_up ;;
  *) usage ;;
esac
