#!/usr/bin/env bash
# The systemd units as systemd judges them: `systemd-analyze security --offline=yes` at most 5.0 for
# each, a user of their own, Documentation=, and the MQS wanting the RabbitMQ it is ordered after.
# Usage: systemd_units_test.sh SOURCE_DIR
set -euo pipefail
units="$1/deploy/systemd"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
command -v systemd-analyze >/dev/null || fail "systemd-analyze is not installed"
for daemon in registry mqs activator; do
  unit="$units/dde-$daemon.service"
  out=$(systemd-analyze security --offline=yes "$unit" 2>&1) || true
  score=$(sed -n 's/.*Overall exposure level for dde-'"$daemon"'.service: \([0-9.]*\).*/\1/p' <<<"$out")
  [[ -n $score ]] || fail "systemd-analyze gave no score for $unit: $out"
  awk -v s="$score" 'BEGIN { exit !(s <= 5.0) }' || fail "dde-$daemon.service: exposure $score > 5.0"
  grep -qx 'User=dde' "$unit" || fail "dde-$daemon.service does not run as the dde user"
  grep -q '^Documentation=' "$unit" || fail "dde-$daemon.service has no Documentation="
  for key in Type=notify NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes; do
    grep -qx "$key" "$unit" || fail "dde-$daemon.service lacks $key"
  done
  grep -q '^ProtectHome=' "$unit" || fail "dde-$daemon.service lacks ProtectHome="
  if grep -q '^After=.*rabbitmq' "$unit"; then
    grep -q '^Wants=.*rabbitmq-server.service' "$unit" || fail "dde-$daemon.service orders after RabbitMQ without Wants="
  fi
  echo "dde-$daemon.service: exposure $score"
done
echo "PASS: every unit at most 5.0"
