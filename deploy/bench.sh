#!/usr/bin/env bash
# The benchmark suite (thesis section 5.2: experiments 1-7; 8: recovery; 9: memory; 10: experiment 1 on
# the path users run, deploy/cluster.sh and ddectl) against raw rabbitmq-c, in one command:
# installs what is missing, builds, runs build/bin/dde-bench-suite (its own throw-away RabbitMQ node,
# dde-registry, 4 dde-activator nodes and dde-mqs processes), then draws one PNG per thesis figure
# with gnuplot (bench/plots/*.gp). Results: a CSV per experiment, summary.md and the PNGs in --out.
#   bench.sh [--quick] [--out DIR] [--only 1,2,...] [--no-build]
#   --quick     few points, short runs (a couple of minutes; what CI runs)
#   --out DIR   results folder (default build/bench-results)
#   --only L    only these experiments (6 and 7 share their runs)
#   --no-build  use what is built already (DDE_BUILD_DIR or build/), install nothing
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

build="${DDE_BUILD_DIR:-$DDE_ROOT/build}"
out="" quick=() only=() do_build=yes
while (($#)); do
  case "$1" in
    --quick) quick=(--quick); shift ;;
    --out) out="$2"; shift 2 ;;
    --only) only=(--only "$2"); shift 2 ;;
    --no-build) do_build=""; shift ;;
    -h|--help) sed -n '2,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) dde_die "unknown argument $1 (see --help)" ;;
  esac
done
out="${out:-$build/bench-results}"

if [[ -n $do_build ]]; then
  "$here/install-deps.sh" test
  "$here/build.sh" -DDDE_BUILD_TESTS=ON
fi
[[ -x $build/bin/dde-bench-suite ]] || dde_die "$build/bin/dde-bench-suite is not built (tests off?); run deploy/build.sh"
command -v gnuplot >/dev/null || dde_die "gnuplot is missing; run deploy/install-deps.sh"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -f "$out"/*.csv "$out"/*.png "$out"/summary.md
dde_log "results go to $out"
"$build/bin/dde-bench-suite" --out "$out" "${quick[@]}" "${only[@]}"

# One plot per thesis figure, drawn from the CSV files that exist (--only may skip some).
plots="$DDE_ROOT/bench/plots"
for script in "$plots"/exp*.gp; do
  name=$(basename "$script" .gp)
  csv=$(sed -n 's/^f = dir."\/\(.*\)"$/\1/p' "$script")
  [[ -f $out/$csv ]] || continue
  # gnuplot's warnings about series a --quick run leaves empty are noise; other messages are shown.
  (cd "$plots" && gnuplot -e "dir='$out'" "$script" 2>&1) |
    grep -v -e '^ *$' -e 'empty x range' -e 'adjusting to' -e 'Skipping data file' >&2 || true
  [[ -s $out/$name.png ]] || dde_die "gnuplot did not draw $name.png"
done
dde_log "done: $out/summary.md and $(find "$out" -name '*.png' | wc -l) plots"
