#!/usr/bin/env bash
# Visit G. Binaries: "new" (.): the worklist pushes through coop::fetch_increment, worklist
# entries of at most 32 arcs, and for_each timing a chunk from one broadcast to the next (its
# slowest thread) to size its claims; "untimed": the same without the last (for_each as landed
# before); "orig": the apps as landed before this session (f8315fd, with this session's bench).
# Part 1: the loop benchmark and the GPU suites on new, fuzzed schedules, a periodic task's
# gathers in the yielding form (new, untimed), Table 2 with the yielding forms (new, orig).
# Part 2: R-MAT 24's bfs beside requests at 30 % load: the yielding and the paper form on new,
# the yielding form on untimed.
set -u
part=$1
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vG$part
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
bin() { case $1 in new) echo ./coop ;; *) echo "$1/coop" ;; esac; }
if [ "$part" = 1 ]; then
  timeout 60 ./coop_bench_gpu --only loop --reps 5 --json "$w/loop.json" > "$w/loop.log" 2>&1
  note loop $?
  for t in test_semantics_gpu test_for_each_gpu test_apps_gpu test_examples_gpu; do
    timeout 120 ./$t > "$w/$t.log" 2>&1
    note $t $?
    grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
  done
  timeout 80 ./coop fuzz-schedule --backend cuda --seeds 400 --first 97001 --keep-going > "$w/fuzz.log" 2>&1
  note fuzz $?
  tail -1 "$w/fuzz.log" >> "$w/rc.txt"
  for b in new untimed; do
    timeout 100 $(bin $b) bench --config gather-yield.json --out "$w/gather-$b" --unit-timeout 40 > "$w/gather-$b.log" 2>&1
    note gather-$b $?
  done
  for b in new orig; do
    [ $SECONDS -lt 480 ] || break
    timeout 110 $(bin $b) bench --config overhead-yield.json --out "$w/overhead-$b" > "$w/overhead-$b.log" 2>&1
    note overhead-$b $?
    tail -n 2 "$w/overhead-$b.log" >> "$w/rc.txt"
  done
else
  timeout 250 ./coop bench --config colocate-rmat-both.json --out "$w/rmat-new" --unit-timeout 165 > "$w/rmat-new.log" 2>&1
  note rmat-new $?
  tail -n 3 "$w/rmat-new.log" | head -n 2 >> "$w/rc.txt"
  timeout 170 untimed/coop bench --config colocate-rmat-yield.json --out "$w/rmat-untimed" --unit-timeout 165 > "$w/rmat-untimed.log" 2>&1
  note rmat-untimed $?
  tail -n 2 "$w/rmat-untimed.log" | head -n 1 >> "$w/rc.txt"
fi
find "$w" -name results.json -delete
cd "$OUT" && tar czf vG$part.tgz vG$part && rm -rf vG$part && echo done
