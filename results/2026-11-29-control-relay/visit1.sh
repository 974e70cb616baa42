#!/usr/bin/env bash
# The control relay on an H200, one visit: every GPU suite as it is (no relay), the relay's
# tests, the suites and the fuzzer with every job through a relay, then benchmarks with and
# without, alternating (one binary, COOP_CUDA_CONTROL_RELAY switches it), and the barrier and
# idle offer against the committed benchmark (bench_base).
set -u
part=${1:-a}
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
export COOP_TEST_DATA_DIR=$PWD/data
w=$OUT/v1$part
mkdir -p "$w"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$w/device.txt" 2>&1
run() {  # name limit command...
  local name=$1 limit=$2 t0=$SECONDS
  shift 2
  timeout "$limit" "$@" > "$w/$name.log" 2>&1
  echo "$name rc=$? $((SECONDS - t0))s at $SECONDS s: $(grep -E 'PASSED|FAILED|failures|problem' "$w/$name.log" | tail -1)" >> "$w/rc.txt"
}
if [ "$part" = a ]; then
for t in test_device_protocol test_semantics_gpu test_for_each_gpu test_shutdown_gpu \
  test_examples_gpu test_recipes_gpu test_cuda_runtime test_interruptible_gpu test_apps_gpu; do
  run "$t" 120 "./$t"
done
run relay-tests 120 ./test_cuda_runtime --gtest_filter='*ControlRelay*:*AControlRelay*'
for t in test_cuda_runtime test_semantics_gpu test_shutdown_gpu test_apps_gpu test_examples_gpu; do
  run "relay-$t" 150 env COOP_CUDA_CONTROL_RELAY=1 "./$t" --gtest_filter='-*IdsBySmFillWholeSmsFromTheTop*'
done
run relay-fuzz 120 env COOP_CUDA_CONTROL_RELAY=1 ./coop fuzz-schedule --backend cuda --seeds 2000 --rotate --keep-going
run fuzz 120 ./coop fuzz-schedule --backend cuda --seeds 1000 --keep-going
run relay-stress 120 env COOP_CUDA_CONTROL_RELAY=1 ./coop stress --backend cuda --cycles 5000 --tasks 1000
for round in 1 2 3; do
  for relay in 0 1; do
    run "stages-relay$relay-$round" 70 env COOP_CUDA_CONTROL_RELAY=$relay ./coop_bench_gpu --only stages --reps 60 --json "$w/stages-relay$relay-$round.json"
  done
done
fi
if [ "$part" = b ]; then
for round in 1 2; do
  for relay in 0 1; do
    run "gather-relay$relay-$round" 70 env COOP_CUDA_CONTROL_RELAY=$relay ./coop_bench_gpu --only gather --reps 60 --json "$w/gather-relay$relay-$round.json"
  done
done
for round in 1 2; do
  for b in bench_base coop_bench_gpu; do
    for part in barrier offer; do
      run "$part-$b-$round" 60 ./$b --only $part --reps 10 --json "$w/$part-$b-$round.json"
    done
  done
done
for relay in 0 1 0 1; do
  run "colocate-relay$relay-$SECONDS" 120 env COOP_CUDA_CONTROL_RELAY=$relay ./coop_bench_colocate --forms coop-whole,coop-whole-at-request --loads 0.3 --seconds 2 --json "$w/colocate-relay$relay-$SECONDS.json"
done
fi
