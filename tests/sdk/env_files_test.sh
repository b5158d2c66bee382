#!/usr/bin/env bash
# The /etc/dde/*.env files the package installs tell the truth: every flag they set or name in their
# comments is one the daemon knows (its --help lists it), and none claims the daemons lack what they
# have (authentication, TLS); the logrotate file parses.
# Usage: env_files_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"
src="$2"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
checked=0
for pair in registry:dde-registry mqs:dde-mqs activator:dde-activator; do
  env_file="$src/deploy/systemd/${pair%%:*}.env"
  daemon="$build/bin/${pair#*:}"
  [[ -f $env_file ]] || fail "$env_file is missing"
  help=$("$daemon" --help)
  for flag in $(grep -o -- '--[a-z][a-z-]*' "$env_file" | sort -u); do
    grep -q -- "$flag\b" <<<"$help" || fail "${env_file##*/} names $flag, which ${daemon##*/} --help does not list"
    checked=$((checked + 1))
  done
  if grep -qi 'no authentication\|no tls' "$env_file"; then
    fail "${env_file##*/} says the daemons lack authentication or TLS; they have both (the manual's \"Security\")"
  fi
done
((checked >= 10)) || fail "only $checked flags found in the env files"
# The logrotate file the package installs as /etc/logrotate.d/dde parses and names the activator's --log-dir.
rotate="$src/deploy/systemd/dde.logrotate"
grep -q '^/var/log/dde/\*\.log {' "$rotate" || fail "dde.logrotate does not rotate /var/log/dde/*.log"
grep -q -- '--log-dir /var/log/dde' "$src/deploy/systemd/activator.env" || fail "activator.env logs elsewhere"
state=$(mktemp)
out=$(logrotate -d -s "$state" "$rotate" 2>&1) || fail "logrotate -d refuses dde.logrotate: $out"
rm -f "$state"
if grep -qi 'error' <<<"$out"; then fail "logrotate -d: $out"; fi
echo "PASS: $checked flags named in deploy/systemd/*.env are known to their daemons; dde.logrotate parses"
