#!/usr/bin/env bash
# dde-mqs and dde-isolate-system run every thread SCHED_BATCH by default (the manual's "Scheduling"),
# SCHED_OTHER with --scheduling normal, and refuse another value with a clear error (exit 2). Their
# threads carry names (mqs-io-0, mqs-opener, host-io-0, ...) for top, perf and /proc.
# Neither needs its peer for this: the MQS is pointed at a closed broker port and the isolate system
# at a closed MQS port, and both keep retrying while their threads are read.
set -euo pipefail
bin=$1
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT
closed_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
status=0

# Starts "$@" with its log in $work/$name.log and waits (10 s at most) for the log line $ready, which
# comes once its threads have started. Sets $pid.
start() {
  local name=$1 ready=$2
  shift 2
  "$@" >"$work/$name.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do
    grep -q -- "$ready" "$work/$name.log" && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "$name did not log '$ready':" >&2
  cat "$work/$name.log" >&2
  return 1
}

# The scheduling policy of each thread of $1 (field 41 of /proc/<pid>/task/<tid>/stat: 0 SCHED_OTHER,
# 3 SCHED_BATCH), one a line. The command name (field 2) has no spaces here.
policies() { awk '{print $41}' /proc/"$1"/task/*/stat; }

# check NAME EXPECTED_POLICY THREAD_NAME...: every thread of $pid has that policy, there is more
# than one thread, and a thread has each of the names.
check() {
  local name=$1 want=$2 seen got names thread
  seen=$(policies "$pid")  # read once: the counts and the check describe the same threads
  names=$(cat /proc/"$pid"/task/*/comm)
  got=$(sort <<<"$seen" | uniq -c | tr -s ' \n' '  ')
  if [[ $(sort -u <<<"$seen") != "$want" || $(wc -l <<<"$seen") -lt 2 ]]; then
    echo "$name: thread policies (count policy) '$got', expected all $want" >&2
    status=1
  else
    echo "$name: $got"
  fi
  for thread in "${@:3}"; do
    grep -qx -- "$thread" <<<"$names" || { echo "$name: no thread named $thread among:" $names >&2; status=1; }
  done
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

for mode in default normal; do
  args=(); want=3
  [[ $mode == normal ]] && args=(--scheduling normal) && want=0
  start "mqs-$mode" "retrying in" "$bin/dde-mqs" --port 0 --broker-port "$closed_port" "${args[@]}"
  check "dde-mqs ($mode)" "$want" mqs-io-0 mqs-io-1 mqs-opener
  start "host-$mode" "unavailable" "$bin/dde-isolate-system" --name sched_test --mqs "ws://127.0.0.1:$closed_port/mqs" "${args[@]}"
  check "dde-isolate-system ($mode)" "$want" host-io-0 host-io-1
done

# A bad value: exit status 2 and the reason, from each daemon.
bad() {
  local err code=0
  err=$("$bin/$1" "${@:2}" 2>&1 >/dev/null) || code=$?
  if [[ $code != 2 || $err != *'unknown scheduling "fifo" (batch or normal)'* ]]; then
    echo "$* : exit $code, '$err'" >&2
    status=1
  fi
}
bad dde-mqs --scheduling fifo
bad dde-isolate-system --name x --scheduling fifo
bad dde-activator --host-scheduling fifo
exit "$status"
