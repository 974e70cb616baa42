#!/usr/bin/env bash
# Visit W: three builds on one machine. base: the landed build (e9fdac8); A: workgroup 0 reads
# the request word from host memory at every offer and relays it (visit V's new); B: the same,
# reading host memory at most every 8 us (the landed form). The GPU suites and fuzzing on B; the
# micro-benchmarks (offer, gather, stages) on all three; Table 2 with the yielding forms on all
# three; the R-MAT gathers in the yielding form on base and B.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/vW
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_cuda_runtime test_device_protocol test_semantics_gpu test_shutdown_gpu test_for_each_gpu test_recipes_gpu test_apps_gpu test_examples_gpu; do
  timeout 150 B/$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
COOP_CUDA_CONTROL_COPIES=1 timeout 100 B/test_cuda_runtime > "$w/test_cuda_runtime-copies.log" 2>&1
note test_cuda_runtime-copies $?
CUDA_MODULE_LOADING=LAZY timeout 100 B/test_cuda_runtime > "$w/test_cuda_runtime-lazy.log" 2>&1
note test_cuda_runtime-lazy $?
timeout 120 B/coop fuzz-schedule --backend cuda --seeds 400 --first 161001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -n 2 "$w/fuzz.log" >> "$w/rc.txt"
for b in base A B; do
  timeout 60 $b/coop_bench_gpu --only offer --reps 10 --json "$w/offer-$b.json" > "$w/offer-$b.log" 2>&1
  note offer-$b $?
  timeout 60 $b/coop_bench_gpu --only gather --reps 10 --json "$w/gather-$b.json" > "$w/gather-$b.log" 2>&1
  note gather-$b $?
  timeout 60 $b/coop_bench_gpu --only stages --reps 60 --json "$w/stages-$b.json" > "$w/stages-$b.log" 2>&1
  note stages-$b $?
done
for b in B base A; do
  timeout 140 $b/coop bench --config overhead-yield.json --out "$w/overhead-$b" > "$w/overhead-$b.log" 2>&1
  note overhead-$b $?
done
for b in base B; do
  timeout 100 $b/coop bench --config gather-yield-rmat-40.json --out "$w/gather-yield-rmat-40-$b" --unit-timeout 45 > "$w/gather-yield-rmat-40-$b.log" 2>&1
  note gather-yield-rmat-40-$b $?
done
find "$w" -name results.json -delete
cd "$OUT" && tar czf vW.tgz vW && rm -rf vW && echo done
