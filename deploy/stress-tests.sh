#!/usr/bin/env bash
# Runs tests N times beside a CPU-burning neighbour (one busy loop per core, at the tests' own
# priority) and reports each test's pass count: a test that fails only under load is a bug, in the
# test or in DDE. Uses the built tree as it is (deploy/build.sh first).
#
#   deploy/stress-tests.sh [-n ROUNDS] [-L LABEL] [-R REGEX] [-E EXCLUDE] [-j JOBS] [--no-burn]
#                          [--continue]
#
# Defaults: 20 rounds of the rmq-labelled tests, ctest -j2, a burner per core. The packaging/SDK
# tests that hold the build tree's lock are excluded unless -E says otherwise (they rebuild nothing
# a stressed run could race on, but take minutes each). Each round's ctest output is kept in
# <build>/stress/round-N.log (its tests' files in round-N-test-tmp when one failed), headed by the
# code it ran (a hash of every tracked file but the *.md ones and this script) and the selection.
# Prints each test's passes out of its runs at the end; exits 1 when any test passed fewer than
# ROUNDS times.
# --continue keeps the rounds already in <build>/stress that ran the same code and selection and
# runs only the rest, so a long proof can be spread over several invocations (an interrupted one
# loses only its unfinished round); without it, old rounds are removed first. A proof is re-run on
# the code it is about, not archived: the round logs stay in the build tree.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

rounds=20 label=rmq regex="" exclude="tutorial_test|sdk_example_rmqtest" jobs=2 burn=1 resume=0
while (($#)); do
  case $1 in
    -n) rounds=$2; shift 2 ;;
    -L) label=$2; shift 2 ;;
    -R) regex=$2; shift 2 ;;
    -E) exclude=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    --no-burn) burn=0; shift ;;
    --continue) resume=1; shift ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "stress-tests.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "stress-tests.sh: -n wants a positive count, got '$rounds'" >&2; exit 2; }

build_dir="${DDE_BUILD_DIR:-$DDE_ROOT/build}"
selection=(-L "$label")
[[ -n $regex ]] && selection+=(-R "$regex")
[[ -n $exclude ]] && selection+=(-E "$exclude")
[[ -f $build_dir/CTestTestfile.cmake ]] || { echo "stress-tests.sh: no build in $build_dir (run deploy/build.sh)" >&2; exit 2; }
# deploy/build.sh does not install the browser test's playwright-core. Without it
# dashboard_browsertest fails at once in every round, which says nothing about load.
# (The listing is read whole first: `ctest | grep -q` under pipefail fails when grep stops at the
# first match and ctest gets SIGPIPE, which skipped the install.)
chosen=$(ctest --test-dir "$build_dir" -N "${selection[@]}" 2>/dev/null || true)
if [[ $chosen == *browsertest* ]] && ! dde_browser_deps; then
  echo "stress-tests.sh: cannot install playwright-core in tests/browser (node and npm needed; deploy/install-deps.sh installs them)" >&2
  exit 2
fi
out_dir="$build_dir/stress"
mkdir -p "$out_dir"

# What a round ran: the code (tracked files but docs and this script; uncommitted changes to them
# make it "dirty", which --continue never resumes) and the tests chosen.
not_code=(':!:*.md' ':!:deploy/stress-tests.sh')
code=$(git -C "$DDE_ROOT" ls-files -s -- . "${not_code[@]}" | sha1sum | cut -c1-12)
[[ -z $(git -C "$DDE_ROOT" status --porcelain -- . "${not_code[@]}") ]] || code+=-dirty
header="# stress round: code $code; -L '$label' -R '$regex' -E '$exclude' -j $jobs burn=$burn"
if ((resume)); then
  [[ $code != *-dirty ]] || dde_die "--continue: the checkout has uncommitted changes, so its rounds cannot be told apart"
else
  rm -rf "$out_dir"/round-*.log "$out_dir"/round-*-test-tmp
fi
rm -f "$out_dir"/round-*.log.part

burners=()
# shellcheck disable=SC2317  # called by the EXIT trap
stop_burners() { ((${#burners[@]})) && kill "${burners[@]}" 2>/dev/null; true; }
trap stop_burners EXIT
if ((burn)); then
  for ((i = 0; i < $(nproc); i++)); do
    bash -c 'while :; do :; done' &
    burners+=($!)
  done
  dde_log "burning ${#burners[@]} cores beside the tests (pids ${burners[*]})"
fi

declare -A passed=() ran=()
started=$SECONDS
for ((round = 1; round <= rounds; round++)); do
  log="$out_dir/round-$round.log" kept=0
  if [[ -f $log ]]; then
    [[ $(head -n 1 "$log") == "$header" ]] ||
      dde_die "$log ran other code or tests ($(head -n 1 "$log")); now: $header. Run without --continue to start again"
    kept=1
  else
    # Written aside and renamed when whole, so a round cut short is never kept.
    { echo "$header"; echo "# started $(date -u '+%F %T') UTC on $(hostname) ($(nproc) cores)"; ctest --test-dir "$build_dir" "${selection[@]}" -j"$jobs" --output-on-failure 2>&1; } >"$log.part" || true
    mv "$log.part" "$log"
  fi
  # ctest's summary lines: " 3/21 Test  #7: backbone_rmqtest ...........   Passed  88.2 sec"
  while read -r name verdict; do
    ran[$name]=$((${ran[$name]:-0} + 1))
    [[ $verdict == Passed ]] && passed[$name]=$((${passed[$name]:-0} + 1))
  done < <(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.+ *(\*\*\*)?([A-Za-z]+).*/\1 \3/p' "$log")
  failed_now=$(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.+ *\*\*\*.*/\1/p' "$log" | tr '\n' ' ')
  # Each test leaves its brokers' data under test-tmp (about 8 GB a round here): a passing round's goes,
  # a failing round's is kept beside its log for the diagnosis.
  if ((!kept)) && [[ -d $build_dir/test-tmp ]]; then
    if [[ -n $failed_now ]]; then
      rm -rf "$out_dir/round-$round-test-tmp"
      mv "$build_dir/test-tmp" "$out_dir/round-$round-test-tmp"
    else
      rm -rf "$build_dir/test-tmp"
    fi
  fi
  ((!kept)) || { dde_log "round $round/$rounds kept from an earlier run${failed_now:+; failed: $failed_now}"; continue; }
  dde_log "round $round/$rounds done after $(((SECONDS - started) / 60)) min${failed_now:+; failed: $failed_now (see $log and $out_dir/round-$round-test-tmp)}"
done

status=0
printf '\n%-32s %s\n' "test" "passed/runs (of $rounds rounds, burn=$burn)"
for name in $(printf '%s\n' "${!ran[@]}" | sort); do
  p=${passed[$name]:-0}
  printf '%-32s %d/%d\n' "$name" "$p" "${ran[$name]}"
  ((p == rounds)) || status=1
done
((${#ran[@]})) || { echo "no test ran: check -L/-R/-E" >&2; status=1; }
exit "$status"
