#!/usr/bin/env bash
# Visit E. Binaries: "new" (.): the tree with the worklist apps' pushes through
# coop::fetch_increment (the lanes of a warp share one atomic add) and multitasking's
# yield_in_phases; "noagg": the same tree with bfs's and l-sssp's pushes one atomic add per
# lane, as before; "share": new with for_each's second claim at a share of the range (at most 4
# grains). Part 1: the loop benchmark and the GPU suites on new (the for_each register trim's
# first GPU run), fuzzed schedules, a periodic task's gathers in the yielding form, Table 2 with
# the yielding forms. Part 2: R-MAT 24's yielding bfs beside requests at 30 % load, each binary.
set -u
part=$1
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vE$part
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
bin() { case $1 in new) echo ./coop ;; *) echo "$1/coop" ;; esac; }
if [ "$part" = 1 ]; then
  timeout 60 ./coop_bench_gpu --only loop --reps 5 --json "$w/loop.json" > "$w/loop.log" 2>&1
  note loop $?
  for t in test_for_each_gpu test_apps_gpu test_examples_gpu; do
    timeout 100 ./$t > "$w/$t.log" 2>&1
    note $t $?
    grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
  done
  timeout 80 ./coop fuzz-schedule --backend cuda --seeds 400 --first 90001 --keep-going > "$w/fuzz.log" 2>&1
  note fuzz $?
  tail -1 "$w/fuzz.log" >> "$w/rc.txt"
  for b in new noagg share; do
    c=gather-yield.json; [ $b = noagg ] && c=gather-yield-worklists.json
    timeout 100 $(bin $b) bench --config $c --out "$w/gather-$b" --unit-timeout 40 > "$w/gather-$b.log" 2>&1
    note gather-$b $?
  done
  for b in new share noagg; do
    c=overhead-yield.json; [ $b = noagg ] && c=overhead-yield-worklists.json
    [ $SECONDS -lt 500 ] || break
    timeout 110 $(bin $b) bench --config $c --out "$w/overhead-$b" > "$w/overhead-$b.log" 2>&1
    note overhead-$b $?
    tail -n 2 "$w/overhead-$b.log" >> "$w/rc.txt"
  done
else
  for b in new noagg share; do
    [ $SECONDS -lt 420 ] || break
    timeout 170 $(bin $b) bench --config colocate-rmat-yield.json --out "$w/rmat-$b" --unit-timeout 165 > "$w/rmat-$b.log" 2>&1
    note rmat-$b $?
    tail -n 2 "$w/rmat-$b.log" | head -n 1 >> "$w/rc.txt"
  done
fi
find "$w" -name results.json -delete
cd "$OUT" && tar czf vE$part.tgz vE$part && rm -rf vE$part && echo done
