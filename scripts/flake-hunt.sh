#!/usr/bin/env bash
# Run the README's test command again and again, as a newcomer would, to find flaky tests.
#
#   bash scripts/flake-hunt.sh [-n RUNS] [--load] [--fresh] [-- PYTEST ARGS...]
#
#   -n RUNS   how many consecutive runs (default 5)
#   --load    one more run with a CPU-bound process pinned to core 0 (taskset), as a
#             busy machine has: thread contention must change what the product says, not
#             whether the tests pass
#   --fresh   run in a fresh clone of this checkout's HEAD (set up with scripts/setup.sh),
#             not in this working tree
#   PYTEST ARGS  run only these tests each time (e.g. one test 10 times:
#             bash scripts/flake-hunt.sh -n 10 -- tests/worker/test_cli.py::test_profile_text_runs_every_directive)
#
# Prints one line per run (pass/fail, time, the failed tests) and a summary; logs in
# test-output/flake-hunt/. Exits 1 when any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."

RUNS=5 LOAD=0 FRESH=0
while [ $# -gt 0 ]; do
  case "$1" in
    -n) RUNS="$2"; shift 2 ;;
    --load) LOAD=1; shift ;;
    --fresh) FRESH=1; shift ;;
    --) shift; break ;;
    *) echo "flake-hunt: unknown argument $1 (see the header of this script)" >&2; exit 2 ;;
  esac
done
LOGS="$PWD/test-output/flake-hunt"
mkdir -p "$LOGS"

WORK="$PWD"
if [ "$FRESH" = 1 ]; then
  WORK="$(mktemp -d)/torchscope"
  git clone -q "$PWD" "$WORK" && (cd "$WORK" && bash scripts/setup.sh >"$LOGS/setup.log" 2>&1) \
    || { echo "flake-hunt: setting up the fresh clone failed (see $LOGS/setup.log)" >&2; exit 1; }
fi

failed=0
run_once() {  # $1: label, then the pytest arguments
  local label="$1" log="$LOGS/$1.log" start end rc
  shift
  start=$(date +%s)
  (cd "$WORK" && bash scripts/test.sh "$@" ) >"$log" 2>&1
  rc=$?
  end=$(date +%s)
  local tail
  tail=$(grep -E "^(FAILED|ERROR) " "$log" | sed 's/ - .*//' | tr '\n' ' ')
  printf '%-8s %s  %4ds  %s\n' "$label" "$([ $rc = 0 ] && echo pass || echo FAIL)" $((end - start)) "$tail"
  [ $rc = 0 ] || failed=$((failed + 1))
}

for i in $(seq 1 "$RUNS"); do
  run_once "run$i" "$@"
done
if [ "$LOAD" = 1 ]; then
  command -v taskset >/dev/null || { echo "flake-hunt: --load needs taskset (util-linux)" >&2; exit 2; }
  taskset -c 0 python3 -c "while True: pass" &
  hog=$!
  trap 'kill $hog 2>/dev/null' EXIT
  run_once "loaded" "$@"
  kill "$hog" 2>/dev/null
fi
total=$((RUNS + LOAD))
echo "flake-hunt: $((total - failed)) of $total runs passed (logs in $LOGS)"
[ "$failed" = 0 ]
