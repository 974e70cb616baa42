#!/usr/bin/env bash
# Visit W1, run from the unpacked kit (kit/ = this tree, kit-base/ = the landed tree cdd9cb9's
# coop_bench_gpu): the GPU suites, schedule fuzzing, stress, then the barrier, offer and stages
# micro-benchmarks interleaved with the base binary, then Table 2.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/w1
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
timeout 120 ./coop fuzz-schedule --backend cuda --seeds 10000 --rotate --keep-going > "$w/fuzz-rotate.log" 2>&1
note fuzz-rotate $?
tail -n 2 "$w/fuzz-rotate.log" >> "$w/rc.txt"
timeout 120 ./coop fuzz-schedule --backend cuda --seeds 1000 --first 10001 --keep-going > "$w/fuzz-all.log" 2>&1
note fuzz-all $?
tail -n 2 "$w/fuzz-all.log" >> "$w/rc.txt"
timeout 200 ./coop stress --backend cuda --json-file "$w/stress.json" > "$w/stress.log" 2>&1
note stress $?
tail -n 2 "$w/stress.log" >> "$w/rc.txt"
for round in 1 2; do
  for which in new base; do
    if [ $which = new ]; then b=./coop_bench_gpu; lib=$here/lib; else b=../kit-base/coop_bench_gpu; lib=$here/../kit-base/lib:$here/lib; fi
    for part in barrier offer; do
      LD_LIBRARY_PATH=$lib timeout 60 $b --only $part --reps 10 --json "$w/$which-$part-$round.json" > "$w/$which-$part-$round.log" 2>&1
      note "$which-$part-$round" $?
      grep -E "^barrier  |in a " "$w/$which-$part-$round.log" >> "$w/rc.txt"
    done
  done
done
for which in new base; do
  if [ $which = new ]; then b=./coop_bench_gpu; lib=$here/lib; else b=../kit-base/coop_bench_gpu; lib=$here/../kit-base/lib:$here/lib; fi
  LD_LIBRARY_PATH=$lib timeout 150 $b --only stages --reps 60 --json "$w/$which-stages.json" > "$w/$which-stages.log" 2>&1
  note "$which-stages" $?
done
timeout 110 ./coop bench --config paper --only overhead --out "$w/ov" > "$w/ov.log" 2>&1
note ov $?
tail -n 2 "$w/ov.log" | head -n 1 >> "$w/rc.txt"
cd "$OUT" && tar czf w1.tgz w1 && rm -rf w1 && echo done
