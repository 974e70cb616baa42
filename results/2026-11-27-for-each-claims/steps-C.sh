#!/usr/bin/env bash
# Visit C: "new" with the second claim at a share of the range capped at 4 grains, against HEAD
# 500d491 ("old"): the loop benchmark, the GPU suites that run for_each, fuzzed schedules
# (yielding forms included), Table 2 with the yielding forms, and R-MAT 24's yielding bfs beside
# requests at 30 % load, new then old.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vC
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for b in new old; do
  d=.; [ $b = old ] && d=old
  timeout 60 $d/coop_bench_gpu --only loop --reps 5 --json "$w/loop-$b.json" > "$w/loop-$b.log" 2>&1
  note loop-$b $?
done
for t in test_for_each_gpu test_apps_gpu test_examples_gpu; do
  timeout 100 ./$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 80 ./coop fuzz-schedule --backend cuda --seeds 1000 --first 70001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -1 "$w/fuzz.log" >> "$w/rc.txt"
timeout 150 ./coop bench --config "$here/overhead-yield.json" --out "$w/overhead-new" > "$w/overhead-new.log" 2>&1
note overhead-new $?
tail -n 2 "$w/overhead-new.log" >> "$w/rc.txt"
for b in new old; do
  d=.; [ $b = old ] && d=old
  [ $SECONDS -lt 440 ] || break
  timeout 150 $d/coop bench --config "$here/colocate-rmat-yield.json" --out "$w/rmat-$b" --unit-timeout 145 > "$w/rmat-$b.log" 2>&1
  note rmat-$b $?
  tail -n 2 "$w/rmat-$b.log" | head -n 1 >> "$w/rc.txt"
done
cd "$OUT" && tar czf vC.tgz vC && echo done
