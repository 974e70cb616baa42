#!/usr/bin/env bash
# Visit B: the persistent GEMM's core on mma.sync m16n8k8 with shared-space operand loads
# (new) against WMMA's generic fragment loads (prev: visit A's binary). The GPU tests that run
# the GEMM first (stop if they fail); then the GEMM alone, alternating; then the co-location
# benchmark in one process and between processes, and coop demo, on new.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
w=$OUT/b
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
ok=1
for t in test_recipes_gpu test_examples_gpu; do
  timeout 150 ./$t > "$w/$t.log" 2>&1
  rc=$?
  note $t $rc
  grep -E "^\[  (PASSED|FAILED)" "$w/$t.log" | tail -2 >> "$w/rc.txt"
  [ $rc -eq 0 ] || ok=0
done
if [ $ok = 1 ]; then
  for r in 1 2; do
    for b in prev new; do
      bin=./coop_bench_colocate; [ $b = prev ] && bin=./prev/coop_bench_colocate
      timeout 60 $bin --only gemm --seconds 2 --json "$w/gemm-$b-$r.json" > "$w/gemm-$b-$r.log" 2>&1
      note gemm-$b-$r $?
      grep -E "before / after|alone:" "$w/gemm-$b-$r.log" >> "$w/rc.txt"
    done
  done
  timeout 300 ./coop_bench_colocate --seconds 2 --json "$w/colocate.json" > "$w/colocate.log" 2>&1
  note colocate $?
  timeout 150 ./coop_bench_colocate --only processes --seconds 2 --json "$w/processes.json" > "$w/processes.log" 2>&1
  note processes $?
  timeout 60 ./coop demo > "$w/demo.log" 2>&1
  note demo $?
  tail -n 6 "$w/demo.log" >> "$w/rc.txt"
fi
cd "$OUT" && tar czf b.tgz b && rm -rf b && echo done
