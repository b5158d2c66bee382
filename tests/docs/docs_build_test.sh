#!/usr/bin/env bash
# Builds the manual with docs/build.sh (mkdocs build --strict into BUILD_DIR/docs/site: no warning, no
# page outside the navigation, no link to a missing anchor), then checks what it put in from the code:
# each program's --help on the flags page, the PROTOCOL.md files, the latest benchmark run and its
# plots, the diagrams; and that no page loads anything from the network when it is viewed.
# mkdocs, mkdocs-material and graphviz come with deploy/install-deps.sh test: their absence fails.
# Usage: docs_build_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
source_dir=$1 build=$2
site="$build/docs/site"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$source_dir/docs/build.sh" "$build" || fail "docs/build.sh failed"

page() { [[ -f $site/$1 ]] || fail "the site has no $1"; cat "$site/$1"; }
# The flags page is each binary's own --help: an option of each, as the binary prints it.
flags=$(page reference/flags.html)
for program in dde-registry dde-mqs dde-activator dde-isolate-system ddectl; do
  option=$("$build/bin/$program" --help | grep -oE -- '--[a-z][a-z-]+' | grep -v -- '--help' | sed -n 1p)
  grep -qF -- "$option" <<<"$flags" || fail "reference/flags.html lacks $program's $option"
done
grep -qF 'ddectl deploy' <<<"$flags" || fail "reference/flags.html lacks ddectl's commands"
grep -q 'Host &lt;-&gt; MQS protocol' <(page reference/protocol-mqs.html) || fail "mqs/PROTOCOL.md is not in the manual"
grep -q 'Registry &lt;-&gt; bootstrapper protocol' <(page reference/protocol-registry.html) || fail "registry/PROTOCOL.md is not in the manual"
grep -q 'Activator protocols' <(page reference/protocol-activator.html) || fail "activator/PROTOCOL.md is not in the manual"
grep -q 'DDE benchmark suite' <(page benchmarks/latest-run.html) || fail "bench/results/summary.md is not in the manual"
for plot in "$source_dir"/bench/results/*.png; do
  [[ -f $site/benchmarks/$(basename "$plot") ]] || fail "the plot $(basename "$plot") is not in the manual"
done
for diagram in "$source_dir"/docs/diagrams/*.dot; do
  [[ -s $site/img/$(basename "$diagram" .dot).svg ]] || fail "the diagram $(basename "$diagram") was not drawn"
done

# Nothing is fetched when a page is viewed: no script, style sheet, image or font from the network.
/usr/bin/env python3 - "$site" <<'PY' || fail "a page loads something from the network"
import html.parser, os, sys

class reader(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.remote = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        url = attrs.get("src") if tag in ("script", "img", "iframe") else None
        if tag == "link" and attrs.get("rel") in ("stylesheet", "preconnect", "preload", "icon"):
            url = attrs.get("href")
        if url and url.startswith(("http:", "https:", "//")):
            self.remote.append(f"<{tag}> {url}")

bad = []
for folder, _, files in os.walk(sys.argv[1]):
    for name in files:
        if name.endswith(".html"):
            r = reader()
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                r.feed(f.read())
            bad += [f"{name}: {x}" for x in r.remote]
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
echo "PASS: the manual builds with mkdocs --strict ($(find "$site" -name '*.html' | wc -l) pages)"
