#!/usr/bin/env bash
# Visit J: bfs's and l-sssp's arcs relaxed in batches (relax_slice: a batch's targets, tests,
# claims and pushes each issued together). Binaries: b8 (batches of 8 arcs), b4 (batches of
# 4), base (the landed form, visit I's binary). Part 1: GPU suites (apps, examples) and fuzzed
# schedules on b8, then per binary Table 2's worklist pairs with the yielding forms and a
# periodic task's gathers in the yielding form. Part 2: R-MAT 24's yielding bfs beside
# requests at 30 % load, per binary.
set -u
part=$1
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vJ$part
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
if [ "$part" = 1 ]; then
  for t in test_apps_gpu test_examples_gpu; do
    timeout 120 b8/$t > "$w/$t.log" 2>&1
    note $t $?
    grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
  done
  timeout 80 b8/coop fuzz-schedule --backend cuda --seeds 400 --first 101001 --keep-going > "$w/fuzz.log" 2>&1
  note fuzz $?
  tail -1 "$w/fuzz.log" >> "$w/rc.txt"
  for b in base b8 b4; do
    timeout 60 $b/coop bench --config overhead-yield-worklists.json --out "$w/overhead-$b" > "$w/overhead-$b.log" 2>&1
    note overhead-$b $?
    tail -n 2 "$w/overhead-$b.log" | head -n 1 >> "$w/rc.txt"
  done
  for b in base b8 b4; do
    [ $SECONDS -lt 470 ] || break
    timeout 60 $b/coop bench --config gather-yield-worklists.json --out "$w/gather-$b" --unit-timeout 40 > "$w/gather-$b.log" 2>&1
    note gather-$b $?
  done
else
  for b in base b8 b4; do
    [ $SECONDS -lt 400 ] || break
    timeout 170 $b/coop bench --config colocate-rmat-yield.json --out "$w/rmat-$b" --unit-timeout 165 > "$w/rmat-$b.log" 2>&1
    note rmat-$b $?
    tail -n 2 "$w/rmat-$b.log" | head -n 1 >> "$w/rc.txt"
  done
fi
find "$w" -name results.json -delete
cd "$OUT" && tar czf vJ$part.tgz vJ$part && rm -rf vJ$part && echo done
