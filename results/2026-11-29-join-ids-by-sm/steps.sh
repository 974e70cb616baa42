#!/usr/bin/env bash
# One visit, run from the unpacked kit (scripts/device_kit.sh, with this file copied in):
# join grids numbered by SM. usage: steps.sh verify|measure|recheck|loads
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
export LD_LIBRARY_PATH=$here/lib COOP_TEST_DATA_DIR=$here/data
w=$OUT/$1
mkdir -p "$w"
{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.sm,clocks.max.sm --format=csv; date -u; } > "$w/device.txt"
note() { echo "$1 rc $2 at $SECONDS s" >> "$w/rc.txt"; }
run() {  # name timeout command...
  local name=$1 limit=$2; shift 2
  timeout "$limit" "$@" > "$w/$name.log" 2>&1
  local rc=$?
  note "$name" $rc
  grep -E "^\[  (PASSED|FAILED)|Failure|runs .* failures" "$w/$name.log" | head -8 >> "$w/rc.txt"
}
colocate() {  # name timeout args...
  local name=$1 limit=$2; shift 2
  run "$name" "$limit" ./coop_bench_colocate --only colocate --json "$w/$name.json" "$@"
}
case $1 in
verify)
  # The new tests, then the same with join grids in launch order (they must fail there: the
  # task's blocks find no whole SM), then every GPU suite and the adversarial schedules with
  # ids by SM forced on every job, at the default wait and at 1 ns (most blocks late).
  run ids-by-sm 120 ./test_cuda_runtime --gtest_filter='IdsBySm*'
  run ids-by-sm-join-in-order 120 env COOP_CUDA_JOIN_PACK_WAIT_NS=0 ./test_cuda_runtime \
    --gtest_filter='IdsBySm.JoinGrids*'
  for t in test_cuda_runtime test_semantics_gpu test_shutdown_gpu test_recipes_gpu \
    test_examples_gpu test_for_each_gpu test_apps_gpu test_device_protocol test_launch_odr; do
    run "$t" 120 ./$t
  done
  run fuzz-ids-by-sm 100 env COOP_CUDA_IDS_BY_SM=1 ./coop fuzz-schedule --backend cuda \
    --seeds 1000 --first 110001 --keep-going
  run fuzz-ids-by-sm-wait-1ns 100 env COOP_CUDA_IDS_BY_SM=1 COOP_CUDA_JOIN_PACK_WAIT_NS=1 \
    ./coop fuzz-schedule --backend cuda --seeds 1000 --first 120001 --keep-going
  run apps-ids-by-sm 60 env COOP_CUDA_IDS_BY_SM=1 COOP_CUDA_JOIN_PACK_WAIT_NS=1 ./test_apps_gpu
  ;;
measure)
  # The persistent GEMM beside the request stream at 30 %: half-device and whole-device
  # requests, and the two in turn, with join grids by SM and (a second process) in launch order.
  colocate packed 200 --forms coop-half,coop-whole,coop-mixed --loads 0.3,0.3 --seconds 4 \
    --stall-seconds 20
  COOP_CUDA_JOIN_PACK_WAIT_NS=0 colocate join-in-order 150 --forms coop-mixed --loads 0.3,0.3 \
    --seconds 4 --stall-seconds 20
  ;;
loads)
  # measure's forms at 10 and 60 % load.
  colocate packed-loads 220 --forms coop-whole,coop-mixed --loads 0.1,0.6 --seconds 4 \
    --stall-seconds 20
  COOP_CUDA_JOIN_PACK_WAIT_NS=0 colocate join-in-order-loads 150 --forms coop-mixed \
    --loads 0.1,0.6 --seconds 4 --stall-seconds 20
  ;;
recheck)
  # The tests again, with the job ended when the task cannot run (so that the launch-order run
  # fails instead of hanging), 20 times over; then in launch order, which must fail.
  run ids-by-sm-repeat 120 ./test_cuda_runtime --gtest_filter='IdsBySm*' --gtest_repeat=20
  run ids-by-sm-join-in-order 60 env COOP_CUDA_JOIN_PACK_WAIT_NS=0 ./test_cuda_runtime \
    --gtest_filter='IdsBySm.JoinGrids*'
  run test_cuda_runtime 120 ./test_cuda_runtime
  run fuzz-rotate-ids-by-sm-wait-1ns 100 env COOP_CUDA_IDS_BY_SM=1 COOP_CUDA_JOIN_PACK_WAIT_NS=1 \
    ./coop fuzz-schedule --backend cuda --seeds 10000 --first 130001 --rotate --keep-going
  ;;
esac
gzip -f "$w"/*.json 2>/dev/null
