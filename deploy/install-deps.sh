#!/usr/bin/env bash
# Installs the Debian 12 packages DDE needs; does nothing when all are present.
# The system-wide rabbitmq-server is left stopped: tests and demos run their own nodes.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Two sets: what building and running the daemons, ddectl and the workers needs (the demo), and what
# the tests, benchmarks and packaging add.
#   install-deps.sh [demo|test]   (test, the default, installs both sets)
set_name="${1:-test}"
[[ $set_name == demo || $set_name == test ]] || dde_die "usage: install-deps.sh [demo|test]"

# ninja-build: the build's generator (deploy/build.sh); liburiparser-dev: URLs; libcli11-dev: every command line; libsqlite3-dev: the registry's --state-file; libpq-dev and pkg-config: the
# registry's --state-url (PostgreSQL, the store of a registry pair); curl, procps, iproute2 and
# python3: the deploy scripts; amqp-tools: deploy/rabbitmq.sh's readiness probe (an AMQP login).
packages=(build-essential cmake ninja-build ccache libboost-dev nlohmann-json3-dev uuid-dev libssl-dev libspdlog-dev
  librabbitmq-dev liburiparser-dev libcli11-dev libsqlite3-dev libpq-dev pkg-config rabbitmq-server
  amqp-tools curl procps iproute2 python3)
if [[ $set_name == test ]]; then
  # clang + libclang-rt-14-dev: the ASan/UBSan build and the libFuzzer targets (deploy/sanitize.sh).
  # dpkg-dev: dpkg-shlibdeps, which declares the .deb packages' dependencies (cpack); binutils: nm and
  # readelf for the SDK tests; chromium and nodejs: the dashboard's browser test and the manual's
  # screenshots; gnuplot-nox: the benchmark plots (deploy/bench.sh); shellcheck and logrotate: the
  # scripts' and the logrotate file's tests; help2man: the executables' man pages; lintian: the .deb
  # packages' test; mkdocs and mkdocs-material: the manual (docs/, built with --strict by the suite),
  # graphviz: its diagrams (docs/diagrams/*.dot, drawn as SVG when it is built); universal-ctags: the
  # functions and classes deploy/shape-check.sh measures; clang-format and clang-tidy: deploy/lint.sh.
  packages+=(libgtest-dev libgmock-dev googletest shellcheck logrotate
    dpkg-dev binutils clang libclang-rt-14-dev chromium nodejs gnuplot-nox help2man lintian
    mkdocs mkdocs-material graphviz universal-ctags clang-format clang-tidy)
  # prometheus: its promtool, which metrics_rmqtest runs on every daemon's /metrics (`promtool check
  # metrics`); the policy-rc.d below keeps the package's own Prometheus service from starting.
  packages+=(prometheus)
  # postgresql: the throw-away server of the registry pair's tests (tests/support/postgres_server.cpp),
  # whose package-made cluster the policy-rc.d below keeps from starting.
  packages+=(postgresql)
  # Debian's nodejs comes without npm (a nodejs from elsewhere may bundle it).
  command -v npm >/dev/null 2>&1 || packages+=(npm)
fi

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$package")
done

# Stops a system rabbitmq-server node (the Debian service, run as user rabbitmq) if one runs.
stop_system_rabbitmq() {
  if [[ -d /run/systemd/system ]]; then
    dde_as_root systemctl disable --now rabbitmq-server.service >/dev/null 2>&1 || true
  fi
  local pids
  pids=$(pgrep -u rabbitmq -x beam.smp || true)
  [[ -z $pids ]] && return 0
  dde_log "stopping the system rabbitmq-server node (pids $pids)"
  dde_as_root service rabbitmq-server stop >/dev/null 2>&1 || true
  for pid in $pids; do
    dde_wait_until 30 bash -c "! kill -0 $pid 2>/dev/null" || dde_as_root kill -KILL "$pid" 2>/dev/null || true
  done
}

if ((${#missing[@]} == 0)); then
  dde_log "all ${#packages[@]} packages present"
  stop_system_rabbitmq
  exit 0
fi

dde_log "installing: ${missing[*]}"
# Keep the rabbitmq-server package from starting its service during postinst (policy-rc.d: 101 =
# action forbidden). Only ours is removed again; an existing one (e.g. Docker's) stays.
created_policy=""
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
  dde_as_root sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d'
  created_policy=yes
fi
cleanup() { [[ -n $created_policy ]] && dde_as_root rm -f /usr/sbin/policy-rc.d; true; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
dde_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
dde_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
stop_system_rabbitmq
dde_log "done"
