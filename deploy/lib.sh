#!/usr/bin/env bash
# Shared helpers for the deploy scripts; sourced, not run. Sets DDE_ROOT to the repository root.
set -euo pipefail

DDE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export DDE_ROOT

# Called directly: the /usr/sbin wrappers switch to the rabbitmq user when run as root.
export DDE_RABBITMQ_SERVER=/usr/lib/rabbitmq/bin/rabbitmq-server
export DDE_RABBITMQCTL=/usr/lib/rabbitmq/bin/rabbitmqctl

dde_log() { echo "[$(basename "$0")] $*" >&2; }
dde_die() { dde_log "error: $*"; exit 1; }

# Runs "$@" as root: directly when we are root, else through sudo.
dde_as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else dde_die "need root (or sudo) for: $*"
  fi
}

# A TCP port on 127.0.0.1 that was free a moment ago.
dde_free_port() {
  # Debian's interpreter without site packages: about 20 ms, where a version manager's shim on PATH
  # can take most of a second, and this runs before every rabbitmqctl call.
  /usr/bin/python3 -S -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# True when something accepts TCP connections on 127.0.0.1:$1.
dde_port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# True while pid $1 exists and is not a zombie.
dde_pid_alive() {
  local state
  [[ -r /proc/$1/stat ]] || return 1
  state=$(sed -E 's/^[0-9]+ \(.*\) (.).*/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z && $state != X ]]
}

# Polls "$@" every 0.2 s until it succeeds or $1 seconds pass: dde_wait_until SECONDS CMD...
dde_wait_until() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

# Daemons under a run folder D: D/NAME.pid and D/NAME.log.
dde_daemon_pid() { [[ -r $1/$2.pid ]] && cat "$1/$2.pid"; }
dde_daemon_alive() { local pid; pid=$(dde_daemon_pid "$1" "$2") && dde_pid_alive "$pid"; }

# dde_daemon_start D NAME CMD...: starts CMD detached (its own session, so it outlives the script).
dde_daemon_start() {
  local dir=$1 name=$2; shift 2
  if dde_daemon_alive "$dir" "$name"; then dde_log "$name already running (pid $(dde_daemon_pid "$dir" "$name"))"; return 0; fi
  [[ -x $1 ]] || dde_die "$1 is not built; run deploy/build.sh"
  mkdir -p "$dir"
  setsid "$@" >>"$dir/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/$name.pid"
}

# dde_daemon_stop D NAME: SIGTERM (the daemon drains), SIGKILL after 40 s.
dde_daemon_stop() {
  local dir=$1 name=$2 pid
  pid=$(dde_daemon_pid "$dir" "$name") || return 0
  if dde_pid_alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    dde_wait_until 40 dde_pid_gone "$pid" ||
      { dde_log "$name (pid $pid) did not stop; killing it"; kill -KILL "$pid" 2>/dev/null || true; }
  fi
  rm -f "$dir/$name.pid"
}
dde_pid_gone() { ! dde_pid_alive "$1"; }

# The first node registered with a registry: dde_first_node DDECTL REGISTRY_URL
dde_first_node() {
  "$1" --registry "$2" -o json list | grep -o '"bootstrapperId": *"[0-9]*"' | head -1 | grep -o '[0-9][0-9]*'
}

# Deploys one pool through the registry's REST API (thesis 3.2.2), as a user would with ddectl:
#   dde_deploy_pool DDECTL REGISTRY_URL NODE MQS_URL SYSTEM POOL PLUGIN WORKERS_PATHS_JSON MODE EXTRA
# EXTRA: more members of the body, e.g. '"credits": 64, "args": {"stats_dir": "/tmp/s"}'.
dde_deploy_pool() {
  "$1" --registry "$2" deploy - >/dev/null <<JSON
{"bootstrapperId": "$3", "action": "action.addIsolate", "messageQueuingSystemServer": "$4",
 "isolateSystemName": "$5", "isolateName": "$6", "uri": "$7",
 "workersPaths": $8, "routerType": "roundRobin", "hotDeployment": false,
 "deliveryMode": "$9", ${10}}
JSON
}

# Installs tests/browser's playwright-core exactly as its package-lock.json says, when the installed
# version differs (it drives Debian's chromium and downloads no browser). Returns 1 when it cannot
# (no node, or npm ci failed); the caller says what that costs.
dde_browser_deps() {
  local dir="$DDE_ROOT/tests/browser" wanted installed
  command -v node >/dev/null 2>&1 || return 1
  wanted=$(node -p "require('$dir/package-lock.json').packages['node_modules/playwright-core'].version")
  installed=$(node -p "try { require('$dir/node_modules/playwright-core/package.json').version } catch { '' }")
  [[ $wanted == "$installed" ]] && return 0
  (cd "$dir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
}
