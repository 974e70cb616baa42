#!/usr/bin/env bash
# Visit A: coop::for_each with the claim answered after the chunk, the next epoch's word reset
# ahead and a size hint ("new") against HEAD 500d491 ("old"): the loop benchmark alternating,
# the GPU suites that run for_each, fuzzed schedules (yielding forms included), Table 2 with the
# yielding forms for both, R-MAT 24's yielding bfs beside requests (new). Visit B ran the same
# script (its output folder vB) on the tree with the hint replaced by a share of the range and
# empty loops returning at once.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vA
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for r in 1 2; do
  for b in new old; do
    d=.; [ $b = old ] && d=old
    timeout 60 $d/coop_bench_gpu --only loop --reps 5 --json "$w/loop-$b-$r.json" > "$w/loop-$b-$r.log" 2>&1
    note loop-$b-$r $?
  done
done
for t in test_for_each_gpu test_apps_gpu test_examples_gpu; do
  timeout 100 ./$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 80 ./coop fuzz-schedule --backend cuda --seeds 1000 --first 60001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -1 "$w/fuzz.log" >> "$w/rc.txt"
for b in new old; do
  d=.; [ $b = old ] && d=old
  timeout 150 $d/coop bench --config "$here/overhead-yield.json" --out "$w/overhead-$b" > "$w/overhead-$b.log" 2>&1
  note overhead-$b $?
  tail -n 2 "$w/overhead-$b.log" >> "$w/rc.txt"
done
if [ $SECONDS -lt 400 ]; then
  timeout 170 ./coop bench --config "$here/colocate-rmat-yield.json" --out "$w/rmat-new" --unit-timeout 160 > "$w/rmat-new.log" 2>&1
  note rmat-new $?
fi
cd "$OUT" && tar czf vA.tgz vA && echo done
