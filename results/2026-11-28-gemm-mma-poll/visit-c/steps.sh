#!/usr/bin/env bash
# Visit C: one plain kernel for the baseline and for interrupt-relaunch (a run-time flag, not
# two template instantiations that ptxas scheduled differently), and one resume point in the
# cooperative GEMM (one compiled loop). The GPU tests that run the GEMM (stop if they fail);
# the GEMM alone at offers every 4, 8, 16 K-steps against visit B's binary (prev).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
w=$OUT/c
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
gemm() {
  local name=$1 bin=$2; shift 2
  timeout 60 $bin --only gemm --seconds 2 --json "$w/$name.json" "$@" > "$w/$name.log" 2>&1
  note $name $?
  grep -E "before / after|alone:" "$w/$name.log" >> "$w/rc.txt"
}
if [ $ok = 1 ]; then
  gemm gemm-prev ./prev/coop_bench_colocate
  gemm gemm-new-4 ./coop_bench_colocate
  gemm gemm-new-8 ./coop_bench_colocate --offer-steps 8
  gemm gemm-new-16 ./coop_bench_colocate --offer-steps 16
  gemm gemm-new-4b ./coop_bench_colocate
fi
cd "$OUT" && tar czf c.tgz c && rm -rf c && echo done
