#!/usr/bin/env bash
# One visit, run from the unpacked kit. The co-location benchmark now reports a stall (no
# progress for --stall-seconds: where it stopped and the scheduler's and the job's state, exit
# status 3) instead of hanging. usage: steps.sh hunt|fixed|full|gemm|final|barrier|verify
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/$1
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
colocate() {  # name timeout args...
  local name=$1 limit=$2; shift 2
  timeout "$limit" ./coop_bench_colocate --only colocate --json "$w/$name.json" "$@" > "$w/$name.log" 2>&1
  note "$name" $?
}
case $1 in
hunt)
  # Visit 5 of results/2026-11-28-restartable stopped in coop-whole-at-request at 10 % beside
  # the restartable GEMM. That form alone, six arrival sequences, then the shipped GEMM.
  colocate at-request-restartable 170 --restartable --forms coop-whole-at-request \
    --loads 0.1,0.1,0.1,0.1,0.3,0.3 --seconds 5 --stall-seconds 15
  colocate at-request-shipped 170 --forms coop-whole-at-request \
    --loads 0.1,0.1,0.1,0.1,0.3,0.3 --seconds 5 --stall-seconds 15
  ;;
fixed)
  # The scheduler's restarts fixed (a queued restart starts with the target it has then): the
  # restartable GEMM beside requests, both whole-device forms, every load; then the GPU tests
  # that restart jobs.
  colocate restartable 200 --restartable --forms coop-whole,coop-whole-at-request \
    --loads 0.1,0.1,0.1,0.3,0.3,0.6,0.6 --seconds 4 --stall-seconds 15
  for t in test_semantics_gpu test_cuda_runtime test_recipes_gpu; do
    timeout 150 ./$t > "$w/$t.log" 2>&1
    note $t $?
    grep -E "^\[  (PASSED|FAILED)|Failure" "$w/$t.log" | head -8 >> "$w/rc.txt"
  done
  ;;
full)
  # The shipped GEMM: every mechanism in one process, then between processes, then the demo
  # (docs/colocation.md is made from the first two).
  colocate colocate 330 --seconds 2
  timeout 200 ./coop_bench_colocate --only processes --seconds 2 --json "$w/processes.json" > "$w/processes.log" 2>&1
  note processes $?
  timeout 60 ./coop demo > "$w/demo.log" 2>&1
  note demo $?
  ;;
gemm)
  # The cooperative GEMM alone read 0.933 of the plain kernel in visits 1-3, 0.979 in every
  # earlier run. The benchmark built from commit 8770d13's source (one GEMM kernel type) and
  # from this tree's (two: --restartable), both compiled here with the same flags, in turn.
  for i in 1 2; do
    for b in one two; do
      timeout 60 ./coop_bench_colocate_$b --only gemm --seconds 2 > "$w/gemm-$b-$i.log" 2>&1
      note "gemm $b $i" $?
    done
  done
  ;;
final)
  # The benchmark with one cooperative GEMM type again (no --restartable): every mechanism in
  # one process (docs/colocation.md is made from this run and visit 3's processes).
  colocate colocate 330 --seconds 2
  ;;
barrier)
  # Visit 7's micro-benchmarks read the barrier at 6 blocks per SM 1.31x grid.sync, against
  # 1.19-1.24x in earlier runs: coop_bench_gpu of commit 4b10fb9 (before the restartable
  # kernels' protocol changes) and of this tree, in turn on one machine.
  for i in 1 2 3; do
    for b in 4b10fb9 new; do
      timeout 60 ./coop_bench_gpu_$b --json "$w/micro-$b-$i.json" > "$w/micro-$b-$i.log" 2>&1
      note "micro $b $i" $?
    done
  done
  ;;
verify)
  # pack_ids one copy per kernel type: the GEMM alone from this tree's benchmark (one GEMM type)
  # and from 79b683d's (two types), both built on this tree's headers, in turn; then the GPU
  # tests (ids by SM: the CUDA runtime's) and the demo.
  for i in 1 2; do
    for b in one two; do
      timeout 60 ./coop_bench_colocate_$b --only gemm --seconds 2 > "$w/gemm-$b-$i.log" 2>&1
      note "gemm $b $i" $?
    done
  done
  for t in test_cuda_runtime test_recipes_gpu test_semantics_gpu test_examples_gpu test_apps_gpu test_shutdown_gpu test_for_each_gpu; do
    timeout 150 ./$t > "$w/$t.log" 2>&1
    note $t $?
    grep -E "^\[  (PASSED|FAILED)|Failure" "$w/$t.log" | head -4 >> "$w/rc.txt"
  done
  timeout 60 ./coop demo > "$w/demo.log" 2>&1
  note demo $?
  ;;
esac
gzip -f "$w"/*.json 2>/dev/null
tar czf "$OUT/$1.tgz" -C "$OUT" "$1" && rm -rf "${w:?}"
exit 0
