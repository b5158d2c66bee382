#!/usr/bin/env bash
# The C++ habits the test suite holds the tree to:
#   deploy/lint.sh format [--fix]        every tracked .cpp/.hpp/.h is as clang-format writes it
#                                        (.clang-format); --fix rewrites those that are not
#   deploy/lint.sh tidy BUILD [FILE...]  clang-tidy (.clang-tidy, warnings are errors) on FILEs, by
#                                        default the .cpp files of the daemons and libraries changed
#                                        by the last commit; BUILD holds compile_commands.json
# Exit 0 when clean, 1 with the offending files (and clang-tidy's findings) on stderr, 2 on misuse.
set -euo pipefail
self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
root="$(dirname "$(dirname "$self")")"
usage() { sed -n '2,8p' "$self" | sed 's/^# \{0,1\}//' >&2; exit 2; }
need() { command -v "$1" >/dev/null || { echo "lint: $1 is not installed (apt-get install $2)" >&2; exit 2; }; }

case ${1:-} in
  format)
    need clang-format clang-format
    cd "$root"
    fix=${2:-}
    [[ -z $fix || $fix == --fix ]] || usage
    mapfile -t files < <(git ls-files -co --exclude-standard -- '*.cpp' '*.hpp' '*.h' |
      while read -r f; do [[ -f $f ]] && echo "$f"; done)
    if [[ -n $fix ]]; then
      clang-format -i "${files[@]}"
      exit 0
    fi
    # One run over every file: it names each place that differs as "FILE:LINE:COL: error: ...".
    mapfile -t bad < <(clang-format --dry-run -Werror "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
    if ((${#bad[@]})); then
      printf 'not as clang-format writes it: %s\n' "${bad[@]}" >&2
      echo "lint: ${#bad[@]} of ${#files[@]} files; deploy/lint.sh format --fix rewrites them" >&2
      exit 1
    fi
    echo "lint: ${#files[@]} files as clang-format writes them"
    ;;
  tidy)
    need clang-tidy clang-tidy
    build=${2:-}
    [[ -n $build && -f $build/compile_commands.json ]] || { echo "lint: no compile_commands.json in '$build'" >&2; usage; }
    build=$(cd "$build" && pwd)
    shift 2
    files=()
    for f in "$@"; do files+=("$(realpath --relative-to="$root" "$f")"); done
    cd "$root"
    if ((${#files[@]} == 0)); then
      mapfile -t files < <(git diff --name-only --diff-filter=AM HEAD~1 HEAD -- \
        'framework/*.cpp' 'mqs/*.cpp' 'registry/*.cpp' 'activator/*.cpp' 2>/dev/null || true)
    fi
    if ((${#files[@]} == 0)); then
      echo "lint: no daemon or library .cpp changed by the last commit"
      exit 0
    fi
    # Only the project's own headers are reported (third-party ones are -isystem or outside the tree).
    clang-tidy -p "$build" --quiet --warnings-as-errors='*' \
      --header-filter="^$root/(framework|mqs|registry|activator)/" "${files[@]}" 2>/dev/null ||
      { echo "lint: clang-tidy found the above in ${#files[@]} file(s)" >&2; exit 1; }
    echo "lint: clang-tidy clean on ${#files[@]} file(s)"
    ;;
  *) usage ;;
esac
