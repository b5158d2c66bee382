#!/usr/bin/env bash
# The SDK as a user gets it: `cmake --install --component dev` into a prefix under the build tree,
# then examples/out-of-tree-worker built against that prefix only (and once more as if built for
# another plugin ABI, for sdk_example_rmqtest), and a small program linking dde::core.
# Usage: sdk_build_example_test.sh BUILD_DIR SOURCE_DIR OUT_DIR
set -euo pipefail
build=$1 source=$2 out=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
prefix="$out/prefix"

cmake --install "$build" --component dev --prefix "$prefix" >"$out/install.log" || fail "cmake --install failed"
for f in include/dde/worker.hpp include/dde/message.hpp include/dde/args.hpp lib/libdde_core.a \
  lib/cmake/dde/ddeConfig.cmake lib/cmake/dde/ddeConfigVersion.cmake lib/cmake/dde/dde-targets.cmake \
  lib/cmake/dde/dde_worker_plugin.cmake; do
  [[ -f $prefix/$f ]] || fail "the SDK install lacks $f"
done
[[ ! -e $prefix/bin ]] || fail "the dev component installed executables: $(ls "$prefix/bin")"
# The SDK's headers are the worker API's tree as it is in the source, no more: the daemons' own headers
# (dde/core, dde/protocol, dde/mqs, ...) stay out.
installed=$(cd "$prefix/include" && find . -type f | sort)
expected=$(cd "$source/framework/include" && find . -type f -name '*.hpp' | sort)
[[ $installed == "$expected" ]] ||
  fail "the SDK installs other headers than framework/include/: $(diff <(echo "$expected") <(echo "$installed") | grep '^[<>]' | head -5 | tr '\n' ' ')"
for dir in core protocol runtime host mqs registry activator; do
  [[ ! -e $prefix/include/dde/$dir ]] || fail "the SDK installs dde/$dir, headers of the daemons' own"
done
# Each installed header compiles on its own from the prefix: nothing it includes was left out.
while IFS= read -r header; do
  echo "#include \"$header\"" | c++ -std=c++17 -fsyntax-only -I"$prefix/include" -x c++ - ||
    fail "$header does not compile alone from the SDK install"
done < <(cd "$prefix/include" && find dde -name '*.hpp' | sort)
abi=$(sed -n 's/^#define DDE_ABI_VERSION \([0-9]*\)$/\1/p' "$prefix/include/dde/worker.hpp")
[[ -n $abi ]] || fail "no DDE_ABI_VERSION in the installed worker.hpp"

# Configure against the prefix and nothing else (no package registry, no source tree).
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
configure() {  # configure SOURCE BUILD [cmake args...]
  local src=$1 dir=$2; shift 2
  cmake -S "$src" -B "$dir" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >"$dir.log" 2>&1 || { cat "$dir.log" >&2; fail "configure of $src failed"; }
  grep -q "^dde_DIR:PATH=$prefix/lib/cmake/dde$" "$dir/CMakeCache.txt" || fail "$src did not find the SDK in $prefix"
}
build_it() { cmake --build "$1" -j2 >>"$1.log" 2>&1 || { cat "$1.log" >&2; fail "build of $1 failed"; }; }

example="$source/examples/out-of-tree-worker"
configure "$example" "$out/example"
build_it "$out/example"
so="$out/example/libecho_worker.so"
[[ -f $so ]] || fail "no $so"
if grep -q -- "$source/framework" "$out/example/compile_commands.json" "$out/example/CMakeFiles/echo_worker.dir/flags.make" 2>/dev/null; then
  fail "the example was compiled with headers from the source tree"
fi

# Exported: the three entry points and nothing else; no STB_GNU_UNIQUE symbol (it would pin the
# plugin in memory across hot swaps).
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v -x -e _init -e _fini | sort | tr '\n' ' ')
[[ $exported == "dde_create_worker dde_destroy_worker dde_plugin_abi_version " ]] ||
  fail "libecho_worker.so exports \"$exported\", not just the three entry points"
unique=$(readelf --dyn-syms -W "$so" | awk '$5 == "UNIQUE"')
[[ -z $unique ]] || fail "libecho_worker.so has STB_GNU_UNIQUE symbols: $unique"

# The same worker built as if against SDK headers of another ABI version.
configure "$example" "$out/example-abi" -DCMAKE_CXX_FLAGS="-DDDE_ABI_VERSION=$((abi + 1))"
build_it "$out/example-abi"

# dde::core links: a program encodes and decodes an envelope.
configure "$(dirname "${BASH_SOURCE[0]}")/core_client" "$out/core_client"
build_it "$out/core_client"
answer=$("$out/core_client/dde_core_client") || fail "dde_core_client failed"
[[ $answer == 'shop/orders {"n":1}' ]] || fail "dde_core_client printed \"$answer\""
echo "PASS: SDK installed into $prefix (ABI $abi); example and dde::core client built against it"
