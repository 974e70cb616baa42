#!/usr/bin/env bash
# One visit, run from the unpacked kit: requests submitted as they arrive (the -queued forms of
# coop_bench_colocate) beside those served one at a time. usage: steps.sh queued|head|gate|full|graph|one-early
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
# The whole-device forms served one at a time and submitted at arrival, after the gather and at
# the request, every load, twice (the order of the forms is the same in both).
queued_pair() {  # name prefix
  for i in 1 2; do
    colocate "$1-$i" 200 --seconds 3 --stall-seconds 20 \
      --forms requests-only,coop-whole,coop-whole-at-request,coop-whole-queued,coop-whole-queued-at-request
  done
}
gpu_tests() {  # test binaries...
  for t in "$@"; do
    timeout 150 ./$t > "$w/$t.log" 2>&1
    note $t $?
    grep -E "^\[  (PASSED|FAILED)|Failure" "$w/$t.log" | head -6 >> "$w/rc.txt"
  done
}
case $1 in
queued)
  queued_pair queued
  ;;
head)
  # After the scheduler's first change: only the waiter served next spins (once), the others
  # sleep (but run_requested still spun 2 ms for every task).
  queued_pair head
  gpu_tests test_cuda_runtime test_recipes_gpu test_semantics_gpu
  ;;
gate)
  # Both changes: a task is released by the jobs only when served alone, and a task's thread
  # spins only while it is served next. Then the GPU tests of the task paths and the demo.
  queued_pair gate
  gpu_tests test_cuda_runtime test_recipes_gpu test_semantics_gpu test_shutdown_gpu test_examples_gpu test_for_each_gpu test_apps_gpu
  timeout 60 ./coop demo > "$w/demo.log" 2>&1
  note demo $?
  ;;
graph)
  # Is the request's ~8 % longer span beside the job the host's launches between its kernels?
  # Each request's kernels launched one by one and as one CUDA graph (--request-graph, the
  # request alone too), in turn, twice.
  forms=requests-only,interrupt-relaunch,coop-whole,coop-whole-at-request,coop-whole-queued-at-request
  for i in 1 2; do
    colocate kernels-$i 200 --seconds 3 --stall-seconds 20 --forms $forms
    colocate graph-$i 200 --seconds 3 --stall-seconds 20 --forms $forms --request-graph
  done
  ;;
one-early)
  # Visit 6 stopped twice in coop-whole-queued-at-request at 60 % (once a 20 s stall, once
  # 48 ms p50). Now at most one task of the process is enqueued at its request at a time: that
  # form at 60 %, four windows, twice; then the GPU tests of the task paths.
  for i in 1 2; do
    colocate one-early-$i 120 --seconds 3 --stall-seconds 20 \
      --forms coop-whole-at-request,coop-whole-queued-at-request --loads 0.6,0.6
  done
  gpu_tests test_cuda_runtime test_recipes_gpu test_semantics_gpu
  ;;
full)
  # Every mechanism in one process (docs/colocation.md is made from it), then the demo.
  colocate colocate 330 --seconds 2
  timeout 60 ./coop demo > "$w/demo.log" 2>&1
  note demo $?
  ;;
esac
gzip -f "$w"/*.json 2>/dev/null
tar czf "$OUT/$1.tgz" -C "$OUT" "$1" && rm -rf "${w:?}"
exit 0
