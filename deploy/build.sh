#!/usr/bin/env bash
# Configures and builds DDE in <repo>/build (RelWithDebInfo; ccache is used when installed).
# Extra arguments go to the cmake configure step, e.g. -DDDE_BUILD_TESTS=ON (the tests and the
# benchmark suite; off by default). DDE_BUILD_TARGETS (space-separated) builds only those targets.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build_dir="${DDE_BUILD_DIR:-$DDE_ROOT/build}"
# Paths relative to the checkout in ccache's keys, so every clone of the repo shares one cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$DDE_ROOT}"
# With debug info (-g) ccache also hashes the working directory by default, so every clone missed the
# others' objects; the build directory's path only lands in DW_AT_comp_dir.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
# Ninja for a new build folder when it is there (one progress count over every target built); a
# folder configured before keeps its generator.
generator=()
if [[ ! -f $build_dir/CMakeCache.txt ]] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$DDE_ROOT" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
targets=()
for target in ${DDE_BUILD_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j"${DDE_BUILD_JOBS:-2}" "${targets[@]}"
