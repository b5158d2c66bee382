#!/usr/bin/env bash
# How DDE's cost grows with the number of pools on one node and one MQS. For each N of --pools, on a
# fresh local cluster (deploy/cluster.sh on free ports): deploys N pools of the `consumer` sample
# worker (2 workers each, at-least-once) round-robin over --systems isolate systems scaleSys0.., one
# timed POST /registry/deploy per pool; once all run and settled, measures each daemon's idle CPU and
# resident memory, the broker's connections and channels, and the latency of GET /registry/system/{id}
# and GET /registry/status (the dashboard's snapshot). Prints a markdown table, the cost per extra
# pool and the targets, and writes them to D/summary.md. Exit 0 whether targets are met or not.
#   bench/pool-scale.sh [--pools 10,100,1000] [--systems 10] [--dir D]   (D default build/pool-scale)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=../deploy/lib.sh
source "$root/deploy/lib.sh"

build="${DDE_BUILD_DIR:-$DDE_ROOT/build}"
pools_arg=10,100,1000 systems=10 dir="$build/pool-scale"
while (($#)); do
  case "$1" in
    --pools) pools_arg="$2"; shift 2 ;;
    --systems) systems="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    -h|--help) sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) dde_die "unknown argument $1 (see --help)" ;;
  esac
done
IFS=, read -ra pool_counts <<<"$pools_arg"
for n in "${pool_counts[@]}" "$systems"; do [[ $n =~ ^[1-9][0-9]*$ ]] || dde_die "not a count: $n"; done
[[ -x $build/bin/dde-registry && -r $build/lib/workers/libconsumer.so ]] || dde_die "no build in $build"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
plugin="$build/lib/workers/libconsumer.so"
hz=$(getconf CLK_TCK)
settle=20 idle_span=30  # s: after every pool runs, then the idle CPU's span

current="" system_pids=()
# Stops the cluster under test, and any isolate system its activator left behind.
teardown() {
  [[ -n $current ]] || return 0
  "$root/deploy/cluster.sh" down --dir "$current" >/dev/null 2>&1 || true
  local pid
  for pid in "${system_pids[@]}"; do
    dde_pid_alive "$pid" && { dde_log "isolate system $pid outlived its activator; killing it"; kill -KILL "$pid" 2>/dev/null || true; }
  done
  current="" system_pids=()
}
trap teardown EXIT
trap 'exit 130' INT TERM

# $1 distinct free ports, none of the defaults another cluster may hold.
free_ports() {
  local taken=" 8000 42042 42043 5672 " port found=()
  while ((${#found[@]} < $1)); do
    port=$(dde_free_port)
    [[ $taken == *" $port "* ]] && continue
    taken+="$port " found+=("$port")
  done
  echo "${found[@]}"
}

# Reads JSON on stdin and prints what the Python expression $1 makes of it as `j`.
json() { /usr/bin/python3 -S -c "import json, sys; j = json.load(sys.stdin); print($1)"; }

# Milliseconds of a curl call, "$@" its arguments; fails unless the answer is 200.
timed_curl() {
  local out
  out=$(curl -sS --max-time 60 -o "$run/answer.json" -w '%{http_code} %{time_total}' "$@") || return 1
  [[ ${out%% *} == 200 ]] || { dde_log "HTTP ${out%% *}: $(head -c 300 "$run/answer.json")"; return 1; }
  awk -v t="${out#* }" 'BEGIN { printf "%.1f\n", t * 1000 }'
}

deploy_one() {
  timed_curl -X POST "$registry/registry/deploy" -d "{\"bootstrapperId\": \"$node\", \"action\": \"action.addIsolate\",
    \"messageQueuingSystemServer\": \"$mqs\", \"isolateSystemName\": \"$1\", \"isolateName\": \"$2\",
    \"uri\": \"$plugin\", \"workersPaths\": [\"localhost\", \"localhost\"], \"routerType\": \"roundRobin\",
    \"hotDeployment\": false, \"deliveryMode\": \"at-least-once\"}"
}

deploy_all() {
  local i ms step=$(((n + 9) / 10))
  : >"$run/deploy-ms.txt"
  for ((i = 0; i < n; i++)); do
    ms=$(deploy_one "scaleSys$((i % systems))" "c$i") || dde_die "deploying scaleSys$((i % systems))/c$i failed; logs in $run"
    echo "$ms" >>"$run/deploy-ms.txt"
    (((i + 1) % step == 0)) && dde_log "deployed $((i + 1))/$n pools (last took $ms ms)"
  done
  return 0
}

# Mean of lines $2..$3 of file $1.
mean_lines() { awk -v a="$2" -v b="$3" 'NR >= a && NR <= b { s += $1; k++ } END { printf "%.1f", s / k }' "$1"; }
max_of() { sort -n | tail -1; }
median_of() { sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Pools the registry reports running with both workers running.
running_pools() {
  curl -fsS --max-time 60 "$registry/registry/system/$node" 2>/dev/null |
    json 'sum(1 for ps in j.values() for p in ps if p.get("poolState") == "running"
              and [w.get("state") for w in p.get("workers", [])] == ["running"] * 2)'
}
all_running() { [[ $(running_pools) == "$n" ]]; }

ticks() {  # utime + stime of every pid in $@, in clock ticks
  local pid stat sum=0 f
  for pid in "$@"; do
    stat=$(<"/proc/$pid/stat") || continue
    read -ra f <<<"${stat##*) }"
    sum=$((sum + f[11] + f[12]))
  done
  echo "$sum"
}
rss_kib() {  # VmRSS of every pid in $@, summed
  local pid sum=0 kib
  for pid in "$@"; do
    kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || kib=0
    sum=$((sum + ${kib:-0}))
  done
  echo "$sum"
}

# Idle CPU over $idle_span s as % of one core, for each group: mqs registry activator systems rabbitmq.
measure_cpu() {
  local groups=("$mqs_pid" "$registry_pid" "$activator_pid" "${system_pids[*]}" "$beam_pid") g t0 t1 pids before=() after=()
  t0=$(date +%s%N)
  for g in "${groups[@]}"; do read -ra pids <<<"$g"; before+=("$(ticks "${pids[@]}")"); done
  sleep "$idle_span"
  for g in "${groups[@]}"; do read -ra pids <<<"$g"; after+=("$(ticks "${pids[@]}")"); done
  t1=$(date +%s%N)
  for g in "${!groups[@]}"; do
    awk -v d=$((after[g] - before[g])) -v hz="$hz" -v ns=$((t1 - t0)) 'BEGIN { printf "%.2f ", 100 * d / hz / (ns / 1e9) }'
  done
}

ctl_count() { "$root/deploy/rabbitmq.sh" ctl --dir "$run/rabbitmq" -- -q "$1" --no-table-headers name | wc -l; }
mqs_connections() {
  curl -fsS --max-time 30 "http://127.0.0.1:$mqs_port/metrics" | awk '/^dde_mqs_broker_connections/ { s += $NF } END { print s + 0 }'
}

start_cluster() {
  local rp mp ap bp
  read -r rp mp ap bp <<<"$(free_ports 4)"
  mqs_port=$mp
  [[ -d $run ]] && "$root/deploy/cluster.sh" down --dir "$run" >/dev/null 2>&1
  rm -rf "$run"
  current=$run
  registry=$("$root/deploy/cluster.sh" up --dir "$run" --registry-port "$rp" --mqs-port "$mp" \
    --activator-port "$ap" --rabbitmq-port "$bp" 2>>"$dir/cluster.log") || dde_die "the cluster did not start; see $dir/cluster.log"
  mqs="ws://127.0.0.1:$mp/mqs"
  node=$(curl -fsS "$registry/registry/system/list" | json 'j[0]["bootstrapperId"]')
  mqs_pid=$(dde_daemon_pid "$run" mqs) registry_pid=$(dde_daemon_pid "$run" registry)
  activator_pid=$(dde_daemon_pid "$run" activator) beam_pid=$(cat "$run/rabbitmq/server.pid")
  dde_log "N=$n: cluster up in $run (registry $registry, RabbitMQ port $bp)"
}

# One N on a fresh cluster: appends its figures to $dir/results.txt.
run_one() {
  n=$1 run="$dir/$1"
  start_cluster
  deploy_all
  local deploys=$run/deploy-ms.txt tenth=$(((n + 9) / 10))
  local first last slowest
  first=$(mean_lines "$deploys" 1 "$tenth")
  last=$(mean_lines "$deploys" $((n - tenth + 1)) "$n")
  slowest=$(max_of <"$deploys")
  dde_wait_until $((60 + n / 5)) all_running || dde_die "only $(running_pools) of $n pools run after $((60 + n / 5)) s"
  # The delivery watchdogs look at each quiet pool 10 s after its last traffic, and then less and
  # less often: what they do right after the deploys is not what an idle node costs.
  sleep "$settle"
  read -ra system_pids <<<"$(pgrep -P "$activator_pid" dde-isolate-sys | tr '\n' ' ')"
  local want=$((n < systems ? n : systems))
  ((${#system_pids[@]} == want)) || dde_log "warning: ${#system_pids[@]} isolate systems run, not $want"
  dde_log "N=$n: all pools run; measuring idle CPU over $idle_span s"
  local cpu rss get_ms=() i snap_cold snap_ms=() conns chans
  cpu=$(measure_cpu)
  rss="$(rss_kib "$mqs_pid") $(rss_kib "$registry_pid") $(rss_kib "$activator_pid") $(rss_kib "${system_pids[@]}")"
  for ((i = 0; i < want; i++)); do get_ms+=("$(timed_curl "$registry/registry/system/$node")") || dde_die "GET /registry/system/$node failed"; done
  snap_cold=$(timed_curl "$registry/registry/status") || dde_die "GET /registry/status failed"
  for i in 1 2 3 4 5; do snap_ms+=("$(timed_curl "$registry/registry/status")") || dde_die "GET /registry/status failed"; done
  conns=$(ctl_count list_connections) || dde_die "rabbitmqctl list_connections failed"
  chans=$(ctl_count list_channels) || dde_die "rabbitmqctl list_channels failed"
  dde_log "N=$n: deploys first/last tenth $first/$last ms (max $slowest); idle CPU % MQS reg act sys RabbitMQ: $cpu"
  dde_log "N=$n: broker connections $conns (MQS metrics: $(mqs_connections)), channels $chans; $(error_lines) error lines in the logs"
  echo "$n $first $last $slowest $cpu $rss $conns $chans $(printf '%s\n' "${get_ms[@]}" | max_of)" \
    "$(printf '%s\n' "${get_ms[@]}" | median_of) $(printf '%s\n' "${snap_ms[@]}" | max_of) $snap_cold" >>"$dir/results.txt"
  teardown
}

error_lines() { cat "$run"/*.log "$run"/systems/* 2>/dev/null | grep -ciE 'error|fatal' || true; }

# The table, the cost per extra pool between the smallest and the largest N, and the targets.
report() {
  awk -v stamp="$(date -u +%Y-%m-%dT%H:%MZ)" -v host="$(nproc) vCPU, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)" '
    function mib(k) { return sprintf("%.1f", k / 1024) }
    { for (i = 1; i <= NF; i++) v[NR, i] = $i }
    END {
      print "Pool scaling, " stamp ", " host ": consumer pools, 2 workers each, at-least-once, one node, one MQS\n"
      print "| pools | deploy ms first/last tenth (max) | idle CPU % MQS / registry / activator / isolate systems / DDE total (RabbitMQ) | RSS MiB MQS / registry / activator / isolate systems | broker connections / channels | GET system max (median) ms | snapshot ms (cold) |"
      print "|---|---|---|---|---|---|---|"
      for (k = 1; k <= NR; k++) {
        dde[k] = v[k,5] + v[k,6] + v[k,7] + v[k,8]
        printf "| %d | %s / %s (%s) | %s / %s / %s / %s / %.2f (%s) | %s / %s / %s / %s | %d / %d | %s (%s) | %s (%s) |\n",
          v[k,1], v[k,2], v[k,3], v[k,4], v[k,5], v[k,6], v[k,7], v[k,8], dde[k], v[k,9],
          mib(v[k,10]), mib(v[k,11]), mib(v[k,12]), mib(v[k,13]), v[k,14], v[k,15], v[k,16], v[k,17], v[k,18], v[k,19]
      }
      lo = 1; hi = 1
      for (k = 1; k <= NR; k++) { if (v[k,1] < v[lo,1]) lo = k; if (v[k,1] > v[hi,1]) hi = k }
      d = v[hi,1] - v[lo,1]
      if (d > 0) {
        printf "\nPer extra pool (%d -> %d pools): RSS +%.0f KiB MQS, +%.0f KiB registry, +%.0f KiB activator, +%.0f KiB isolate systems; +%.2f broker connections, +%.2f channels\n",
          v[lo,1], v[hi,1], (v[hi,10] - v[lo,10]) / d, (v[hi,11] - v[lo,11]) / d, (v[hi,12] - v[lo,12]) / d,
          (v[hi,13] - v[lo,13]) / d, (v[hi,14] - v[lo,14]) / d, (v[hi,15] - v[lo,15]) / d
      }
      slow = v[hi,4]; if (v[hi,16] > slow) slow = v[hi,16]; if (v[hi,18] > slow) slow = v[hi,18]
      printf "\nTargets at %d pools:\n", v[hi,1]
      printf "- deploy last tenth within 20%% of first tenth (%s vs %s ms): %s\n", v[hi,3], v[hi,2], v[hi,3] <= 1.2 * v[hi,2] ? "met" : "NOT met"
      printf "- idle CPU of all DDE daemons < 2%% of a core (%.2f%%): %s\n", dde[hi], dde[hi] < 2 ? "met" : "NOT met"
      printf "- no REST answer over 500 ms (slowest %s ms; the snapshot'"'"'s cold call, which waits for a 1 s round by design, left out): %s\n",
        slow, slow <= 500 ? "met" : "NOT met"
    }' "$dir/results.txt"
}

rm -f "$dir/results.txt" "$dir/cluster.log"
for count in "${pool_counts[@]}"; do run_one "$count"; done
report | tee "$dir/summary.md"
