#!/usr/bin/env bash
# cpack's .deb packages (built from the existing build tree, nothing rebuilt): the files each one
# lists, its declared dependencies and conffiles; both installed with dpkg into a throw-away root
# (never the real system), the installed dde-registry and dde-activator started from there.
# Usage: deb_package_test.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=$1 out=$2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../deploy/lib.sh"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in cpack dpkg-deb dpkg curl; do command -v $tool >/dev/null || fail "$tool is not installed (deploy/install-deps.sh)"; done
rm -rf "$out"
mkdir -p "$out"

(cd "$build" && cpack -G DEB -B "$out/packages") >"$out/cpack.log" 2>&1 || { tail -40 "$out/cpack.log" >&2; fail "cpack failed"; }
shopt -s nullglob
debs=("$out"/packages/dde_*.deb) dev_debs=("$out"/packages/dde-dev_*.deb)
((${#debs[@]} == 1 && ${#dev_debs[@]} == 1)) || fail "expected dde_*.deb and dde-dev_*.deb, got: $(ls "$out/packages")"
deb=${debs[0]} dev=${dev_debs[0]}

# --- what each package holds ---
expect_files() {  # expect_files DEB PATH...
  local pkg=$1; shift
  local listing
  listing=$(dpkg-deb -c "$pkg" | awk '{print $6}' | sed 's|^\./|/|')
  for f in "$@"; do grep -qx -- "$f" <<<"$listing" || fail "$(basename "$pkg") lacks $f; it holds:\n$listing"; done
}
expect_files "$deb" /usr/bin/dde-registry /usr/bin/dde-mqs /usr/bin/dde-activator /usr/bin/dde-isolate-system \
  /usr/bin/ddectl /usr/lib/dde/workers/libproducer.so /usr/lib/dde/workers/libconsumer.so \
  /usr/lib/dde/workers/libecho_v1.so /usr/lib/systemd/system/dde-registry.service \
  /usr/lib/systemd/system/dde-mqs.service /usr/lib/systemd/system/dde-activator.service \
  /etc/dde/registry.env /etc/dde/mqs.env /etc/dde/activator.env
expect_files "$dev" /usr/include/dde/worker.hpp /usr/include/dde/message.hpp /usr/include/dde/args.hpp \
  /usr/lib/libdde_core.a /usr/lib/cmake/dde/ddeConfig.cmake /usr/lib/cmake/dde/ddeConfigVersion.cmake \
  /usr/lib/cmake/dde/dde-targets.cmake /usr/lib/cmake/dde/dde_worker_plugin.cmake
# Listings are read whole before grep: `cmd | grep -q` under pipefail fails (or, negated, passes) when
# grep stops at the first match and the writer gets SIGPIPE.
dev_files=$(dpkg-deb -c "$dev" | awk '{print $6}')
deb_files=$(dpkg-deb -c "$deb" | awk '{print $6}')
grep -q '/usr/bin/.' <<<"$dev_files" && fail "dde-dev holds executables"
grep -q '/usr/include/.' <<<"$deb_files" && fail "dde holds headers"

# --- control fields ---
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libstdc++6 librabbitmq4 libssl3 libuuid1 libspdlog liburiparser1; do
  grep -q "$lib" <<<"$depends" || fail "dde does not depend on $lib: Depends: $depends"
done
[[ $(dpkg-deb -f "$deb" Package) == dde && $(dpkg-deb -f "$dev" Package) == dde-dev ]] || fail "package names"
dev_depends=$(dpkg-deb -f "$dev" Depends)
for pkg in nlohmann-json3-dev libboost-dev libspdlog-dev uuid-dev liburiparser-dev; do
  grep -q "$pkg" <<<"$dev_depends" || fail "dde-dev does not depend on $pkg: Depends: $dev_depends"
done
conffiles=$(dpkg-deb -I "$deb" conffiles)
for f in /etc/dde/registry.env /etc/dde/mqs.env /etc/dde/activator.env /etc/logrotate.d/dde; do
  grep -qx "$f" <<<"$conffiles" || fail "$f is not a conffile: $conffiles"
done

# --- installed into a throw-away root ---
root="$out/root"
mkdir -p "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/info"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
if [[ $(id -u) -eq 0 ]]; then
  # Dependencies are not in the empty root (the files run against the host's libraries).
  dpkg --root="$root" --force-depends --force-script-chrootless -i "$deb" "$dev" >"$out/dpkg.log" 2>&1 ||
    { cat "$out/dpkg.log" >&2; fail "dpkg -i into $root failed"; }
  grep -qx "Status: install ok installed" <<<"$(dpkg --root="$root" -s dde)" || fail "dde is not installed in $root"
  grep -qx /usr/bin/dde-registry <<<"$(dpkg --root="$root" -L dde)" || fail "dpkg -L dde does not list /usr/bin/dde-registry"
  grep -qx /usr/include/dde/worker.hpp <<<"$(dpkg --root="$root" -L dde-dev)" || fail "dpkg -L dde-dev lacks worker.hpp"
  # The postinst created the daemons' user, in that root.
  grep -q '^dde:' "$root/etc/passwd" || fail "the postinst did not create the dde user: $(cat "$out/dpkg.log")"
else
  echo "not root: unpacking with dpkg-deb -x instead of dpkg --root -i"
  dpkg-deb -x "$deb" "$root"
  dpkg-deb -x "$dev" "$root"
fi

unit="$root/usr/lib/systemd/system/dde-registry.service"
grep -qx 'ExecStart=/usr/bin/dde-registry $DDE_ARGS' "$unit" || fail "$unit: $(grep ExecStart "$unit")"
grep -qx 'EnvironmentFile=-/etc/dde/registry.env' "$unit" || fail "$unit: $(grep EnvironmentFile "$unit")"
grep -qx 'User=dde' "$unit" || fail "$unit does not run as dde"
grep -q '^u dde ' "$root/usr/lib/sysusers.d/dde.conf" || fail "no sysusers.d/dde.conf"
[[ -s $root/usr/share/doc/dde/README.md ]] || fail "no /usr/share/doc/dde/README.md (the units' Documentation=)"
grep -q '^DDE_ARGS=".*--port 8000' "$root/etc/dde/registry.env" || fail "registry.env: $(cat "$root/etc/dde/registry.env")"

help=$("$root/usr/bin/dde-registry" --help) || fail "the installed dde-registry --help failed"
grep -q -- "--port" <<<"$help" || fail "dde-registry --help does not document --port: $help"
help=$("$root/usr/bin/dde-mqs" --help) || fail "the installed dde-mqs --help failed"
grep -q -- "--broker-host" <<<"$help" || fail "dde-mqs --help does not document --broker-host: $help"

# The installed registry serves, and the installed activator (which runs the dde-isolate-system
# installed beside it) registers with it.
port=$(dde_free_port) activator_port=$(dde_free_port)
"$root/usr/bin/dde-registry" --listen 127.0.0.1 --port "$port" >"$out/registry.log" 2>&1 &
pids+=($!)
dde_wait_until 20 curl -fsS "http://127.0.0.1:$port/registry/health" -o "$out/health.json" ||
  fail "the installed dde-registry does not answer: $(cat "$out/registry.log")"
grep -q '"status":"ok"' "$out/health.json" || fail "health: $(cat "$out/health.json")"
mkdir -p "$out/systems"
"$root/usr/bin/dde-activator" --registry "ws://127.0.0.1:$port/registry" --port "$activator_port" --name deb-node \
  --log-dir "$out/systems" >"$out/activator.log" 2>&1 &
pids+=($!)
registered() {
  local list
  list=$(curl -fsS "http://127.0.0.1:$port/registry/system/list") || return 1
  [[ $list == *'"name":"deb-node"'* ]]
}
dde_wait_until 20 registered || fail "the installed dde-activator did not register: $(cat "$out/activator.log")"
grep -q "$root/usr/bin/dde-isolate-system" <("$root/usr/bin/dde-activator" --help) ||
  fail "the installed activator does not default to the installed dde-isolate-system"

# The packaged SDK is found where dpkg put it.
mkdir -p "$out/find-sdk"
cmake -S "$here/core_client" -B "$out/find-sdk" -DCMAKE_PREFIX_PATH="$root/usr" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$out/find-sdk.log" 2>&1 || { cat "$out/find-sdk.log" >&2; fail "find_package(dde) in the packaged SDK"; }
grep -q "^dde_DIR:PATH=$root/usr/lib/cmake/dde$" "$out/find-sdk/CMakeCache.txt" || fail "the packaged SDK was not the one found"
echo "PASS: $(basename "$deb") and $(basename "$dev") installed into $root; the installed daemons run"
