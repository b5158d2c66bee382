#!/usr/bin/env bash
# Shared by bench/profile's scripts that run a local cluster; sourced after deploy/lib.sh, with
# $root the checkout whose deploy/ runs it.

# profile_cluster_up OUT [deploy/cluster.sh options]: a local cluster under OUT/cluster on four free
# ports, taken down when the script exits. Sets rp mp ap rmq (registry, MQS, activator, RabbitMQ
# ports), cl (the cluster.sh arguments), registry (its URL) and beam (the broker's pid).
# shellcheck disable=SC2034,SC2154  # sets the caller's variables; $root is the caller's
profile_cluster_up() {
  local out=$1
  shift
  # Four distinct free ports at once (picked one by one, two could be the same).
  read -r rp mp ap rmq < <(python3 -c '
import socket
ss=[socket.socket() for _ in range(4)]
for s in ss: s.bind(("127.0.0.1",0))
print(*[s.getsockname()[1] for s in ss])')
  cl=(--dir "$out/cluster" "$@" --registry-port "$rp" --mqs-port "$mp" --activator-port "$ap" --rabbitmq-port "$rmq")
  trap '$root/deploy/cluster.sh down "${cl[@]}" >/dev/null 2>&1' EXIT
  registry=$("$root/deploy/cluster.sh" up "${cl[@]}") || return 1
  beam=$(pgrep -f "beam.smp.*$out/cluster" | head -1)
}

# ms run and ms waited on a run queue by every thread of each pid in $@ (threads gone meanwhile are
# not counted: read it for daemons that keep their threads).
sched() { for p in "$@"; do cat /proc/"$p"/task/*/schedstat 2>/dev/null | awk '{r+=$1; w+=$2} END{printf "%d %d ", r/1e6, w/1e6}'; done; }

# "name ran/waited" for each process between two sched readings: sched_delta "NAMES" "$s0" "$s1".
sched_delta() {
  local -a names a b
  local i out=""
  read -r -a names <<<"$1"
  read -r -a a <<<"$2"
  read -r -a b <<<"$3"
  for i in "${!names[@]}"; do
    out+="${names[$i]} ran $((b[2*i]-a[2*i])) ms waited $((b[2*i+1]-a[2*i+1])) ms; "
  done
  echo "$out"
}

# profile_place OUT: PIN="mqs:0 host:1" keeps each named process's threads on those CPUs (broker, mqs,
# host: the hosts through their activator, whose children inherit it), BATCH="broker mqs host" gives
# their threads SCHED_BATCH (no wake-up preemption). Call it before the raw client runs, so the
# broker is placed the same for both.
profile_place() {
  local out=$1 p
  place_pid() { case $1 in broker) echo "$beam" ;; mqs|activator) dde_daemon_pid "$out/cluster" "$1" ;; host) dde_daemon_pid "$out/cluster" activator ;; esac; }
  for p in ${PIN:-}; do taskset -a -p -c "${p#*:}" "$(place_pid "${p%%:*}")" >/dev/null || return 1; done
  for p in ${BATCH:-}; do chrt -a -b -p 0 "$(place_pid "$p")" >/dev/null || return 1; done
}
