#!/usr/bin/env bash
# Builds the manual (docs/manual, configured by docs/mkdocs.yml) into BUILD_DIR/docs/site with
# `mkdocs build --strict`. What the manual shows of the code comes from the code, put into a staged
# copy (BUILD_DIR/docs/stage) at build time, never copied by hand:
#   - every program's --help (BUILD_DIR/bin/dde-registry, dde-mqs, dde-activator, dde-isolate-system, ddectl);
#   - the wire protocols: activator/, mqs/ and registry/PROTOCOL.md;
#   - the latest benchmark run: bench/results/summary.md and its plots;
#   - the registry's OpenAPI document and the pool spec's JSON Schema (registry/openapi.json and
#     registry/schemas/), which the registry also serves;
#   - the diagrams: docs/diagrams/*.dot, drawn as SVG by graphviz.
# Fails on any mkdocs warning (a broken link, a missing page or snippet), on a page left out of the
# navigation, and on a link to an anchor that the target page does not have.
#   docs/build.sh [BUILD_DIR]      (default: <repo>/build)
# Needs mkdocs, mkdocs-material and graphviz (deploy/install-deps.sh test installs them).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"

build="${1:-${DDE_BUILD_DIR:-$DDE_ROOT/build}}"
build="$(cd "$build" && pwd)"
docs="$DDE_ROOT/docs"
stage="$build/docs/stage"
site="$build/docs/site"
generated="$stage/generated"
manual="$stage/manual"

command -v mkdocs >/dev/null || dde_die "mkdocs is not installed (apt-get install mkdocs mkdocs-material)"
command -v dot >/dev/null || dde_die "graphviz's dot is not installed (apt-get install graphviz)"

rm -rf "$stage" "$site"
mkdir -p "$stage"
cp "$docs/mkdocs.yml" "$stage/"
cp -r "$docs/manual" "$manual"
mkdir -p "$generated/help" "$generated/protocols" "$generated/bench" "$manual/img"

# Each program's own --help: the flags page includes these, so it cannot drift from the binaries.
# Defaults that depend on this machine (the host name, the build folder) are named, not shown.
help_of() {
  "$@" --help | sed -e "s|(default: $(hostname))|(default: the host name)|" \
    -e "s|(default: $build/bin/|(default: <the folder of dde-activator>/|"
}
for program in dde-registry dde-mqs dde-activator dde-isolate-system ddectl; do
  [[ -x $build/bin/$program ]] || dde_die "$build/bin/$program is missing: build DDE first (deploy/build.sh)"
  help_of "$build/bin/$program" >"$generated/help/$program.txt" || dde_die "$program --help failed"
done
# ddectl's commands, each with its own --help.
commands=$(awk '/^commands:/ { on = 1; next } /^$/ { on = 0 } on && /^  [a-z]/ { print $1 }' \
  "$generated/help/ddectl.txt")
[[ -n $commands ]] || dde_die "ddectl --help lists no commands"
for command in $commands; do
  printf '### ddectl %s\n\n```text\n' "$command"
  help_of "$build/bin/ddectl" "$command" || dde_die "ddectl $command --help failed"
  printf '```\n\n'
done >"$generated/help/ddectl-commands.md"

# The wire protocols stay beside their code, where they are the truth; the reference includes them.
for component in activator mqs registry; do
  cp "$DDE_ROOT/$component/PROTOCOL.md" "$generated/protocols/$component.md"
done

# The latest full benchmark run as the suite wrote it, with its plots next to the page that shows it.
cp "$DDE_ROOT/bench/results/summary.md" "$generated/bench/summary.md"
cp "$DDE_ROOT"/bench/results/*.png "$manual/benchmarks/"

# The machine-readable contracts the registry publishes, offered for download and shown in full.
for contract in openapi.json schemas/pool-spec.schema.json; do
  cp "$DDE_ROOT/registry/$contract" "$manual/reference/$(basename "$contract")"
  cp "$DDE_ROOT/registry/$contract" "$generated/$(basename "$contract")"
done

# The dashboard as the registry serves it (its screenshot is kept beside the web files).
cp "$DDE_ROOT/registry/web/dashboard.png" "$manual/img/dashboard.png"

for diagram in "$docs"/diagrams/*.dot; do
  dot -Tsvg "$diagram" -o "$manual/img/$(basename "$diagram" .dot).svg"
done

log="$build/docs/mkdocs.log"
status=0
(cd "$stage" && mkdocs build --strict --clean --site-dir "$site") >"$log" 2>&1 || status=$?
cat "$log" >&2
((status == 0)) || dde_die "mkdocs build --strict failed (log: $log)"
# mkdocs reports a page missing from the navigation only as INFO; a reader could not find it.
if grep -q 'not included in the "nav"' "$log"; then
  dde_die "a page is not in the navigation of docs/mkdocs.yml (log: $log)"
fi
grep -q WARNING "$log" && dde_die "mkdocs warned (log: $log)"

# mkdocs 1.4 checks that a linked page exists, not that it has the anchor: check those here.
/usr/bin/env python3 - "$site" <<'EOF'
import html.parser, os, sys, urllib.parse

site = sys.argv[1]

class page_reader(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])

pages = {}
for folder, _, files in os.walk(site):
    for name in files:
        if name.endswith(".html"):
            path = os.path.join(folder, name)
            reader = page_reader()
            with open(path, encoding="utf-8") as f:
                reader.feed(f.read())
            pages[os.path.normpath(path)] = reader

broken = []
for path, reader in pages.items():
    for href in reader.links:
        url = urllib.parse.urlparse(href)
        if url.scheme or url.netloc or not url.fragment:
            continue
        target = os.path.normpath(os.path.join(os.path.dirname(path), url.path)) if url.path else path
        if target in pages and url.fragment not in pages[target].ids:
            broken.append(f"{os.path.relpath(path, site)}: {href}")
if broken:
    print("links to anchors that do not exist:\n  " + "\n  ".join(sorted(set(broken))), file=sys.stderr)
    sys.exit(1)
EOF
dde_log "the manual is in $site/index.html"
