#!/usr/bin/env bash
# deploy/cluster.sh: `up` starts a working cluster, `status` reports it, `down` stops exactly it.
# Usage: cluster_script_test.sh BUILD_DIR
set -euo pipefail
build=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/deploy/lib.sh"
export DDE_BUILD_DIR=$build
dir="$build/test-tmp/cluster-script-$$"
rm -rf "$dir"
fail() { echo "FAIL: $*" >&2; "$root/deploy/cluster.sh" down --dir "$dir" >/dev/null 2>&1 || true; exit 1; }
ports=(--registry-port "$(dde_free_port)" --mqs-port "$(dde_free_port)" --activator-port "$(dde_free_port)")

url=$("$root/deploy/cluster.sh" up --dir "$dir" "${ports[@]}") || fail "up failed"
[[ $url == http://127.0.0.1:* ]] || fail "up printed \"$url\", not the registry URL"
"$root/deploy/cluster.sh" status --dir "$dir" >/dev/null || fail "status after up is not 0"
list=$("$build/bin/ddectl" --registry "$url" -o json list) || fail "ddectl list failed"
grep -q '"name": "node-a"' <<<"$list" || fail "the activator is not registered: $list"
pids=$(cat "$dir"/registry.pid "$dir"/mqs.pid "$dir"/activator.pid "$dir"/rabbitmq/server.pid)

"$root/deploy/cluster.sh" down --dir "$dir" >/dev/null 2>&1 || fail "down failed"
for pid in $pids; do dde_pid_alive "$pid" && fail "pid $pid still runs after down"; done
status=0; "$root/deploy/cluster.sh" status --dir "$dir" >/dev/null 2>&1 || status=$?
[[ $status -eq 3 ]] || fail "status after down is $status, not 3"
echo "PASS: cluster.sh up/status/down"
