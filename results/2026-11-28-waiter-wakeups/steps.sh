#!/usr/bin/env bash
# One visit, run from the unpacked kit: the queued co-location forms at 60 % load with each
# waiting request woken only when it is granted or served next (coop_bench_colocate) against the
# build before, where every dispatch woke every waiting request's thread
# (coop_bench_colocate-prev, 1e96df8), in turn, twice; then the GPU tests of the task paths.
# usage: steps.sh wake
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/$1
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
colocate() {  # binary name args...
  local bin=$1 name=$2; shift 2
  timeout 150 ./$bin --only colocate --json "$w/$name.json" "$@" > "$w/$name.log" 2>&1
  note "$name" $?
}
forms=requests-only-queued,coop-whole,coop-whole-at-request,coop-whole-queued,coop-whole-queued-at-request
case $1 in
wake)
  for i in 1 2; do
    colocate coop_bench_colocate new-$i --seconds 3 --stall-seconds 20 --forms $forms --loads 0.6,0.6,0.6
    colocate coop_bench_colocate-prev prev-$i --seconds 3 --stall-seconds 20 --forms $forms --loads 0.6,0.6,0.6
  done
  for t in test_cuda_runtime test_recipes_gpu test_semantics_gpu test_shutdown_gpu; do
    timeout 150 ./$t > "$w/$t.log" 2>&1
    note $t $?
    grep -E "^\[  (PASSED|FAILED)|Failure" "$w/$t.log" | head -6 >> "$w/rc.txt"
  done
  ;;
esac
gzip -f "$w"/*.json 2>/dev/null
tar czf "$OUT/$1.tgz" -C "$OUT" "$1" && rm -rf "${w:?}"
exit 0
