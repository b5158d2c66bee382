#!/usr/bin/env bash
# Holds the code's shape in the daemons and libraries (framework/, mqs/, registry/, activator/):
#   - no source file over 400 lines,
#   - no function over 60 lines,
#   - no class or struct with more than 15 data members,
#   - no class whose member functions are defined in more than 2 .cpp files (a class that needs more
#     holds more than one job: its parts become classes of their own),
# except what deploy/shape-allow.txt lists, each with the reason it is allowed. An allowed entry that
# no longer breaks its rule is an error too (take it off the list), so the list only shrinks.
#   deploy/shape-check.sh [--list]   --list: print every breach, allowed or not, and exit 0
# Functions and members are read by universal-ctags (its end lines and scopes); lambdas count
# toward the function that holds them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
command -v ctags >/dev/null && ctags --version 2>/dev/null | grep -q "Universal Ctags" ||
  { echo "shape-check: universal-ctags is not installed (apt-get install universal-ctags)" >&2; exit 2; }
cd "$root"
exec python3 - "$@" <<'EOF'
import collections, json, os, subprocess, sys

max_file_lines, max_function_lines, max_members, max_spread = 400, 60, 15, 2
listing = "--list" in sys.argv[1:]
dirs = ["framework", "mqs", "registry", "activator"]
files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "--"] +
                       [f"{d}/**.{e}" for d in dirs for e in ("cpp", "hpp")],
                       check=True, capture_output=True, text=True).stdout.split()
tags = subprocess.run(["ctags", "--output-format=json", "--fields=+neKZ", "--kinds-c++=fm",
                       "-f", "-"] + files, check=True, capture_output=True, text=True).stdout

breaches = {}  # (rule, path, name) -> what was measured
for path in files:
    with open(path, encoding="utf-8") as f:
        n = sum(1 for _ in f)
    if n > max_file_lines:
        breaches[("file", path, "-")] = f"{n} lines"
members = collections.Counter()
defined_in = collections.defaultdict(set)  # class -> the .cpp files that define its member functions
for line in tags.splitlines():
    t = json.loads(line)
    if t["kind"] == "function" and t.get("scopeKind") in ("class", "struct") and t["path"].endswith(".cpp"):
        defined_in[t["scope"]].add(t["path"])
    if t["kind"] == "function" and "end" in t:
        n = t["end"] - t["line"] + 1
        if n > max_function_lines:
            name = (t["scope"] + "::" if t.get("scope") else "") + t["name"]
            breaches[("function", t["path"], name)] = f"{n} lines"
    elif t["kind"] == "member" and t.get("scopeKind") in ("class", "struct"):
        members[(t["path"], t["scope"])] += 1
for (path, scope), n in members.items():
    if n > max_members:
        breaches[("class", path, scope)] = f"{n} data members"
for scope, paths in defined_in.items():
    if len(paths) > max_spread:
        breaches[("spread", os.path.commonpath(sorted(paths)), scope)] = \
            f"{len(paths)} .cpp files: " + " ".join(sorted(os.path.basename(p) for p in paths))

# Anonymous namespaces get a generated name (__anon...) that changes with the file: compare without it.
def key(rule, path, name):
    return (rule, path, "::".join(p for p in name.split("::") if not p.startswith("__anon")))

allowed = {}
with open("deploy/shape-allow.txt", encoding="utf-8") as f:
    for number, line in enumerate(f, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(None, 3)
        if len(fields) < 4 or fields[0] not in ("file", "function", "class", "spread") or not fields[3].strip():
            sys.exit(f"deploy/shape-allow.txt:{number}: want 'file|function|class|spread PATH NAME REASON', got: {line}")
        allowed[key(*fields[:3])] = number

failed = False
for b, measured in sorted(breaches.items()):
    rule, path, name = key(*b)
    is_allowed = (rule, path, name) in allowed
    if listing:
        print(f"{'allowed ' if is_allowed else 'BREACH  '} {rule:8} {path} {name}: {measured}")
    elif not is_allowed:
        print(f"shape-check: {rule} {path} {name}: {measured} (at most {dict(file=max_file_lines, function=max_function_lines, spread=max_spread, **{'class': max_members})[rule]})")
        failed = True
found = {key(*b) for b in breaches}
for k, number in sorted(allowed.items(), key=lambda kv: kv[1]):
    if k not in found:
        print(f"shape-check: deploy/shape-allow.txt:{number}: {' '.join(k)} keeps within its rule now: take it off the list")
        failed = not listing or failed
if listing:
    sys.exit(0)
if failed:
    sys.exit(1)
print(f"shape-check: {len(files)} files; {len(breaches)} breaches, each on the allow list")
EOF
