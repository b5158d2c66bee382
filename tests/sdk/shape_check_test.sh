#!/usr/bin/env bash
# deploy/shape-check.sh: the tree keeps within its rules (or its allow list), and the check itself
# finds a long file, a long function, a fat class and a class spread over too many .cpp files, honours
# the allow list and refuses a stale entry.
# Usage: shape_check_test.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$1 work=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

"$src/deploy/shape-check.sh" || fail "the tree breaks deploy/shape-check.sh's rules (see above)"

# A tree of its own: the script, an allow list, one file that breaks three rules, and a class defined
# in three .cpp files.
rm -rf "$work" && mkdir -p "$work/deploy" "$work/mqs/src"
cp "$src/deploy/shape-check.sh" "$work/deploy/"
cd "$work"
git init -q .
{
  echo "struct fat {"
  for i in $(seq 16); do echo "  int m$i = 0;"; done
  echo "};"
  echo "int long_one() {"
  echo "  int x = 0;"
  for _ in $(seq 57); do echo "  ++x;"; done
  echo "  return x;"
  echo "}"
  for i in $(seq 323); do echo "int filler$i();"; done
} > mqs/src/shape.cpp
for part in one two three; do
  printf 'struct wide { void %s(); };\nvoid wide::%s() {}\n' "$part" "$part" > "mqs/src/wide_$part.cpp"
done
echo "# nothing allowed" > deploy/shape-allow.txt
out=$(deploy/shape-check.sh 2>&1) && fail "a tree breaking every rule passed: $out"
for want in "file mqs/src/shape.cpp -: 402 lines" "function mqs/src/shape.cpp long_one: 61 lines" \
            "class mqs/src/shape.cpp fat: 16 data members" \
            "spread mqs/src wide: 3 .cpp files: wide_one.cpp wide_three.cpp wide_two.cpp"; do
  grep -qF "$want" <<<"$out" || fail "no '$want' in: $out"
done

cat > deploy/shape-allow.txt <<'ALLOW'
file mqs/src/shape.cpp - a test file
function mqs/src/shape.cpp long_one a test function
class mqs/src/shape.cpp fat a test record
spread mqs/src wide a test class
ALLOW
deploy/shape-check.sh >/dev/null || fail "the allow list was not honoured"

# One line shorter: within the rule again, so its entry must go.
sed -i '0,/  ++x;/{/  ++x;/d}' mqs/src/shape.cpp
out=$(deploy/shape-check.sh 2>&1) && fail "a stale allow-list entry passed"
grep -q "shape-allow.txt:2: function mqs/src/shape.cpp long_one keeps within its rule now" <<<"$out" ||
  fail "the stale entry was not named: $out"

echo "x" >> deploy/shape-allow.txt
out=$(deploy/shape-check.sh 2>&1) && fail "a malformed allow-list line passed"
grep -q "want 'file|function|class|spread PATH NAME REASON'" <<<"$out" || fail "the malformed line was not named: $out"
echo "PASS: the tree keeps its shape; the check finds each breach and keeps its allow list honest"
