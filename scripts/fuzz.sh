#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz in ./build-asan
# (scripts/asan-build.sh: clang, AddressSanitizer + UndefinedBehaviorSanitizer,
# warnings as errors) and runs each one for FUZZ_SECONDS seconds (default 60)
# on a scratch copy of its seed corpus tests/fuzz/corpus/<name>/, so the
# repository is left as it was. Exits non-zero if a target crashed, hung
# (25 s on one input), leaked, ran out of memory or broke one of its checks,
# and names the input that reproduces it.
#
#   scripts/fuzz.sh                      every target, 60 s each
#   FUZZ_SECONDS=20 scripts/fuzz.sh      what scripts/test.sh runs
#   scripts/fuzz.sh http_parser config   only these targets
#
# Time: the number of targets (9) times FUZZ_SECONDS plus a few seconds each,
# divided by the number of cores (one target per core at a time), and the
# first build (about 3 minutes on 2 cores; none after scripts/sanitize.sh,
# which builds the same directory).
# Reproduce a finding: build-asan/tests/fuzz/fuzz_<name> <input file>.
# Logs: build-asan/fuzz-logs/<name>.log; findings: build-asan/fuzz-findings/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}

echo "== fuzzing (clang, libFuzzer, address;undefined), ${seconds} s per target"
scripts/asan-build.sh fuzzers

scratch=$(mktemp -d "${TMPDIR:-/tmp}/snowid-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p build-asan/fuzz-logs build-asan/fuzz-findings

# Runs one target; its report line goes to $scratch/report-<name>, and
# $scratch/failed-<name> exists if it found a problem.
run_target() {
  local name=$1 max_len=$2 dict=$3
  local corpus=$scratch/corpus/$name log=build-asan/fuzz-logs/$name.log report=$scratch/report-$name
  mkdir -p "$corpus" "$scratch/tmp/$name"
  cp -R "tests/fuzz/corpus/$name/." "$corpus/"
  local args=(-max_total_time="$seconds" -max_len="$max_len" -timeout=25 -rss_limit_mb=2048
              -print_final_stats=1 -artifact_prefix="build-asan/fuzz-findings/$name-")
  [[ -n $dict ]] && args+=(-dict="tests/fuzz/$dict")
  # TMPDIR: the targets' own scratch files (state directories, SQLite, TOML).
  if TMPDIR=$scratch/tmp/$name build-asan/tests/fuzz/fuzz_"$name" "${args[@]}" "$corpus" \
      </dev/null >"$log" 2>&1; then
    local runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz_$name: ok, ${runs:-?} inputs in ${seconds} s, $(grep -o 'cov: [0-9]*' "$log" | tail -1)" \
      >"$report"
  else
    touch "$scratch/failed-$name"
    {
      echo "fuzz_$name: FAILED (log: $log)"
      grep -E '^(==[0-9]+==ERROR|SUMMARY|.*expectation failed|.*runtime error)' "$log" | head -5 || true
      grep -o 'Test unit written to .*' "$log" | sed 's/^Test unit written to /reproducer: /' || true
    } >"$report"
  fi
}

# One target per core at a time: each libFuzzer process uses one.
failed=()
ran=()
while read -r name max_len dict; do
  [[ -z $name || $name == \#* ]] && continue
  if [[ $# -gt 0 && " $* " != *" $name "* ]]; then continue; fi
  ran+=("$name")
  while [[ $(jobs -rp | wc -l) -ge $(nproc) ]]; do wait -n || true; done
  run_target "$name" "$max_len" "$dict" &
done < build-asan/tests/fuzz/fuzz_targets.txt
wait
for name in "${ran[@]}"; do
  cat "$scratch/report-$name"
  [[ -e $scratch/failed-$name ]] && failed+=("$name")
done

for name in "$@"; do
  if [[ " ${ran[*]} " != *" $name "* ]]; then
    echo "no fuzz target named $name (see build-asan/tests/fuzz/fuzz_targets.txt)"
    failed+=("$name")
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzzing found problems in: ${failed[*]}"
  exit 1
fi
