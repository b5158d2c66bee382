#!/usr/bin/env bash
# Starts or stops one DDE daemon on this node, in the background, with its flags.
#   daemon.sh start registry|mqs|activator [--run-dir D] [-- DAEMON FLAGS...]
#   daemon.sh stop registry|mqs|activator [--run-dir D]
#   daemon.sh status registry|mqs|activator [--run-dir D]
# Logs and pid files go to D (default /var/run/dde when root, else build/run). Examples:
#   daemon.sh start mqs -- --broker-host 10.0.0.5 --prefetch 8
#   daemon.sh start activator -- --registry ws://10.0.0.1:8000/registry --listen 0.0.0.0
# For real cluster nodes, deploy/systemd/ has unit files for the same daemons.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib.sh"

usage() { sed -n '2,10s/^# \{0,1\}//p' "$0"; exit 2; }
command="${1:-}" daemon="${2:-}"
[[ -n $command && -n $daemon ]] || usage
shift 2
build="${DDE_BUILD_DIR:-$DDE_ROOT/build}"
run_dir=$([[ $(id -u) -eq 0 ]] && echo /var/run/dde || echo "$build/run")
flags=()
while (($#)); do
  case "$1" in
    --run-dir) run_dir="$2"; shift 2 ;;
    --) shift; flags=("$@"); break ;;
    -h|--help) usage ;;
    *) dde_die "unknown argument $1 (daemon flags go after --)" ;;
  esac
done
case "$daemon" in
  registry|mqs|activator) binary="$build/bin/dde-$daemon" ;;
  *) dde_die "unknown daemon \"$daemon\": registry, mqs or activator" ;;
esac

case "$command" in
  start)
    dde_daemon_start "$run_dir" "$daemon" "$binary" "${flags[@]}"
    dde_log "dde-$daemon pid $(dde_daemon_pid "$run_dir" "$daemon"), log $run_dir/$daemon.log" ;;
  stop) dde_daemon_stop "$run_dir" "$daemon" ;;
  status)
    if dde_daemon_alive "$run_dir" "$daemon"; then echo "dde-$daemon running pid $(dde_daemon_pid "$run_dir" "$daemon")"
    else echo "dde-$daemon stopped"; exit 3; fi ;;
  *) usage ;;
esac
