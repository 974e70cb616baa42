#!/usr/bin/env bash
# Visit A, run from the unpacked kit (HEAD 4abae0f): the GPU suites, the release-gate probe,
# coop_bench_colocate in one process and between processes (docs/colocation.md's GEMM part),
# the task path's stages, the barrier and idle offer micro-benchmarks.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/a
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
for t in test_semantics_gpu test_for_each_gpu test_apps_gpu test_cuda_runtime test_recipes_gpu test_device_protocol; do
  [ -x ./$t ] || continue
  timeout 120 ./$t > "$w/$t.log" 2>&1
  note $t $?
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
done
timeout 60 ./gate_probe > "$w/gate_probe.log" 2>&1
note gate_probe $?
timeout 60 ./coop_bench_gpu --only stages --reps 60 --json "$w/stages.json" > "$w/stages.log" 2>&1
note stages $?
timeout 60 ./coop_bench_gpu --only barrier --reps 10 --json "$w/barrier.json" > "$w/barrier.log" 2>&1
note barrier $?
timeout 60 ./coop_bench_gpu --only offer --json "$w/offer.json" > "$w/offer.log" 2>&1
note offer $?
timeout 300 ./coop_bench_colocate --seconds 2 --json "$w/colocate.json" > "$w/colocate.log" 2>&1
note colocate $?
cd "$OUT" && tar czf a.tgz a && rm -rf a && echo done
