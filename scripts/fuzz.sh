#!/usr/bin/env bash
# Parser fuzzing: builds the libFuzzer targets of the graph readers (graph/fuzz/, clang, ASan + UBSan)
# in build/fuzz and runs each in turn, niced, on a scratch copy of its seed corpus.
#
#   bash scripts/fuzz.sh [SECONDS] [READER ...]   # SECONDS per reader, default 600
#   bash scripts/fuzz.sh --smoke [READER ...]     # 15 seconds per reader (CI)
#
# READERs: dimacs metis matrix_market galois_binary binary read_graph (default: all).
# The corpus grows in build/fuzz/corpus/<reader> (seeded from graph/fuzz/corpus/<reader>, which is never
# modified; delete build/fuzz/corpus to start over). Crashes, timeouts and out-of-memory inputs go
# to build/fuzz/findings/<reader>/; the script prints a line per reader and exits non-zero when any
# reader found something. Reproduce one with build/fuzz/graph/fuzz/fuzz_<reader> FILE.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=600
readers=()
for arg in "$@"; do
  case "$arg" in
    --smoke) seconds=15 ;;
    -h | --help)
      awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"
      exit 0
      ;;
    *[!0-9]*) readers+=("$arg") ;;
    *) seconds="$arg" ;;
  esac
done
all=(dimacs metis matrix_market galois_binary binary read_graph)
((${#readers[@]})) || readers=("${all[@]}")
for r in "${readers[@]}"; do
  [[ " ${all[*]} " == *" $r "* ]] || { echo "fuzz.sh: unknown reader '$r' (${all[*]})" >&2; exit 2; }
done

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (bash scripts/setup-debian.sh)" >&2; exit 2; }
build=build/fuzz
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCOOP_FUZZ=ON -DCOOP_ENABLE_CUDA=OFF -DCOOP_BUILD_TESTS=OFF -DCOOP_BUILD_TOOLS=OFF >/dev/null
nice -n 19 cmake --build "$build" --target coop_fuzz_targets

# read_graph sees every format: its dictionary is all of them.
cat graph/fuzz/*.dict >"$build/read_graph.dict"

mkdir -p "$build/corpus" "$build/findings" "$build/logs"
status=0
summary=()
for r in "${readers[@]}"; do
  corpus=$build/corpus/$r findings=$build/findings/$r log=$build/logs/$r.log
  dict=graph/fuzz/$r.dict
  [[ -f $dict ]] || dict=$build/read_graph.dict
  mkdir -p "$corpus" "$findings"
  cp -n graph/fuzz/corpus/$r/* "$corpus"/ 2>/dev/null || true
  before=$(find "$findings" -type f | wc -l)
  echo "== fuzz_$r: ${seconds}s, corpus $corpus, log $log"
  rc=0
  nice -n 19 "$build/graph/fuzz/fuzz_$r" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -timeout=10 -dict="$dict" -artifact_prefix="$findings/" \
    -print_final_stats=1 "$corpus" >"$log" 2>&1 &
  pid=$!
  wait $pid || rc=$?
  # The target's scratch folder (graph/fuzz/fuzz_common.hpp), left behind when it died on a finding.
  rm -rf "${TMPDIR:-/dev/shm}/coop-fuzz-$pid" "/tmp/coop-fuzz-$pid"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  files=$(find "$corpus" -type f | wc -l)
  bytes=$(find "$corpus" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
  new=$(($(find "$findings" -type f | wc -l) - before))
  if ((rc != 0 || new > 0)); then
    status=1
    result="FOUND (exit $rc): $(ls -t "$findings" | head -n "$((new > 0 ? new : 1))" | tr '\n' ' ')"
    grep -E '^==[0-9]+==|FINDING|runtime error|ERROR: libFuzzer|SUMMARY' "$log" | head -8 || true
  else
    result="nothing found"
  fi
  line=$(printf '%-14s %6ss %12s execs  corpus %5s files %9s bytes  %s' "$r" "$seconds" \
    "${execs:-?}" "$files" "$bytes" "$result")
  echo "$line"
  summary+=("$line")
done
echo
echo "== parser fuzzing summary (findings in $build/findings, logs in $build/logs)"
printf '%s\n' "${summary[@]}"
exit $status
