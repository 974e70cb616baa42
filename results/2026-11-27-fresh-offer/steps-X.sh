#!/usr/bin/env bash
# Visit X, two commands on one machine: `steps-X.sh 1` (the GPU suites and fuzzing on new, the
# micro-benchmarks on both) and `steps-X.sh 2` (the R-MAT and contrast gathers in the yielding
# form, interleaved, and Table 2 with the yielding forms). base: the landed build (cab0c5b);
# new: coop::for_each's offer votes on a request word reloaded after a chunk over two intervals.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vX$1
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
if [ "$1" = 1 ]; then
  for t in test_for_each_gpu test_apps_gpu test_semantics_gpu test_device_protocol test_cuda_runtime test_shutdown_gpu test_recipes_gpu test_examples_gpu; do
    timeout 150 new/$t > "$w/$t.log" 2>&1
    note $t $?
    grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
  done
  timeout 120 new/coop fuzz-schedule --backend cuda --seeds 400 --first 171001 --keep-going > "$w/fuzz.log" 2>&1
  note fuzz $?
  tail -n 2 "$w/fuzz.log" >> "$w/rc.txt"
  for b in base new; do
    timeout 60 $b/coop_bench_gpu --only loop --reps 10 --json "$w/loop-$b.json" > "$w/loop-$b.log" 2>&1
    note loop-$b $?
    timeout 60 $b/coop_bench_gpu --only offer --reps 10 --json "$w/offer-$b.json" > "$w/offer-$b.log" 2>&1
    note offer-$b $?
  done
else
  for b in base new base new; do
    n=1; [ -d "$w/gather-yield-rmat-40-$b-1" ] && n=2
    timeout 100 $b/coop bench --config gather-yield-rmat-40.json --out "$w/gather-yield-rmat-40-$b-$n" --unit-timeout 45 > "$w/gather-yield-rmat-40-$b-$n.log" 2>&1
    note gather-yield-rmat-40-$b-$n $?
  done
  for b in new base; do
    timeout 60 $b/coop bench --config gather-yield-contrast-40.json --out "$w/gather-yield-contrast-40-$b" --unit-timeout 30 > "$w/gather-yield-contrast-40-$b.log" 2>&1
    note gather-yield-contrast-40-$b $?
  done
  for b in new base; do
    timeout 140 $b/coop bench --config overhead-yield.json --out "$w/overhead-$b" > "$w/overhead-$b.log" 2>&1
    note overhead-$b $?
  done
fi
find "$w" -name results.json -delete
cd "$OUT" && tar czf vX$1.tgz vX$1 && rm -rf vX$1 && echo done
