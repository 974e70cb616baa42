#!/usr/bin/env bash
# Visit V4, run from build/kit: the landed protocol (workgroup 0's waits as in 2cd2bcb): the
# GPU suites, Table 2 and the barrier and offer micro-benchmarks.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib COOP_TEST_DATA_DIR=$PWD/data
w=$OUT/v4
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_semantics_gpu test_for_each_gpu test_apps_gpu test_cuda_runtime test_device_protocol \
         test_shutdown_gpu test_recipes_gpu test_examples_gpu; do
  timeout 100 ./$t > "$w/$t.log" 2>&1
  note "$t" $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" >> "$w/rc.txt"
done
for part in barrier offer; do
  timeout 60 ./coop_bench_gpu --only $part --reps 10 --json "$w/micro-$part.json" > "$w/micro-$part.log" 2>&1
  note "micro-$part" $?
done
timeout 110 ./coop bench --config paper --only overhead --out "$w/ov" > "$w/ov.log" 2>&1
note ov $?
tail -n 2 "$w/ov.log" | head -n 1 >> "$w/rc.txt"
cd "$OUT" && tar czf v4.tgz v4 && rm -rf v4 && echo done
