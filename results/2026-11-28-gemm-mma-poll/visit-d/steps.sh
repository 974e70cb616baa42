#!/usr/bin/env bash
# Visit D: the cooperative GEMM polls with ctx.poll_barrier() (one vote for kill and fork, on
# the slice loop's own barrier) instead of a kill vote every `offer_steps` K-steps and a fork
# vote half-way between. The GPU tests that run the GEMM (stop if they fail); the GEMM alone at
# polls every 1, 2, 4, 8 K-steps and between tiles, against visit C's binary (prev) at 4.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib
w=$OUT/d
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
  grep -E "alone:" "$w/$name.log" >> "$w/rc.txt"
}
if [ $ok = 1 ]; then
  gemm gemm-prev-4 ./prev/coop_bench_colocate
  gemm gemm-new-4 ./coop_bench_colocate
  gemm gemm-new-2 ./coop_bench_colocate --offer-steps 2
  gemm gemm-new-1 ./coop_bench_colocate --offer-steps 1
  gemm gemm-new-8 ./coop_bench_colocate --offer-steps 8
  gemm gemm-prev-4b ./prev/coop_bench_colocate
  gemm gemm-new-4b ./coop_bench_colocate
fi
cd "$OUT" && tar czf d.tgz d && rm -rf d && echo done
