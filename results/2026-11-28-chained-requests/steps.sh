#!/usr/bin/env bash
# One visit, run from the unpacked kit: requests queued behind a running task chained behind its
# end on the device (the patch in this folder), against the same binaries with the chaining off
# (COOP_CUDA_CHAIN_TASKS=0); then the code that ships. usage: steps.sh chain|chain2|final
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
gpu_tests() {  # test binaries...
  for t in "$@"; do
    timeout 150 ./$t > "$w/$t.log" 2>&1
    note $t $?
    grep -E "^\[  (PASSED|FAILED)|Failure" "$w/$t.log" | head -6 >> "$w/rc.txt"
  done
}
case $1 in
chain | chain2)
  # The new GPU test first (a queue of requests beside a job, both launches), then the queued
  # forms and their floor with the chaining on and off, in turn, twice; then the other GPU
  # tests of the task paths.
  gpu_tests test_cuda_runtime
  forms=requests-only,requests-only-queued,coop-whole,coop-whole-at-request,coop-whole-queued,coop-whole-queued-at-request
  for i in 1 2; do
    colocate chain-on-$i 150 --seconds 3 --stall-seconds 20 --forms $forms
    COOP_CUDA_CHAIN_TASKS=0 colocate chain-off-$i 150 --seconds 3 --stall-seconds 20 --forms $forms
  done
  gpu_tests test_recipes_gpu test_semantics_gpu test_shutdown_gpu
  ;;
final)
  # The code that ships (the chaining taken out): the GPU test binaries, every mechanism in one
  # process (docs/colocation.md is made from it, with the requests-only-queued floor), the demo.
  gpu_tests test_cuda_runtime test_recipes_gpu test_semantics_gpu test_shutdown_gpu test_examples_gpu test_for_each_gpu test_apps_gpu
  colocate colocate 300 --seconds 2
  timeout 60 ./coop demo > "$w/demo.log" 2>&1
  note demo $?
  # The same with each request's kernels as one CUDA graph (green contexts cannot take it).
  colocate colocate-graph 240 --seconds 2 --request-graph
  ;;
esac
gzip -f "$w"/*.json 2>/dev/null
tar czf "$OUT/$1.tgz" -C "$OUT" "$1" && rm -rf "${w:?}"
exit 0
