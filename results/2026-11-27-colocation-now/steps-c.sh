#!/usr/bin/env bash
# Visit C, run from the unpacked kits: "new" (kit: the release ring in device memory) and "prev"
# (kit-prev: 4abae0f, the ring in pinned host memory). The GPU suites on new (test_cuda_runtime
# also with the control copies), the task path's stages alternating new/prev, schedule fuzzing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export COOP_TEST_DATA_DIR=$here/data
w=$OUT/c
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
export LD_LIBRARY_PATH=$here/lib
for t in test_cuda_runtime test_semantics_gpu test_shutdown_gpu test_recipes_gpu test_for_each_gpu test_apps_gpu test_examples_gpu; do
  [ -x ./$t ] || continue
  timeout 150 ./$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
COOP_CUDA_CONTROL_COPIES=1 timeout 150 ./test_cuda_runtime > "$w/test_cuda_runtime-copies.log" 2>&1
note test_cuda_runtime-copies $?
grep -E "^\[  (PASSED|FAILED)" "$w/test_cuda_runtime-copies.log" | tail -2 >> "$w/rc.txt"
for round in 1 2 3; do
  for which in new prev; do
    if [ $which = new ]; then d=$here; else d=$here/../kit-prev; fi
    LD_LIBRARY_PATH=$d/lib timeout 60 $d/coop_bench_gpu --only stages --reps 60 --json "$w/$which-stages-$round.json" > "$w/$which-stages-$round.log" 2>&1
    note "$which-stages-$round" $?
  done
done
timeout 100 ./coop fuzz-schedule --backend cuda --seeds 1000 --first 30001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -3 "$w/fuzz.log" >> "$w/rc.txt"
cd "$OUT" && tar czf c.tgz c && rm -rf c && echo done
