#!/usr/bin/env bash
# lintian on cpack's two .deb packages, those deb_package_test.sh built (ctest runs it first: fixture
# deb_packages): no error and no warning. Then what lintian would only hint at: each package has its
# copyright and a Debian changelog whose newest entry is the package's version; each executable has
# a man page that man renders without a complaint and that documents its options, naming installed
# paths only.
# Usage: lintian_test.sh BUILD_DIR PACKAGES_DIR OUT_DIR
set -euo pipefail
build=$1 packages=$2 out=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in lintian dpkg-deb dpkg-parsechangelog man; do
  command -v $tool >/dev/null || fail "$tool is not installed (deploy/install-deps.sh)"
done
shopt -s nullglob
debs=("$packages"/dde_*.deb) dev_debs=("$packages"/dde-dev_*.deb)
((${#debs[@]} == 1 && ${#dev_debs[@]} == 1)) || fail "no dde_*.deb and dde-dev_*.deb in $packages (deb_package_test makes them)"
deb=${debs[0]} dev=${dev_debs[0]}
rm -rf "$out"
mkdir -p "$out"

# --- lintian: errors and warnings fail (overridden tags excepted: deploy/debian/*.lintian-overrides),
# infos are shown. (Not --show-overrides: with it lintian 2.116 exits 2 on overridden tags.) ---
status=0
lintian --fail-on error,warning --display-info --tag-display-limit 0 "$deb" "$dev" >"$out/lintian.log" 2>&1 ||
  status=$?
counts=$(for kind in E W I; do printf '%s: %s  ' "$kind" "$(grep -c "^$kind: " "$out/lintian.log" || true)"; done)
echo "lintian $(basename "$deb") $(basename "$dev"): $counts"
if ((status != 0)) || grep -q '^[EW]: ' "$out/lintian.log"; then
  cat "$out/lintian.log" >&2
  fail "lintian found errors or warnings (exit status $status)"
fi
cat "$out/lintian.log"

# --- copyright and changelog, in both ---
for pkg in "$deb" "$dev"; do
  name=$(dpkg-deb -f "$pkg" Package) version=$(dpkg-deb -f "$pkg" Version)
  dir="$out/$name"
  dpkg-deb -x "$pkg" "$dir"
  doc="$dir/usr/share/doc/$name"
  grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$doc/copyright" 2>/dev/null ||
    fail "$name has no machine-readable /usr/share/doc/$name/copyright"
  [[ -f $doc/changelog.Debian.gz ]] || fail "$name has no /usr/share/doc/$name/changelog.Debian.gz"
  gzip -dc "$doc/changelog.Debian.gz" >"$out/$name.changelog"
  top=$(dpkg-parsechangelog -l "$out/$name.changelog" -S Version)
  [[ $top == "$version" ]] || fail "$name $version: its changelog's newest entry is $top"
done

# --- man pages: one for each executable, rendered, with its options ---
declare -A option=([dde-registry]=--port [dde-mqs]=--broker-host [dde-activator]=--host-binary
  [dde-isolate-system]=--plugin-allow [ddectl]=--registry)
bin=$(ls "$out/dde/usr/bin")
for program in $bin; do [[ -n ${option[$program]:-} ]] || fail "/usr/bin/$program is new here: add its option to check"; done
for program in "${!option[@]}"; do
  page="$out/dde/usr/share/man/man1/$program.1.gz"
  [[ -s $page ]] || fail "dde has no man page for $program (/usr/share/man/man1/$program.1.gz)"
  text=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --nh --warnings -E UTF-8 -l "$page" 2>"$out/$program.man-warnings") ||
    fail "man -l $page failed: $(cat "$out/$program.man-warnings")"
  [[ ! -s $out/$program.man-warnings ]] || fail "man warns of $program's page: $(cat "$out/$program.man-warnings")"
  grep -q -- "${option[$program]}" <<<"$text" || fail "$program's man page does not document ${option[$program]}: $text"
  for section in NAME SYNOPSIS DESCRIPTION; do
    grep -q "^$section" <<<"$text" || fail "$program's man page has no $section: $text"
  done
  ! grep -qF "$build" <<<"$text" || fail "$program's man page names the build folder $build: $(grep -F "$build" <<<"$text")"
done
page=$(MANWIDTH=200 man --nh -l "$out/dde/usr/share/man/man1/dde-activator.1.gz" 2>/dev/null || true)
grep -q '/usr/bin/dde-isolate-system' <<<"$page" ||
  fail "dde-activator's man page does not name the installed dde-isolate-system as --host-binary's default"
echo "PASS: lintian has no error or warning; copyright, changelog and ${#option[@]} man pages in place"
