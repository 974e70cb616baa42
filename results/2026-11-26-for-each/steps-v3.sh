#!/usr/bin/env bash
# Visit V3, run from build/kit: the fix (workgroup 0's pause as a loop after the barrier and
# after a declined offer, nothing of it in a function call) against 3f96761 (pre_pause_*), Table
# 2 and the barrier and offer micro-benchmarks interleaved; then the GPU suites.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib COOP_TEST_DATA_DIR=$PWD/data
w=$OUT/v3
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for tree in new pre_pause; do
  bin=./coop; micro=./coop_bench_gpu
  [ $tree = pre_pause ] && bin=./pre_pause_coop && micro=./pre_pause_coop_bench_gpu
  for part in barrier offer; do
    timeout 60 $micro --only $part --reps 10 --json "$w/micro-$part-$tree.json" \
      > "$w/micro-$part-$tree.log" 2>&1
    note "micro-$part-$tree" $?
  done
  timeout 110 $bin bench --config paper --only overhead --out "$w/ov-$tree" > "$w/ov-$tree.log" 2>&1
  note "ov-$tree" $?
  tail -n 2 "$w/ov-$tree.log" | head -n 1 >> "$w/rc.txt"
done
for t in test_semantics_gpu test_for_each_gpu test_apps_gpu test_cuda_runtime test_device_protocol \
         test_shutdown_gpu test_recipes_gpu test_examples_gpu; do
  timeout 100 ./$t > "$w/$t.log" 2>&1
  note "$t" $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" >> "$w/rc.txt"
done
cd "$OUT" && tar czf v3.tgz v3 && rm -rf v3 && echo done
