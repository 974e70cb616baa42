#!/usr/bin/env bash
# Visit 3: the persistent GEMM's tile as one loop with the offers inside it ("new2": new2/)
# against the out-of-line protocol alone ("new1": this kit), the GEMM alone alternating; the
# recipes suite on new2; new2's full coop_bench_colocate run (every load) and the run between
# processes, which docs/colocation.md's GEMM part is made from.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/v3
mkdir -p "$w"
nvidia-smi -L > "$w/device.txt"
nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv >> "$w/device.txt"
date -u >> "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
timeout 60 new2/test_recipes_gpu > "$w/test_recipes_gpu.log" 2>&1
note test_recipes_gpu $?
grep -E "^\[  (PASSED|FAILED)" "$w/test_recipes_gpu.log" | tail -2 >> "$w/rc.txt"
for r in 1 2; do
  for b in new1 new2; do
    d=.; [ $b = new2 ] && d=new2
    timeout 60 $d/coop_bench_colocate --only gemm --seconds 2 --json "$w/gemm-$b-$r.json" > "$w/gemm-$b-$r.log" 2>&1
    note gemm-$b-$r $?
  done
done
timeout 240 new2/coop_bench_colocate --seconds 2 --json "$w/colocate.json" > "$w/colocate.log" 2>&1
note colocate $?
timeout $((580 - SECONDS)) new2/coop_bench_colocate --only processes --seconds 2 --json "$w/processes.json" > "$w/processes.log" 2>&1
note processes $?
cd "$OUT" && tar czf v3.tgz v3 && rm -rf v3 && echo done
