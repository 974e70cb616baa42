#!/usr/bin/env bash
# Visit E, from the unpacked kit (this tree: the GEMM's slice loop only polls, acts outside it,
# and feeds the tensor cores FP32 bits, no rounding to TF32); prev/ = visit D's colocate
# binary (poll_barrier, rounding, fork in the loop). The GPU suites and schedule fuzzing; the
# GEMM alone, alternating; then the co-location benchmark in one process and between
# processes, and coop demo.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/e
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_cuda_runtime test_device_protocol test_recipes_gpu test_examples_gpu test_semantics_gpu test_apps_gpu test_for_each_gpu; do
  [ -x ./$t ] || continue
  timeout 150 ./$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 80 ./coop fuzz-schedule --backend cuda --seeds 500 --first 70001 --keep-going > "$w/fuzz.log" 2>&1
note fuzz $?
tail -n 1 "$w/fuzz.log" >> "$w/rc.txt"
for r in 1 2; do
  for b in prev new; do
    bin=./coop_bench_colocate; [ $b = prev ] && bin=./prev/coop_bench_colocate
    timeout 60 $bin --only gemm --seconds 2 --json "$w/gemm-$b-$r.json" > "$w/gemm-$b-$r.log" 2>&1
    note gemm-$b-$r $?
    grep -E "alone:" "$w/gemm-$b-$r.log" >> "$w/rc.txt"
  done
done
timeout 300 ./coop_bench_colocate --seconds 2 --json "$w/colocate.json" > "$w/colocate.log" 2>&1
note colocate $?
timeout 150 ./coop_bench_colocate --only processes --seconds 2 --json "$w/processes.json" > "$w/processes.log" 2>&1
note processes $?
timeout 60 ./coop demo > "$w/demo.log" 2>&1
note demo $?
tail -n 6 "$w/demo.log" >> "$w/rc.txt"
cd "$OUT" && tar czf e.tgz e && rm -rf e && echo done
