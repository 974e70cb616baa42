#!/usr/bin/env bash
# Visit F: the final build (final/: the fresh vote after a chunk over four intervals) against the
# landed one (base/) on one machine: the GPU suites and fuzzing on final, the loop and offer
# micro-benchmarks, Table 2 with the yielding forms, and the R-MAT gathers in the yielding form.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vF
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_for_each_gpu test_apps_gpu test_semantics_gpu test_device_protocol test_cuda_runtime test_shutdown_gpu test_recipes_gpu test_examples_gpu; do
  timeout 150 final/$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 120 final/coop fuzz-schedule --backend cuda --seeds 400 --first 181001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -n 2 "$w/fuzz.log" >> "$w/rc.txt"
for b in base final base final; do
  n=1; [ -f "$w/loop-$b-1.log" ] && n=2
  timeout 60 $b/coop_bench_gpu --only loop --reps 10 --json "$w/loop-$b-$n.json" > "$w/loop-$b-$n.log" 2>&1
  note loop-$b-$n $?
done
for b in final base; do
  timeout 140 $b/coop bench --config overhead-yield.json --out "$w/overhead-$b" > "$w/overhead-$b.log" 2>&1
  note overhead-$b $?
done
for b in final base; do
  timeout 100 $b/coop bench --config gather-yield-rmat-40.json --out "$w/rmat-$b" --unit-timeout 45 > "$w/rmat-$b.log" 2>&1
  note rmat-$b $?
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf vF.tgz vF && rm -rf vF && echo done
