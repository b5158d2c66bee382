#!/usr/bin/env bash
# Every DDE binary answers --version with "<name> <version>" and exit status 0, and --help with exit
# status 0 and a usage that documents --version (one parser, dde::cli, for all of them).
set -euo pipefail
bin="$1" version="$2"
status=0
for program in dde-registry dde-mqs dde-activator dde-isolate-system ddectl; do
  out=$("$bin/$program" --version) || { echo "$program --version exited $?" >&2; status=1; continue; }
  if [[ $out != "$program $version" ]]; then
    echo "$program --version printed '$out', expected '$program $version'" >&2
    status=1
  fi
  help=$("$bin/$program" --help) || { echo "$program --help exited $?" >&2; status=1; continue; }
  grep -q -- "--version" <<<"$help" || { echo "$program --help does not document --version" >&2; status=1; }
done
exit "$status"
