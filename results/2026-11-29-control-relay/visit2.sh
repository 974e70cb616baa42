#!/usr/bin/env bash
# The control relay on an H200, second visit (relay_control on thread 0): every GPU suite as it
# is, the same with every job through a relay, the fuzzer and stress with relays, then the
# stages, gather and co-location benchmarks with and without, alternating (one binary,
# COOP_CUDA_CONTROL_RELAY switches it). Everything lands in $OUT/v2.tgz.
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib COOP_TEST_DATA_DIR=$PWD/data
w=$OUT/v2
mkdir -p "$w"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$w/device.txt" 2>&1
run() {  # name limit command...
  local name=$1 limit=$2 t0=$SECONDS
  shift 2
  timeout "$limit" "$@" > "$w/$name.log" 2>&1
  echo "$name rc=$? $((SECONDS - t0))s at $SECONDS s: $(grep -E 'PASSED|FAILED|failures|problem' "$w/$name.log" | tail -1)" >> "$w/rc.txt"
}
skip='-*IdsBySmFillWholeSmsFromTheTop*:*InAGreenContextStaysOnItsSMs*'
for t in test_device_protocol test_semantics_gpu test_for_each_gpu test_shutdown_gpu \
  test_examples_gpu test_recipes_gpu test_cuda_runtime test_apps_gpu; do
  run "$t" 60 "./$t"
  run "relay-$t" 60 env COOP_CUDA_CONTROL_RELAY=1 "./$t" --gtest_filter="$skip"
done
run relay-tests-repeat 90 ./test_cuda_runtime --gtest_filter='*ControlRelay*:*AControlRelay*' --gtest_repeat=5
run relay-fuzz 60 env COOP_CUDA_CONTROL_RELAY=1 ./coop fuzz-schedule --backend cuda --seeds 2000 --rotate --keep-going
run relay-stress 60 env COOP_CUDA_CONTROL_RELAY=1 ./coop stress --backend cuda --cycles 5000 --tasks 1000
for round in 1 2; do
  for relay in 0 1; do
    run "gather-relay$relay-$round" 60 env COOP_CUDA_CONTROL_RELAY=$relay ./coop_bench_gpu --only gather --reps 20 --json "$w/gather-relay$relay-$round.json"
    run "stages-relay$relay-$round" 40 env COOP_CUDA_CONTROL_RELAY=$relay ./coop_bench_gpu --only stages --reps 60 --json "$w/stages-relay$relay-$round.json"
  done
done
for round in 1 2; do
  for relay in 0 1; do
    run "colocate-relay$relay-$round" 60 env COOP_CUDA_CONTROL_RELAY=$relay ./coop_bench_colocate --forms coop-whole,coop-whole-at-request --loads 0.3 --seconds 2 --json "$w/colocate-relay$relay-$round.json"
  done
done
tar czf "$OUT/v2.tgz" -C "$OUT" v2
