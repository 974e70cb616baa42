#!/usr/bin/env bash
# Visit V: the request word relayed from host memory by workgroup 0 (new) against the landed
# build (base: e9fdac8). The GPU suites on new (the runtime's with control copies and lazy
# loading too) and fuzzing; the micro-benchmarks (offer, barrier, stages, gather), base and new
# alternating; a periodic task's gathers in the yielding form, 40 periods a unit, on the R-MAT
# pairs and on bfs/usa-w and color/ecology, base and new.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vV
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_cuda_runtime test_device_protocol test_semantics_gpu test_shutdown_gpu test_for_each_gpu test_recipes_gpu test_apps_gpu test_examples_gpu; do
  timeout 150 new/$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
COOP_CUDA_CONTROL_COPIES=1 timeout 100 new/test_cuda_runtime > "$w/test_cuda_runtime-copies.log" 2>&1
note test_cuda_runtime-copies $?
CUDA_MODULE_LOADING=LAZY timeout 100 new/test_cuda_runtime > "$w/test_cuda_runtime-lazy.log" 2>&1
note test_cuda_runtime-lazy $?
timeout 120 new/coop fuzz-schedule --backend cuda --seeds 400 --first 151001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -n 2 "$w/fuzz.log" >> "$w/rc.txt"
for part in offer barrier stages gather; do
  for b in base new; do
    timeout 60 $b/coop_bench_gpu --only $part --reps 10 --json "$w/micro-$part-$b.json" > "$w/micro-$part-$b.log" 2>&1
    note micro-$part-$b $?
  done
done
for c in gather-yield-rmat-40 gather-yield-contrast-40; do
  for b in base new; do
    timeout 100 $b/coop bench --config $c.json --out "$w/$c-$b" --unit-timeout 45 > "$w/$c-$b.log" 2>&1
    note $c-$b $?
  done
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf vV.tgz vV && rm -rf vV && echo done
